"""``lsr-eval evaluate`` as ranx's ``compare`` and trec_eval: trec_eval measure names, ``--format trec_eval``
(``-q``) checked against pytrec_eval on the published DL19 runs, ``--baseline`` significance equal to the
benchmark's (:func:`lsr_eval.significance.compare`), suggestions for unknown measure names."""

from __future__ import annotations

import json

import pytest
from conftest import shared_path

from lsr_eval.cli import main
from lsr_eval.data.trec_files import read_qrels
from lsr_eval.evaluation import evaluate
from lsr_eval.evaluation.measures import parse_measure, suggest
from lsr_eval.runs.trec import read_run

pytrec_eval = pytest.importorskip("pytrec_eval")

RUNS = ("bm25-flat", "splade-pp-ed", "tas-b")


def _run(name: str) -> str:
    return str(shared_path("msmarco-passage", "runs", f"dl19.{name}.top100.trec"))


@pytest.fixture
def qrels_file() -> str:
    return str(shared_path("msmarco-passage", "qrels.dl19-passage.txt"))


@pytest.mark.parametrize("trec, ours", [
    ("ndcg_cut_10", "nDCG@10"), ("ndcg_cut.10", "nDCG@10"), ("recall_1000", "R@1000"), ("P_10", "P@10"),
    ("map", "MAP"), ("recip_rank", "RR"), ("map_cut_100", "MAP@100"), ("set_recall", "R"), ("ndcg", "nDCG"),
    ("recall_1000(rel=2)", "R@1000(rel=2)"),
])
def test_trec_eval_names_map_to_ours(trec, ours):
    assert parse_measure(trec).name == ours
    assert parse_measure(ours).trec_eval_name == trec.replace(".", "_").split("(")[0]


def test_unknown_measures_suggest_the_closest_names(capsys, qrels_file):
    assert suggest("nDGC@10")[0] == "nDCG@10" and suggest("ndcg_cutt_10")[0] == "ndcg_cut_10"
    assert suggest("recal_1000")[0] == "recall_1000"
    assert main(["evaluate", qrels_file, _run("bm25-flat"), "--measures", "nDGC@10"]) == 2
    err = capsys.readouterr().err
    assert "unknown measure 'nDGC@10' (did you mean nDCG@10" in err and "Traceback" not in err


def _pytrec(qrels, run, measure: str, level: int) -> dict[str, float]:
    return {q: v[measure.replace(".", "_")] for q, v in
            pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=level).evaluate(run).items()}


