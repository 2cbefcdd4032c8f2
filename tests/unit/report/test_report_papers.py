"""The papers' own tables (lsr_eval.report.papers) on small hand-made result frames."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from lsr_eval.data.registry import GROUPS
from lsr_eval.report.build import write_report
from lsr_eval.report.papers import efficiency_paper_table, rescaling_paper_table

BEIR = GROUPS["beir-13"]


def _row(dataset, system, **values):
    return {"dataset": dataset, "system": system, "model": "", "status": values.pop("status", "ok"),
            "k": math.nan, **values}


def _rescaling_rows():
    rows = []
    # bert k1: dev 0.30, dl19 0.60, BEIR all 13 at 0.1 + i/100 -> mean 0.16
    # bert k2: dev 0.32 (the best k), dl19 0.55, BEIR only 12 -> n/a (12 of 13)
    # roberta k1: dev 0.20; k2: failed everywhere
    for system, dev, dl19, beir in (("rescale-bert-base-uncased-k1", 0.30, 0.60, BEIR),
                                    ("rescale-bert-base-uncased-k2", 0.32, 0.55, BEIR[:12]),
                                    ("rescale-roberta-base-k1", 0.20, 0.50, ())):
        rows.append(_row("msmarco-dev", system, **{"RR@10": dev}))
        rows.append(_row("dl19", system, **{"nDCG@10": dl19}))
        rows += [_row(d, system, **{"nDCG@10": 0.1 + i / 100}) for i, d in enumerate(beir)]
    for d in ("msmarco-dev", "dl19"):
        rows.append(_row(d, "rescale-roberta-base-k2", status="failed: model folder missing"))
    rows.append(_row("msmarco-dev", "bm25", **{"RR@10": 0.18}))
    return pd.DataFrame(rows)


def test_rescaling_paper_table_cells_best_k_and_reasons():
    t = rescaling_paper_table(_rescaling_rows())
    assert list(t.labels["backbone"]) == ["bert-base-uncased", "roberta-base"]   # bm25 has no k: not a row
    assert list(t.values.columns) == ["k=1", "k=2", "best k"]
    assert t.text.at[0, "k=1"] == "0.3000 / 0.6000 / 0.1600"    # mean of 0.10 .. 0.22
    assert t.text.at[0, "k=2"] == "0.3200 / 0.5500 / n/a (12 of 13)"
    assert t.values.at[0, "best k"] == 2 and bool(t.best.at[0, "k=2"]) and not t.best.at[0, "k=1"]
    assert t.text.at[1, "k=1"] == "0.2000 / 0.5000 / n/a (0 of 13)"
    assert t.text.at[1, "k=2"] == "failed / failed / n/a (0 of 13)"
    assert t.values.at[1, "best k"] == 1 and bool(t.best.at[1, "k=1"])
    notes = " ".join(t.notes)
    assert "failed: model folder missing (msmarco-dev / rescale-roberta-base-k2; dl19 / rescale-roberta-base-k2)" \
        in notes
    assert "never by a test set" in notes and "published" in notes and "0.405 at k=16" in notes


def test_rescaling_paper_table_ties_take_the_smaller_k():
    frame = pd.DataFrame([_row("msmarco-dev", f"rescale-x-k{k}", **{"RR@10": 0.25}) for k in (4, 1, 2)])
    t = rescaling_paper_table(frame)
    assert list(t.values.columns) == ["k=1", "k=2", "k=4", "best k"]
    assert t.values.at[0, "best k"] == 1
    assert t.text.at[0, "k=4"] == "0.2500 / absent / n/a (0 of 13)"


def _efficiency_rows():
    rows = []
    for system, dev, r1000, search, encode in (("bm25", 0.18, 0.85, 2.0, math.nan),
                                               ("efficient-splade-V-large", 0.38, 0.97, 30.0, 45.0)):
        rows.append(_row("msmarco-dev", system, **{"RR@10": dev, "R@1000": r1000, "latency_search_p50_ms": search,
                                                   "latency_encode_mean_ms": encode,
                                                   "latency_search_ratio_bm25": search / 2.5}))
        rows += [_row(d, system, **{"nDCG@10": 0.2 + (0.1 if system != "bm25" else 0)}) for d in BEIR]
    rows += [_row(d, "rrf-efficient-splade-V-large", **{"nDCG@10": 0.4 if i else 0.27}) for i, d in enumerate(BEIR)]
    rows.append(_row("msmarco-dev", "naver-efficient-splade-VI-BT-large", status="failed: cannot load model X"))
    return pd.DataFrame(rows)


def test_efficiency_paper_table_columns_and_fused_mean():
    t = efficiency_paper_table(_efficiency_rows())
    assert list(t.labels["model"]) == ["bm25", "efficient-splade-V-large", "naver-efficient-splade-VI-BT-large"]
    assert list(t.values.columns) == ["MS MARCO dev RR@10", "MS MARCO dev R@1000", "DL19 nDCG@10 (ours)",
                                      "PISA retrieval mean (ms)", "PISA retrieval p50 (ms)",
                                      "PISA retrieval p99 (ms)", "retrieval / BM25 on PISA",
                                      "query encoding mean (ms)", "BEIR-13 mean nDCG@10",
                                      "BEIR-13 mean nDCG@10, RRF with BM25"]
    assert t.text.at[1, "MS MARCO dev RR@10"] == "0.3800" and t.values.at[1, "PISA retrieval p50 (ms)"] == 30.0
    assert t.values.at[1, "BEIR-13 mean nDCG@10"] == pytest.approx(0.3)
    assert t.values.at[1, "BEIR-13 mean nDCG@10, RRF with BM25"] == pytest.approx((0.27 + 12 * 0.4) / 13)
    assert t.text.at[0, "query encoding mean (ms)"] == "missing"
    assert t.text.at[1, "retrieval / BM25 on PISA"] == "12.00"
    assert t.text.at[2, "MS MARCO dev RR@10"] == "failed"
    assert t.text.at[2, "BEIR-13 mean nDCG@10"] == "n/a (0 of 13)"
    assert t.text.at[2, "BEIR-13 mean nDCG@10, RRF with BM25"] == "no fusion"
    assert bool(t.best.at[0, "PISA retrieval p50 (ms)"])   # lowest latency is best
    notes = " ".join(t.notes)
    assert "failed: cannot load model X (msmarco-dev / naver-efficient-splade-VI-BT-large)" in notes
    assert "V-large 38.8 / 98.0 / 29.0 ms + 45.3 ms" in notes and "published" in notes
    assert "block_max_wand over fixed-40 block-max data" in notes and "PISA's own C++ queries tool" in notes


def test_report_writes_paper_tables_only_for_the_papers_benchmarks(tmp_path):
    root = tmp_path / "results" / "benchmarks"
    for name, rows in (("paper-rescaling", _rescaling_rows()), ("paper-efficient-splade", _efficiency_rows()),
                       ("other", _rescaling_rows())):
        (root / name).mkdir(parents=True)
        records = json.loads(rows.drop(columns="k").to_json(orient="records"))
        (root / name / "table.json").write_text(json.dumps(records), encoding="utf-8")
    files = write_report(tmp_path / "results", tmp_path / "report")
    assert {"paper-rescaling", "paper-efficient-splade"} <= set(files.tables)
    assert not any(n.startswith("paper-") and "other" in n for n in files.tables)
    for n in ("paper-rescaling", "paper-efficient-splade"):
        assert sorted(p.suffix for p in files.tables[n]) == [".csv", ".md", ".tex"]
    md = (tmp_path / "report" / "tables" / "paper-rescaling.md").read_text(encoding="utf-8")
    assert "**0.3200 / 0.5500 / n/a (12 of 13)**" in md


def test_the_page_names_no_paper_and_no_study():
    """build.py adds what lsr_eval.report.papers registers: it imports none of the papers' or studies' modules and
    names neither paper's benchmark."""
    from package_imports import PACKAGE, imported

    build = PACKAGE / "report" / "build.py"
    study_modules = ("lsr_eval.report.best_k", "lsr_eval.report.rescaling_runs", "lsr_eval.report.seeds",
                     "lsr_eval.report.papers.")
    assert [m for m, _ in imported(build) if m.startswith(study_modules)] == []
    source = build.read_text(encoding="utf-8")
    assert "paper-rescaling" not in source and "RESCALING" not in source and "seeds_" not in source
    from lsr_eval.report.papers import BENCHMARK_PARTS, SECTIONS

    assert [f.__name__ for f in BENCHMARK_PARTS] == ["seed_tables", "paper_tables"]
    assert [f.__name__ for f in SECTIONS] == ["rescaling_section"]


