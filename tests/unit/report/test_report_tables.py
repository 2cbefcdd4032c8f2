"""Report loading and tables, checked against the committed synthetic results in tests/data/report (written by
tests/data/report/make_data.py; its docstring gives the hand-checkable numbers)."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.report import NumberFormat, combine, load_benchmark, load_results, load_training_run
from lsr_eval.report.best_k import best_k, head_norm, head_norm_points
from lsr_eval.report.formatting import significant
from lsr_eval.report.linking import link_training
from lsr_eval.report.pareto import pareto_front
from lsr_eval.report.summary import benchmarks_table, training_table
from lsr_eval.report.table import latex_escape
from lsr_eval.report.tables import benchmark_table, benchmark_tables, efficiency_table, rescaling_table

DATA = REPO / "tests" / "data" / "report"
BEIR = ("trec-covid", "nfcorpus", "nq", "hotpotqa", "fiqa", "arguana", "webis-touche2020", "quora", "dbpedia-entity",
        "scidocs", "fever", "climate-fever", "scifact")
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
ETTIN = "jhu-clsp/ettin-encoder-17m"


def parse_markdown(text: str) -> list[dict[str, str]]:
    """The rows of the first pipe table in ``text`` as dicts keyed by header (an independent reader)."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    split = lambda line: [c.strip().removeprefix("**").removesuffix("**")  # noqa: E731  (bold: best cells)
                          for c in line.strip()[1:-1].split(" | ")]
    header = split(lines[0])
    assert set(lines[1]) <= set("|:-"), lines[1]
    return [dict(zip(header, split(line))) for line in lines[2:]]


def csv_rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return {(r["dataset"], r["system"]): r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def results():
    return load_results(DATA)


@pytest.fixture(scope="module")
def frame(results):
    return link_training(results.combined(), results.training)


# ---- loading ----

def test_load_results_finds_benchmarks_and_runs(results):
    assert sorted(results.benchmarks) == ["fusion", "rescaling"]
    assert sorted(results.training) == ["ettin-k1", "ettin-k16", "minilm-k1", "minilm-k16", "minilm-k4"]
    resc = results.benchmarks["rescaling"]
    assert resc.source.name == "table.json"
    # 6 systems x (2 in-domain + 13 BEIR) rows, minus the absent (nq, splade-minilm-k16)
    assert len(resc.table) == 6 * 15 - 1
    assert results.benchmarks["fusion"].source.name == "table.csv"


def test_json_and_csv_read_alike():
    a = load_benchmark(DATA / "rescaling").table
    b = pd.DataFrame(csv.DictReader(open(DATA / "rescaling" / "table.csv", encoding="utf-8")))
    from lsr_eval.report.loading import normalise_table

    b = normalise_table(b.to_dict(orient="records"), "table.csv", "line")
    pd.testing.assert_frame_equal(a[sorted(a.columns)], b[sorted(b.columns)], check_dtype=False)
    assert a.loc[(a.dataset == "msmarco-dev") & (a.system == "bm25"), "model"].item() == ""
    assert math.isnan(a.loc[(a.dataset == "msmarco-dev") & (a.system == "bm25"), "k"].item())


def test_training_manifest_shapes_and_resumed_log(results):
    minilm, ettin = results.training["minilm-k4"], results.training["ettin-k16"]
    assert (minilm.backbone, minilm.k) == (MINILM, 4.0)  # experiment.backbone / rescale_k
    assert (ettin.backbone, ettin.k) == (ETTIN, 16.0)    # experiment.config.model / k
    # 41 steps + 3 stale lines (steps 500-550 logged twice) + 1 blank line; the later lines are kept
    assert (minilm.lines, minilm.blank_lines, minilm.replaced_steps, len(minilm.log)) == (45, 1, 3, 41)
    raw = [json.loads(line) for line in open(DATA / "train" / "minilm-k4" / "log.jsonl") if line.strip()]
    last_500 = [r["loss"] for r in raw if r["step"] == 500][-1]
    assert minilm.log.loc[minilm.log.step == 500, "loss"].item() == last_500
    assert list(minilm.log.step) == sorted(minilm.log.step)


def test_bad_cells_name_file_and_line(tmp_path):
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "table.csv").write_text("dataset,system,nDCG@10\nscifact,bm25,0.5\nscifact,x,abc\n")
    with pytest.raises(InputError, match=r"table\.csv line 3 column 'nDCG@10'.*'abc'"):
        load_benchmark(folder)
    (folder / "table.csv").write_text("dataset,system,nDCG@10\nscifact,bm25,0.5\nscifact,bm25,0.6\n")
    with pytest.raises(InputError, match=r"repeated \(dataset, system\) rows: line 2 .*line 3"):
        load_benchmark(folder)
    (folder / "table.csv").write_text("dataset,nDCG@10\nscifact,0.5\n")
    with pytest.raises(InputError, match="missing column"):
        load_benchmark(folder)
    run = tmp_path / "train" / "r"
    run.mkdir(parents=True)
    (run / "log.jsonl").write_text('{"step": 0, "loss": 1}\n{"step": 1, "loss":\n')
    with pytest.raises(InputError, match=r"log\.jsonl:2: malformed JSON"):
        load_training_run(run)
    (run / "log.jsonl").write_text('{"step": 0, "loss": 1}\n')
    (run / "manifest.json").write_text('{"experiment":\n [}')
    with pytest.raises(InputError, match=r"manifest\.json:2: malformed JSON"):
        load_training_run(run)
    (run / "manifest.json").write_text("[]")
    with pytest.raises(InputError, match=r"manifest\.json: the file must be a mapping, got \[\]"):
        load_training_run(run)


