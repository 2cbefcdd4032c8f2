"""A benchmark over several datasets where one cannot be read (a registry dataset offline, without a seeded cache)
and one has no split to tune on: the others still run, the unreadable one gets a failed row per system and fusion
and is named in the manifest and in the BEIR table's note; a fusion tuned on a split is "not run" where there is
no such split."""

from __future__ import annotations

import json

import pandas as pd
import yaml
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir

from lsr_eval.benchmark import run as bench_run
from lsr_eval.benchmark.config import load_config
from lsr_eval.errors import InputError
from lsr_eval.report.tables import benchmark_tables, datasets_table
from lsr_eval.runs.trec import write_run

#: Two more queries, judged in the dev split only (disjoint from the reported ones, as tuning requires).
QUERIES = [*TINY_QUERIES, {"_id": "q4", "text": "sparse documents"}, {"_id": "q5", "text": "BM25 baseline"}]
DEV_QRELS = [("q4", "d1", 1), ("q5", "d2", 1)]
RUN_A = {"q1": {"d1": 3.0, "d2": 1.0}, "q2": {"d4": 2.0, "d2": 1.0}, "q3": {"d3": 5.0, "d1": 4.0},
         "q4": {"d4": 2.0, "d1": 1.0}, "q5": {"d2": 2.0, "d1": 1.0}}
RUN_C = {"q1": {"d1": 1.0, "d4": 0.5}, "q2": {"d5": 2.0, "d2": 1.0}, "q3": {"d1": 1.0, "d3": 0.9},
         "q4": {"d1": 3.0, "d4": 1.0}, "q5": {"d1": 2.0, "d2": 1.0}}
REASON = "arguana: ir_datasets could not download the queries of beir/arguana (ConnectionError: no network?)"


class _Unreadable:
    """What load_dataset gives for a registry dataset whose files are not there: reading it fails."""

    name = "arguana"

    def fingerprint(self):
        raise InputError(REASON)


def _config(tmp_path) -> str:
    with_dev = write_beir(tmp_path / "with-dev", TINY_DOCS, QUERIES, TINY_QRELS)
    write_beir(with_dev, TINY_DOCS, QUERIES, DEV_QRELS, split="dev")
    test_only = write_beir(tmp_path / "test-only", TINY_DOCS, TINY_QUERIES, TINY_QRELS)
    for name, run in (("a", RUN_A), ("c", RUN_C)):
        write_run(run, tmp_path / "runs" / f"{name}.trec")
    cfg = {"name": "several", "out": str(tmp_path / "results"),
           "datasets": [{"spec": str(with_dev), "tune_split": "dev", "label": "with-dev", "measures": ["nDCG@10"]},
                        {"spec": "arguana"},
                        {"spec": str(test_only), "label": "test-only", "measures": ["nDCG@10"]}],
           "systems": [{"name": "a", "kind": "run", "path": "runs/a.trec"},
                       {"name": "c", "kind": "run", "path": "runs/c.trec"}],
           "fusion": [{"name": "rrf", "method": "rrf", "runs": ["a", "c"]},
                      {"name": "wsum-tuned", "method": "wsum", "norm": "min-max", "runs": ["a", "c"], "tune": True}],
           "significance": {"baseline": "a"}}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_unreadable_dataset_and_missing_tune_split(tmp_path, monkeypatch):
    real = bench_run.load_dataset
    monkeypatch.setattr(bench_run, "load_dataset",
                        lambda spec, split=None: _Unreadable() if spec == "arguana" else real(spec, split))
    cfg = load_config(_config(tmp_path))  # tune: true with a tune_split on one dataset of three is accepted
    table = bench_run.run_benchmark(cfg, tmp_path / "work", threads=1)
    rows = {(r["dataset"], r["system"]): r for r in table.to_dict("records")}
    # the unreadable dataset: one failed row per system and fusion, saying why
    for system in ("a", "c", "rrf", "wsum-tuned"):
        assert rows[("arguana", system)]["status"] == f"failed: dataset not available: {REASON}"
    # the others ran; the tuned fusion has a number where a tune split exists, and says why not elsewhere
    for label in ("with-dev", "test-only"):
        for system in ("a", "c", "rrf"):
            assert rows[(label, system)]["status"] == "ok" and rows[(label, system)]["nDCG@10"] > 0
    assert rows[("with-dev", "wsum-tuned")]["status"] == "ok"
    assert rows[("test-only", "wsum-tuned")]["status"] == \
        "not run: no tune_split on test-only (no train or dev split to tune on)"
    assert pd.isna(rows[("test-only", "wsum-tuned")]["nDCG@10"])
    manifest = json.loads((tmp_path / "results" / "manifest.json").read_text())
    assert manifest["unavailable"] == {"arguana": REASON}
    assert set(manifest["data"]) == {"with-dev", "with-dev@dev", "test-only"}
    assert manifest["counts"]["failed"] == 4

    # the BEIR-shaped table: the readable datasets as columns, the unreadable one named in the note with its reason
    frame = pd.read_csv(tmp_path / "results" / "table.csv")
    t = datasets_table(frame, "nDCG@10")
    assert list(t.values.columns) == ["with-dev", "test-only", "mean"]
    note = [n for n in t.notes if n.startswith("not shown")]
    assert note == [f"not shown, no nDCG@10 value (e.g. not available when run): arguana (failed: dataset not "
                    f"available: {REASON})"]
    assert [tab.notes for tab in benchmark_tables(frame)][0] == t.notes


def test_datasets_table_names_every_status_of_a_dataset_without_values():
    frame = pd.DataFrame([
        {"dataset": "scifact", "system": "bm25", "status": "ok", "nDCG@10": 0.6},
        {"dataset": "scifact", "system": "rrf", "status": "ok", "nDCG@10": 0.7},
        {"dataset": "nq", "system": "bm25", "status": "failed: x", "nDCG@10": float("nan")},
        {"dataset": "nq", "system": "rrf", "status": "not run: inputs failed (bm25)", "nDCG@10": float("nan")},
        {"dataset": "fiqa", "system": "bm25", "status": "ok", "nDCG@10": float("nan")},
    ])
    notes = datasets_table(frame, "nDCG@10").notes
    assert "not shown, no nDCG@10 value (e.g. not available when run): nq (failed: x; not run: inputs failed " \
           "(bm25)); fiqa (missing)" in notes
    # datasets chosen by the caller: nothing is said about the others
    assert not any(n.startswith("not shown") for n in datasets_table(frame, "nDCG@10", datasets=["scifact"]).notes)
