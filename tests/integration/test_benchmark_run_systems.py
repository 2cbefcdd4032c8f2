"""Benchmark systems of ``kind: run`` (TREC runs made elsewhere): paths relative to the YAML file, declared costs,
judged queries without results, fusion with measured systems, cross-validated weights, several significance
baselines, and paths checked before anything runs."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest
import yaml
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir

from lsr_eval.benchmark.config import load_config
from lsr_eval.cli import main
from lsr_eval.errors import ConfigError
from lsr_eval.evaluation import evaluate
from lsr_eval.runs.trec import write_run

QRELS = {q: {d: g} for q, d, g in TINY_QRELS}  # q1: d1, q2: d2, q3: d3 (grade 2)
RUN_A = {"q1": {"d1": 3.0, "d2": 1.0}, "q2": {"d4": 2.0, "d2": 1.0}, "q3": {"d3": 5.0, "d1": 4.0}}
RUN_B = {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d2": 3.0, "d5": 1.0}}  # no result for q3
RUN_C = {"q1": {"d1": 1.0, "d4": 0.5}, "q2": {"d5": 2.0, "d2": 1.0}, "q3": {"d1": 1.0, "d3": 0.9}}
MEASURES = ["nDCG@10", "RR@10"]


def _setup(tmp_path, **over) -> str:
    data = write_beir(tmp_path / "data", TINY_DOCS, TINY_QUERIES, TINY_QRELS)
    folder = tmp_path / "configs"
    for name, run in (("a", RUN_A), ("b", RUN_B), ("c", RUN_C)):
        write_run(run, folder / "runs" / f"{name}.trec")
    cfg = {
        "name": "runs", "out": str(tmp_path / "results"),
        "datasets": [{"spec": str(data), "label": "tiny", "measures": MEASURES}],
        "systems": [
            {"name": "a", "kind": "run", "path": "runs/a.trec", "display_name": "System A",
             "costs": {"flops": 1.5, "latency_ms": 12.0, "source": "paper X, table 3"}},
            {"name": "b", "kind": "run", "path": "runs/b.trec"},
            {"name": "c", "kind": "run", "path": "runs/c.trec", "costs": {"flops": 2.0, "source": "paper Y"}},
            {"name": "bm25", "kind": "bm25"},
        ],
        "fusion": [
            {"name": "rrf-ab", "method": "rrf", "runs": ["a", "b"]},
            {"name": "rrf-c-bm25", "method": "rrf", "runs": ["c", "bm25"]},
            {"name": "wsum-cv", "method": "wsum", "norm": "min-max", "runs": ["a", "c"],
             "tune": {"cv": 3, "seed": 1}},
        ],
        "significance": {"baseline": ["a", "c"], "test": "t-test"},
        "efficiency": {"latency_queries": 2, "warmup": 1, "hits": 10},
        **over,
    }
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_run_systems_rows_costs_fusion_and_significance(tmp_path, monkeypatch, caplog):
    path = _setup(tmp_path)
    monkeypatch.chdir(tmp_path)  # run paths are taken from the YAML file's folder, not from here
    with caplog.at_level(logging.WARNING):
        assert main(["benchmark", path, "--work-dir", str(tmp_path / "work"), "--threads", "1"]) == 0
    table = pd.read_csv(tmp_path / "results" / "table.csv").set_index("system")
    assert (table["status"] == "ok").all()
    for name, run in (("a", RUN_A), ("b", RUN_B), ("c", RUN_C)):
        row = table.loc[name]
        assert row["kind"] == "run" and pd.isna(row["model"])  # model "" (empty in the CSV)
        for m, v in evaluate(QRELS, run, MEASURES).items():
            assert row[m] == pytest.approx(v, abs=1e-12)
    assert table.loc["a", "display_name"] == "System A"
    # declared costs fill the measured columns, and say so; undeclared costs stay empty
    a, b, c, bm25 = (table.loc[n] for n in ("a", "b", "c", "bm25"))
    assert (a["flops"], a["latency_mean_ms"]) == (1.5, 12.0)
    assert a["declared_costs"] == "flops,latency_mean_ms" and a["cost_source"] == "paper X, table 3"
    assert c["flops"] == 2.0 and c["declared_costs"] == "flops" and pd.isna(c["latency_mean_ms"])
    assert pd.isna(b["flops"]) and pd.isna(b["declared_costs"]) and pd.isna(b["cost_source"])
    assert bm25["flops"] > 0 and pd.isna(bm25["declared_costs"]) and pd.isna(bm25["cost_source"])  # measured
    # a fusion with an undeclared part has no cost; one with a declared part is marked declared
    assert all(pd.isna(table.loc["rrf-ab", col]) for col in ("flops", "latency_mean_ms", "declared_costs"))
    fused = table.loc["rrf-c-bm25"]
    assert fused["flops"] == pytest.approx(2.0 + bm25["flops"]) and fused["declared_costs"] == "flops"
    assert "declared for c" in fused["cost_source"]
    # judged queries without results: counted on every row, warned about
    assert b["judged_without_results"] == 1 and a["judged_without_results"] == 0
    assert table.loc["rrf-ab", "judged_without_results"] == 0
    assert any("b on tiny: 1 of 3 judged queries have no result" in r.getMessage() for r in caplog.records)
    # the run's manifest names the file by path and sha256
    manifest = json.loads((tmp_path / "results" / "runs" / "a" / "tiny" / "manifest.json").read_text())
    assert manifest["run"]["path"] == str((tmp_path / "configs" / "runs" / "a.trec").resolve())
    assert len(manifest["run"]["sha256"]) == 64 and manifest["counts"]["queries"] == 3
    # cross-validated weights: folds seeded and recorded
    cv = json.loads((tmp_path / "results" / "runs" / "wsum-cv" / "tiny" / "manifest.json").read_text())["tuning"]
    assert (cv["cv"], cv["seed"]) == (3, 1) and sorted(q for f in cv["folds"] for q in f["judged_queries"]) == [
        "q1", "q2", "q3"]
    # two baselines: the first in the usual columns, each in its own
    from lsr_eval.significance.compare import compare, direction_marker

    assert (table["baseline"] == "a").all() and (table["baselines"] == "a,c").all()
    runs = {"a": RUN_A, "b": RUN_B, "c": RUN_C}
    for base in ("a", "c"):
        per_query = {n: evaluate(QRELS, r, MEASURES, per_query=True) for n, r in runs.items()}
        df = compare({**per_query, **{n: evaluate(QRELS, _read(tmp_path, n), MEASURES, per_query=True)
                                      for n in ("bm25", "rrf-ab", "rrf-c-bm25", "wsum-cv")}}, base)
        for rec in df.to_dict("records"):
            if rec["system"] == base:
                continue
            row = table.loc[rec["system"]]
            assert row[f"{rec['measure']}_p_vs_{base}"] == pytest.approx(rec["p_corrected"], rel=1e-9)
            cell = row[f"{rec['measure']}_sig_vs_{base}"]
            assert (cell if isinstance(cell, str) else "") == direction_marker(rec["significant"], rec["difference"])
            if base == "a":
                assert row[f"{rec['measure']}_p"] == pytest.approx(rec["p_corrected"], rel=1e-9)


def _read(tmp_path, system: str):
    from lsr_eval.runs.trec import read_run

    return read_run(tmp_path / "work" / "benchmarks" / "runs" / "runs" / system / "tiny" / "run.trec")


def test_a_missing_run_file_is_refused_before_anything_runs(tmp_path):
    path = _setup(tmp_path)
    (tmp_path / "configs" / "runs" / "b.trec").unlink()
    assert main(["benchmark", path, "--work-dir", str(tmp_path / "work")]) == 2
    with pytest.raises(ConfigError, match=r"systems\[1\] \(b\): run file .*configs/runs/b.trec does not exist"):
        from lsr_eval.benchmark.config import check_on_disk

        check_on_disk(load_config(path))
    assert not (tmp_path / "work").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("spec, extra, message", [
    ("missing-folder", {}, r"datasets\[0\] \(.*missing-folder\): no such folder"),
    ("data", {"tune_split": "train"}, r"datasets\[0\] \(.*data\): .*train.tsv does not exist"),
])
def test_dataset_paths_are_checked_before_anything_runs(tmp_path, spec, extra, message):
    from lsr_eval.benchmark.config import check_on_disk

    path = _setup(tmp_path)
    cfg = yaml.safe_load(open(path))
    cfg["datasets"] = [{"spec": str(tmp_path / spec), **extra}]
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    with pytest.raises(ConfigError, match=message):
        check_on_disk(load_config(path))
    assert main(["benchmark", path, "--work-dir", str(tmp_path / "work")]) == 2
    assert not (tmp_path / "work").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("system, message", [
    ({"name": "x", "kind": "run"}, "path must be a non-empty string, got None"),
    ({"name": "x", "kind": "run", "path": "r.trec", "model": "m"}, "unknown key 'model' for a run system"),
    ({"name": "x", "kind": "run", "path": "r.trec", "costs": {"flops": 1.0}},
     "costs: source must be a non-empty string, got None"),
    ({"name": "x", "kind": "run", "path": "r.trec", "costs": {"flops": -1, "source": "s"}},
     r"systems\[1\] \(x\): costs: flops must be >= 0, got -1$"),
    ({"name": "x", "kind": "run", "path": "r.trec", "costs": {"qps": 3, "source": "s"}}, "unknown key 'qps'"),
])
def test_run_system_settings_are_validated(tmp_path, system, message):
    path = _setup(tmp_path, systems=[{"name": "a", "kind": "run", "path": "runs/a.trec"}, system], fusion=[],
                  significance=None, efficiency=None)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


@pytest.mark.parametrize("over, message", [
    ({"fusion": [{"name": "f", "method": "wsum", "runs": ["a", "b"], "tune": {"cv": 1}}]},
     r"fusion\[0\] \(f\): tune: cv must be >= 2, got 1$"),
    ({"fusion": [{"name": "f", "method": "wsum", "runs": ["a", "b"], "tune": {"cv": 3, "k": 2}}]},
     "unknown key 'k'"),
    ({"fusion": [{"name": "f", "method": "sum", "runs": ["a", "b"], "tune": {"cv": 3}}]}, "no parameter to tune"),
    ({"fusion": [{"name": "f", "method": "wsum", "runs": ["a", "b"], "tune": True}]}, "needs a tune_split"),
    ({"significance": {"baseline": ["a", "zz"]}}, "significance baseline 'zz' is not a system"),
    ({"significance": {"baseline": ["a", "a"]}}, "significance baseline must name distinct systems"),
])
def test_tune_and_significance_settings_are_validated(tmp_path, over, message):
    with pytest.raises(ConfigError, match=message):
        load_config(_setup(tmp_path, **over))