def test_status_defaults(tmp_path):
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "table.json").write_text(json.dumps([{"dataset": "d", "system": "s", "nDCG@10": None}]))
    table = load_benchmark(folder).table
    assert table.status.tolist() == ["ok"] and table.model.tolist() == [""]  # no status column: ok
    text = benchmark_table(table).text
    assert text["nDCG@10"].tolist() == ["missing"]


def test_combine_merges_agreeing_rows_and_refuses_conflicts(results, tmp_path):
    frame = results.combined()
    row = frame[(frame.dataset == "scifact") & (frame.system == "splade-minilm-k4")]
    assert len(row) == 1
    assert row["nDCG@10"].item() == 0.42 and row["flops"].item() == pytest.approx(1.83 * 0.05)  # filled in
    assert len(frame.attrs["merged"]) == 4  # (scifact|nfcorpus) x (bm25, splade-minilm-k4)
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for folder, value, latency in ((a, 0.5, 10.0), (b, 0.6, 11.0), (c, 0.5, 12.0)):
        folder.mkdir()
        (folder / "table.csv").write_text(f"dataset,system,nDCG@10,latency_mean_ms,flops\n"
                                          f"scifact,rrf,{value},{latency},{'2.5' if folder == c else ''}\n")
    # one name, different effectiveness: two systems (an rrf of other runs), each named by its benchmark;
    # the same effectiveness measured again: one system, efficiency from the row with most efficiency values
    both = combine([load_benchmark(a), load_benchmark(b), load_benchmark(c)]).set_index("system")
    assert list(both.index) == ["rrf (b)", "rrf (c)"]
    assert both.loc["rrf (c)", "nDCG@10"] == 0.5 and both.loc["rrf (c)", "latency_mean_ms"] == 12.0
    assert both.loc["rrf (b)", "nDCG@10"] == 0.6
    notes = combine([load_benchmark(a), load_benchmark(b), load_benchmark(c)]).attrs["merged"]
    assert re.search(r"\(scifact, rrf\) differs between .*a/table\.csv, .*b/table\.csv: different systems", notes[0])
    assert "(scifact, rrf) of a merged into the row of c (efficiency measured again there" in notes[1]


def test_linking_labels_rows_by_backbone_and_fills_k(frame):
    by_system = frame.drop_duplicates("system").set_index("system")
    assert by_system.loc["splade-minilm-k4", "backbone"] == MINILM
    assert by_system.loc["splade-minilm-k4", "run"] == "minilm-k4"
    assert by_system.loc["splade-ettin-k16", "k"] == 16.0  # empty in the table, from the run's manifest
    assert by_system.loc["bm25", "backbone"] == "bm25" and by_system.loc["bm25", "run"] == ""


# ---- tables against the results files ----