def _run(name, config):
    from lsr_eval.report.loading import TrainingRun

    return TrainingRun(name, None, pd.DataFrame({"step": []}), {"config": config}, None, None)


def test_efficiency_paper_table_labels_each_trained_row_with_its_training():
    """lambda_d and, under naver's sum, the effective 2 x lambda_d; where the middle-trained start came from."""
    frame = _efficiency_rows()
    frame["run"] = ["efficient-splade-V-large" if s == "efficient-splade-V-large" else "" for s in frame["system"]]
    runs = {"efficient-splade-V-large": _run("efficient-splade-V-large", {
        "regularizer": {"query": "l1", "lambda_q": 5e-4, "document": "flops", "lambda_d": 5e-4, "naver_sum": True},
        "model": {"path": "work/train/middle-distilbert-msmarco/model", "middle_from": "ours"}})}
    t = efficiency_paper_table(frame, runs=runs)
    assert list(t.labels["training"]) == [
        "", "lambda_d 0.0005 (effective 0.001: naver's sum, counted 2 times); middle training: ours (lsr-eval "
            "middle-train)", ""]
    assert any("naver's sum" in n for n in t.notes)
    # a run recorded before either key: lambda_d as configured, counted once, no start named
    runs = {"efficient-splade-V-large": _run("efficient-splade-V-large", {"regularizer": {"lambda_d": 5e-3}})}
    assert list(efficiency_paper_table(frame, runs=runs).labels["training"])[1] == "lambda_d 0.005"
    # naver's start, and no linked run at all: no training column
    runs["efficient-splade-V-large"].manifest["config"]["model"] = {"middle_from": "naver"}
    assert "middle training: naver's mlm_flops checkpoints" in efficiency_paper_table(frame, runs=runs).labels.at[
        1, "training"]
    assert "training" not in efficiency_paper_table(_efficiency_rows()).labels.columns