def test_trec_eval_format_matches_pytrec_eval_per_query_and_all(capsys, qrels_file):
    qrels = read_qrels(qrels_file)
    assert main(["evaluate", qrels_file, _run("splade-pp-ed"), "--format", "trec_eval", "-q",
                 "--measures", "ndcg_cut_10", "map(rel=2)", "recall_1000(rel=2)", "P_10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == ["runid".ljust(22), "all", "dl19.splade-pp-ed.top100.trec"]
    parsed = [line.split("\t") for line in lines[1:]]
    assert all(len(p) == 3 and len(p[0]) == 22 for p in parsed)  # trec_eval's "%-22s\t%s\t%6.4f"
    got = {(name.strip(), qid): float(value) for name, qid, value in parsed}
    run = read_run(_run("splade-pp-ed"))
    reference = {"ndcg_cut_10": _pytrec(qrels, run, "ndcg_cut.10", 1), "map": _pytrec(qrels, run, "map", 2),
                 "recall_1000": _pytrec(qrels, run, "recall.1000", 2), "P_10": _pytrec(qrels, run, "P.10", 1)}
    qids = sorted(qrels)
    assert [p[1] for p in parsed] == [q for q in qids for _ in range(4)] + ["all"] * 4  # trec_eval's query order
    for name, per_query in reference.items():
        for qid in qids:
            assert got[(name, qid)] == pytest.approx(per_query[qid], abs=5e-5), (name, qid)
        assert got[(name, "all")] == pytest.approx(sum(per_query.values()) / len(qrels), abs=5e-5)
    assert got[("ndcg_cut_10", "all")] == 0.7308  # the published figure


def test_baseline_adds_the_benchmarks_significance(capsys, qrels_file):
    from lsr_eval.significance.compare import compare

    measures = ["nDCG@10", "MAP(rel=2)"]
    assert main(["evaluate", qrels_file, _run("splade-pp-ed"), _run("tas-b"), "--baseline", _run("bm25-flat"),
                 "--measures", *measures, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    sig = out["significance"]
    assert sig["baseline"] == "dl19.bm25-flat.top100.trec" and sig["comparisons"] == 4 and sig["test"] == "t-test"
    assert [r["run"] for r in out["runs"]] == [_run("bm25-flat"), _run("splade-pp-ed"), _run("tas-b")]
    qrels = read_qrels(qrels_file)
    per_query = {f"dl19.{n}.top100.trec": evaluate(qrels, read_run(_run(n)), measures, per_query=True)
                 for n in RUNS}
    expected = compare(per_query, "dl19.bm25-flat.top100.trec", test="t-test", alpha=0.05)
    got = {(r["system"], r["measure"]): r for r in sig["rows"]}
    for row in expected.to_dict("records"):
        mine = got[(row["system"], row["measure"])]
        if row["system"] != "dl19.bm25-flat.top100.trec":
            assert mine["p_corrected"] == pytest.approx(row["p_corrected"], rel=1e-12)
            assert mine["significant"] == row["significant"]
    # independently: scipy's paired t-test, times the 4 comparisons (2 runs x 2 measures)
    from scipy import stats

    base = per_query["dl19.bm25-flat.top100.trec"]["nDCG@10"]
    splade = per_query["dl19.splade-pp-ed.top100.trec"]["nDCG@10"]
    p = stats.ttest_rel([splade[q] for q in qrels], [base[q] for q in qrels]).pvalue
    assert sig["cells"]["dl19.splade-pp-ed.top100.trec"]["nDCG@10"]["p_corrected"] == pytest.approx(min(1, 4 * p))
    assert sig["cells"]["dl19.splade-pp-ed.top100.trec"]["nDCG@10"]["marker"] == "†"


def test_baseline_table_shows_markers_and_p_values(capsys, qrels_file):
    assert main(["evaluate", qrels_file, _run("splade-pp-ed"), "--baseline", _run("bm25-flat"),
                 "--measures", "nDCG@10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["run", "nDCG@10", "p(nDCG@10)"]
    assert lines[2].split()[:3] == ["dl19.bm25-flat.top100.trec", "0.5058", "baseline"]
    assert lines[3].split()[1] == "0.7308†" and float(lines[3].split()[2]) < 0.05
    assert "t-test" in lines[-1] and "Bonferroni over 1 comparisons" in lines[-1]


@pytest.mark.parametrize("correction, adjust", [("holm", "holm"), ("bh", "benjamini_hochberg")])
def test_baseline_with_holm_or_bh_corrects_the_raw_p_values(capsys, qrels_file, correction, adjust):
    """``--correction``: the raw p-values of the default test, adjusted by Holm or Benjamini-Hochberg over the 4
    comparisons, and the legend names the correction and what it controls."""
    from lsr_eval import significance

    argv = ["evaluate", qrels_file, _run("splade-pp-ed"), _run("tas-b"), "--baseline", _run("bm25-flat"),
            "--measures", "nDCG@10", "MAP(rel=2)", "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)["significance"]
    assert main([*argv, "--correction", correction]) == 0
    sig = json.loads(capsys.readouterr().out)["significance"]
    assert sig["correction"] == correction and sig["comparisons"] == 4
    tested = [r for r in plain["rows"] if r["system"] != plain["baseline"]]
    expected = getattr(significance, adjust)([r["p_value"] for r in tested])
    got = [r["p_corrected"] for r in sig["rows"] if r["system"] != sig["baseline"]]
    assert got == pytest.approx(expected, rel=1e-12)
    assert ("false discovery rate" if correction == "bh" else "family-wise error rate") in sig["legend"]


def test_baseline_refusals(capsys, qrels_file):
    assert main(["evaluate", qrels_file, _run("tas-b"), "--baseline", _run("tas-b")]) == 2
    assert "a baseline needs at least one other run" in capsys.readouterr().err
    assert main(["evaluate", qrels_file, _run("tas-b"), "--baseline", _run("bm25-flat"), "--test", "wilcoxon"]) == 2
    assert "expected one of t-test, randomisation" in capsys.readouterr().err
    assert main(["evaluate", qrels_file, _run("tas-b"), "--baseline", _run("bm25-flat"), "--format",
                 "trec_eval"]) == 2
    assert "--format trec_eval prints trec_eval's measures only" in capsys.readouterr().err


def test_the_command_line_prints_what_python_returns(capsys, qrels_file):
    """One implementation: ``lsr-eval evaluate --format json`` and :func:`lsr_eval.run_evaluation` (and its table,
    :func:`lsr_eval.evaluate`) give the same means, counts and corrected p-values for the same inputs."""
    import lsr_eval

    runs = [_run(n) for n in RUNS]
    assert main(["evaluate", qrels_file, *runs[1:], "--baseline", runs[0], "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ev = lsr_eval.run_evaluation(qrels_file, runs, baseline=f"dl19.{RUNS[0]}.top100.trec")
    table = lsr_eval.evaluate(qrels_file, runs, baseline=f"dl19.{RUNS[0]}.top100.trec")
    for got, r in zip(printed["runs"], ev.runs):
        assert got["measures"] == r.means == table.loc[r.name, ev.names].to_dict()
        assert got["counts"]["judged_without_results"] == r.counts.judged_without_results
    assert printed["significance"]["rows"] == ev.significance()["rows"]
    for rec in ev.significance()["rows"]:
        if rec["system"] != ev.baseline:
            assert table.loc[rec["system"], f"{rec['measure']}_p"] == rec["p_corrected"]


def test_one_measure_as_a_string_and_a_baseline_file_given_twice(capsys, qrels_file):
    import lsr_eval

    assert list(lsr_eval.evaluate(qrels_file, [_run("tas-b")], "nDCG@10").columns) == ["nDCG@10"]
    assert main(["evaluate", qrels_file, _run("tas-b"), _run("tas-b"), _run("bm25-flat"),
                 "--baseline", _run("tas-b"), "--measures", "nDCG@10"]) == 0
    out = capsys.readouterr().out
    assert "(1)" in out and "(2)" in out and "baseline" in out   # both kept, the first is the baseline