def test_rescaling_table_matches_results(frame):
    table = rescaling_table(frame)
    rows = {(r["backbone"], r["k"]): r for r in parse_markdown(table.to_markdown())}
    assert list(rows) == [(MINILM, "1"), (MINILM, "4"), (MINILM, "16"), (ETTIN, "1"), (ETTIN, "16")]
    system = {(MINILM, "1"): "splade-minilm-k1", (MINILM, "4"): "splade-minilm-k4",
              (MINILM, "16"): "splade-minilm-k16", (ETTIN, "1"): "splade-ettin-k1", (ETTIN, "16"): "splade-ettin-k16"}
    source = csv_rows(DATA / "rescaling" / "table.csv")
    checked = 0
    for key, row in rows.items():
        src = source[("msmarco-dev", system[key])]
        assert row["MS MARCO RR@10"] == f"{float(src['RR@10']):.4f}{src['RR@10_sig']}"
        for d in BEIR:
            src = source.get((d, system[key]))
            if src is not None and src["status"] == "ok":
                assert row[d] == f"{float(src['nDCG@10']):.4f}{src['nDCG@10_sig']}"
                checked += 1
    assert checked == 5 * 13 - 3
    # hand-computed: 0.30, 0.31, ..., 0.42 -> mean 0.36; ettin k=1: 0.27..0.39 -> 0.33
    assert rows[(MINILM, "4")]["BEIR-13 mean nDCG@10"] == "0.3600"
    assert table.value({"backbone": MINILM, "k": "4"}, "BEIR-13 mean nDCG@10") == pytest.approx(0.36)
    assert rows[(ETTIN, "1")]["BEIR-13 mean nDCG@10"] == "0.3300"
    # missing cells say why
    assert rows[(MINILM, "1")]["climate-fever"] == "failed"
    assert rows[(MINILM, "1")]["BEIR-13 mean nDCG@10"] == "n/a (12 of 13)"
    assert rows[(MINILM, "16")]["nq"] == "absent" and rows[(MINILM, "16")]["fever"] == "not run"
    assert rows[(MINILM, "16")]["BEIR-13 mean nDCG@10"] == "n/a (11 of 13)"
    assert rows[(ETTIN, "16")]["DL19 nDCG@10"] == "not run"
    assert math.isnan(table.value({"backbone": ETTIN, "k": "16"}, "DL19 nDCG@10"))
    assert any("failed: out of memory (climate-fever / splade-minilm-k1)" in n for n in table.notes)
    assert any(n.startswith("significance: test not recorded") and "against the baseline bm25" in n
               and "† significantly better" in n for n in table.notes)


def test_rescaling_table_percent(frame):
    rows = {(r["backbone"], r["k"]): r for r in parse_markdown(
        rescaling_table(frame, fmt=NumberFormat(scale="percent")).to_markdown())}
    assert rows[(MINILM, "4")]["BEIR-13 mean nDCG@10"] == "36.0"
    assert rows[(MINILM, "4")]["MS MARCO RR@10"] == "34.6†"  # 0.3456 x 100 to one decimal


def test_efficiency_table_matches_results(frame):
    table = efficiency_table(frame, "msmarco-dev")
    rows = {r["system"]: r for r in parse_markdown(table.to_markdown())}
    assert list(rows) == ["bm25", "splade-minilm-k1", "splade-minilm-k4", "splade-minilm-k16", "splade-ettin-k1",
                          "splade-ettin-k16"]
    src = csv_rows(DATA / "rescaling" / "table.csv")
    for system, row in rows.items():
        s = src[("msmarco-dev", system)]
        assert row["RR@10"] == f"{float(s['RR@10']):.4f}{s['RR@10_sig']}"
        assert row["R@1000"] == f"{float(s['R@1000']):.4f}"
        assert row["index (MiB)"] == f"{float(s['index_bytes']) / 2 ** 20:,.1f}"
    assert rows["bm25"]["index (MiB)"] == "2,150.4"  # 2,254,857,830 B / 2^20
    assert rows["bm25"]["latency mean (ms)"] == "12.30" and rows["bm25"]["FLOPs"] == "missing"
    assert rows["splade-minilm-k16"]["FLOPs"] == "0.920" and rows["splade-minilm-k4"]["doc dims"] == "132.8"
    assert rows["splade-ettin-k1"]["latency p99 (ms)"] == "missing"
    assert table.value({"system": "splade-minilm-k4"}, "latency p99 (ms)") == 95.2
    scifact = efficiency_table(frame, "scifact")
    absent = next(n for n in scifact.notes if n.startswith("not recorded for scifact: "))
    assert absent.endswith("postings in the query's lists, postings, index (MiB)")
    assert "postings" not in scifact.values.columns and "FLOPs" in scifact.values.columns
    with pytest.raises(ConfigError, match="not in the results"):
        efficiency_table(frame, "nope")


