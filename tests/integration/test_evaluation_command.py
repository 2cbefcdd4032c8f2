"""``lsr-eval evaluate``: table and JSON output, query counts, errors."""

from __future__ import annotations

import json

import pytest

from lsr_eval.cli import main
from lsr_eval.evaluation import DEFAULT_MEASURES, evaluate
from lsr_eval.runs.trec import write_run

QRELS = {"q1": {"a": 2, "b": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
RUN_A = {"q1": {"a": 3.0, "x": 2.0, "b": 1.0}, "q2": {"y": 2.0, "c": 1.0}, "q9": {"a": 1.0}}  # q3: no results
RUN_B = {"q1": {"b": 3.0, "a": 2.0}, "q2": {"c": 5.0}, "q3": {"z": 1.0, "d": 1.0}}  # z, d tie: z first


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, judged in QRELS.items() for d, g in judged.items()))
    write_run(RUN_A, tmp_path / "a.trec")
    write_run(RUN_B, tmp_path / "b.trec")
    return qrels, tmp_path / "a.trec", tmp_path / "b.trec"


def test_json_output_matches_evaluate(files, capsys):
    qrels, a, b = files
    assert main(["evaluate", str(qrels), str(a), str(b), "--json", "--per-query"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["measures"] == list(DEFAULT_MEASURES) and out["queries_judged"] == 3
    first, second = out["runs"]
    assert first["run"] == str(a) and second["run"] == str(b)
    assert first["measures"] == pytest.approx(evaluate(QRELS, RUN_A), abs=1e-15)
    assert second["measures"] == pytest.approx(evaluate(QRELS, RUN_B), abs=1e-15)
    # run A: q1 has a at rank 1 -> RR 1; q2 has c at rank 2 -> RR 1/2; q3 none -> 0; q9 ignored
    assert first["measures"]["RR@10"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    assert first["per_query"]["RR@10"] == pytest.approx({"q1": 1.0, "q2": 0.5, "q3": 0.0})
    # run B: q3's tie puts z (not relevant) before d -> RR 1/2
    assert second["per_query"]["RR@10"] == pytest.approx({"q1": 1.0, "q2": 1.0, "q3": 0.5})
    assert first["counts"] == {"judged": 3, "in_run": 3, "judged_without_results": 1, "run_not_judged": 1}
    assert second["counts"] == {"judged": 3, "in_run": 3, "judged_without_results": 0, "run_not_judged": 0}


def test_table_output(files, capsys):
    qrels, a, b = files
    assert main(["evaluate", str(qrels), str(a), str(b), "--measures", "RR@10", "R@1(rel=2)", "P@2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "3 judged queries" in lines[0]
    assert lines[1].split() == ["run", "RR@10", "R@1(rel=2)", "P@2", "queries", "no", "results", "not", "judged"]
    # run A: RR (1 + 1/2 + 0)/3; R@1(rel=2): q1's only grade-2 doc a at rank 1 -> (1 + 0 + 0)/3; P@2: (1/2 + 1/2)/3
    assert lines[2].split() == ["a.trec", "0.5000", "0.3333", "0.3333", "3", "1", "1"]
    # run B: RR (1 + 1 + 1/2)/3; R@1(rel=2): a at rank 2 -> 0; P@2: (2/2 + 1/2 + 1/2)/3
    assert lines[3].split() == ["b.trec", "0.8333", "0.0000", "0.6667", "3", "0", "0"]


def test_per_query_table(files, capsys):
    qrels, a, _ = files
    assert main(["evaluate", str(qrels), str(a), "--measures", "RR@10", "--per-query"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("per query:"):].splitlines()
    assert [line.split() for line in block[1:]] == [["qid", "RR@10"], ["q1", "1.0000"], ["q2", "0.5000"],
                                                    ["q3", "0.0000"]]


@pytest.mark.parametrize("extra, message", [
    (["--measures", "BLEU"], "unknown measure 'BLEU'"),
    (["--split", "test"], "--split applies to dataset names"),
])
def test_errors_are_one_line(files, capsys, extra, message):
    qrels, a, _ = files
    assert main(["evaluate", str(qrels), str(a), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_run_file_names_line(files, capsys, tmp_path):
    qrels, _, _ = files
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 x t\n")
    assert main(["evaluate", str(qrels), str(bad)]) == 2
    assert "bad.trec:2: score 'x' is not a number" in capsys.readouterr().err