def test_benchmark_table_matches_results(results):
    """Two datasets: the BEIR papers' shape, systems as rows, one column per dataset, their mean last."""
    table = benchmark_table(results.benchmarks["fusion"].table, name="fusion")
    rows = {r["system"]: r for r in parse_markdown(table.to_markdown())}
    src = csv_rows(DATA / "fusion" / "table.csv")
    for (dataset, system), s in src.items():
        expected = f"{float(s['nDCG@10']):.4f}{s['nDCG@10_sig']}" if s["status"] == "ok" else "failed"
        assert rows[system][dataset] == expected
    assert list(table.values.columns) == ["scifact", "nfcorpus", "mean"]
    assert rows["wsum(bm25,splade-minilm-k4)"]["nfcorpus"] == "failed"
    assert "failed: run file missing (nfcorpus / wsum(bm25,splade-minilm-k4))" in table.notes
    # the mean only over the datasets every system has: scifact alone, since wsum failed on nfcorpus
    assert rows["rrf(bm25,splade-minilm-k4)"]["mean"] == "0.7012"
    assert any(n.startswith("mean: over the 1 of 2 datasets on which every system has a nDCG@10 value (scifact); "
                            "left out: nfcorpus") for n in table.notes)
    # every measure the benchmark holds gets its table, each datasets' main measure first
    tables = benchmark_tables(results.benchmarks["rescaling"].table, name="resc")
    assert [t.name for t in tables] == ["resc-RR@10", "resc-nDCG@10", "resc-R@1000", "resc-R@1000_rel_2", "resc-R@100"]
    assert list(tables[1].values.columns) == ["dl19", *BEIR, "mean"]
    assert [list(t.values.columns) for t in tables if t.name == "resc-R@1000_rel_2"] == [["dl19"]]  # no mean of one
    with pytest.raises(ConfigError, match="not in the table"):
        benchmark_table(results.benchmarks["fusion"].table, measure="RR@10")


def test_table_files_latex_and_csv(frame, tmp_path):
    table = rescaling_table(frame)
    md, tex, csv_path = table.write(tmp_path)
    assert md.read_text().startswith("### Rescaling k")
    text = tex.read_text()
    assert r"\begin{tabular}{ll" + "r" * 16 + "}" in text and r"\toprule" in text
    assert r"0.3456\textsuperscript{\dag}" in text and "n/a (12 of 13)" in text
    back = pd.read_csv(csv_path)
    row = back[(back.backbone == MINILM) & (back.k == 4)]
    assert float(row["BEIR-13 mean nDCG@10"].item()) == pytest.approx(0.36)
    assert back[(back.backbone == MINILM) & (back.k == 1)]["climate-fever"].item() == "failed"


def test_summary_tables_count_everything(results):
    bt = benchmarks_table(results.benchmarks.values())
    resc = bt.value({"benchmark": "rescaling"}, "rows")
    assert resc == 89 and bt.value({"benchmark": "rescaling"}, "ok") == 86  # 2 not run, 1 failed
    tt = training_table(results.training.values())
    for col in ("log lines", "steps kept", "replaced", "blank lines"):
        tt.values[col] = tt.values[col].astype(int)
    v = tt.values
    assert (v["log lines"] == v["steps kept"] + v["replaced"] + v["blank lines"]).all()


# ---- small pieces ----

def test_pareto_front_by_hand():
    assert pareto_front([1, 2, 3, 4, 2], [0.1, 0.3, 0.2, 0.5, 0.3]) == [0, 1, 3]
    assert pareto_front([], []) == []
    with pytest.raises(InputError):
        pareto_front([1.0, float("nan")], [0.1, 0.2])


def test_best_k_and_head_norm(frame, results, tmp_path):
    table = rescaling_table(frame)
    points = head_norm_points(table, results.training).set_index("backbone")
    assert points.loc[MINILM, "best_k"] == 4.0 and points.loc[MINILM, "value"] == 0.3456
    assert points.loc[ETTIN, "best_k"] == 16.0
    assert points.loc[MINILM, "head_norm"] == 190.32  # first logged head_norm of the k=1 run
    assert points.loc[MINILM, "criterion"] == "MS MARCO RR@10"
    by_beir = best_k(table, "BEIR-13 mean nDCG@10").set_index("backbone")
    assert by_beir.loc[MINILM, "best_k"] == 4.0 and by_beir.loc[MINILM, "ks_without"] == [1.0, 16.0]
    # no k=1 run: first logged head_norm x k; a manifest value wins over the logs
    run = tmp_path / "train" / "x-k4"
    run.mkdir(parents=True)
    (run / "log.jsonl").write_text('{"step": 0, "head_norm": 50.0}\n')
    (run / "manifest.json").write_text(json.dumps({"experiment": {"backbone": "x", "rescale_k": 4}}))
    assert head_norm("x", [load_training_run(run)]) == (200.0, "first logged head_norm of run x-k4 x k=4")
    (run / "manifest.json").write_text(json.dumps({"experiment": {"backbone": "x", "rescale_k": 4},
                                                   "rescale": {"norm_before": 123.0}}))
    assert head_norm("x", [load_training_run(run)])[0] == 123.0


def test_formatting():
    assert [significant(v, 3) for v in (1.2345, 0.000123456, 123456, 0.92)] == ["1.23", "0.000123", "123,456",
                                                                                 "0.920"]
    assert NumberFormat().effectiveness(0.36789) == "0.3679"
    assert NumberFormat(scale="percent").effectiveness(0.36789) == "36.8"
    with pytest.raises(ConfigError, match="fraction, percent"):
        NumberFormat(scale="x100")
    assert latex_escape("a_b 5% †") == r"a\_b 5\% \textsuperscript{\dag}"


def test_rescaling_table_shows_only_columns_with_data_and_says_once_why():
    from lsr_eval.report.tables import rescaling_table

    frame = pd.DataFrame([
        {"dataset": "scifact", "system": "a", "k": 1.0, "status": "ok", "nDCG@10": 0.5, "nDCG@10_sig": "↓",
         "baseline": "bm25"},
        {"dataset": "scifact", "system": "b", "k": 4.0, "status": "ok", "nDCG@10": 0.6, "nDCG@10_sig": "",
         "baseline": "bm25"},
        {"dataset": "nfcorpus", "system": "a", "k": 1.0, "status": "not run", "nDCG@10": math.nan,
         "nDCG@10_sig": "", "baseline": "bm25"},
    ])
    t = rescaling_table(frame)
    assert list(t.values.columns) == ["scifact"]
    assert t.text["scifact"].tolist() == ["0.5000↓", "0.6000"]
    note = next(n for n in t.notes if n.startswith("not shown"))
    assert "MS MARCO RR@10, DL19 nDCG@10, trec-covid" in note and "(no row for the dataset)" in note
    assert "nfcorpus (not run or no row for the dataset)" in note
    assert "BEIR-13 mean nDCG@10 (needs all 13 datasets)" in note
    assert not any(n.startswith("absent:") for n in t.notes)  # no absent cell is left to explain
    assert any(n.startswith("significance: ") and "↓ significantly worse" in n for n in t.notes)


def test_efficiency_table_costs_fusions_and_marks_fusion_only_columns():
    from lsr_eval.report.tables import efficiency_table

    frame = pd.DataFrame([
        {"dataset": "d", "system": "bm25", "kind": "bm25", "nDCG@10": 0.6, "flops": 0.5, "latency_mean_ms": 10.0,
         "postings": 1000.0, "postings_per_query": 50.0},
        {"dataset": "d", "system": "m", "kind": "splade", "nDCG@10": 0.64, "flops": 2.0, "latency_mean_ms": 30.0,
         "postings": 2500.0, "postings_per_query": 200.0},
        {"dataset": "d", "system": "rrf", "kind": "fusion", "nDCG@10": 0.69, "flops": 2.5, "latency_mean_ms": 40.0,
         "latency_parallel_mean_ms": 30.0},
    ]).assign(status="ok", k=math.nan, model="")
    t = efficiency_table(frame, "d")
    rows = t.text.assign(system=t.labels["system"]).set_index("system")
    assert rows.loc["bm25", "parallel latency mean (ms)"] == "n/a"
    assert rows.loc["rrf", "parallel latency mean (ms)"] == "30.00"
    assert rows.loc["rrf", "FLOPs"] == "2.50" and rows.loc["m", "postings"] == "2,500"
    assert rows.loc["rrf", "postings"] == "missing"
    assert any(n.startswith("Fusion cost = its parts' cost: FLOPs summed") for n in t.notes)
    assert "n/a: parts in parallel apply to fusions only" in t.notes
