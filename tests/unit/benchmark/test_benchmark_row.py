"""A benchmark row as a type: the table holds dataset, system, the identity columns, the status text, then the cells
in the order they were added; what later steps need (latency samples, raw p-values) never reaches the table."""

from __future__ import annotations

from lsr_eval.benchmark.row import Row
from lsr_eval.benchmark.status import RowStatus, Status


def test_record_is_the_tables_row_in_its_column_order():
    row = Row("scifact", "splade", {"kind": "splade", "model": "m", "k": None, "engine": "anserini"})
    row.cells.update({"nDCG@10": 0.7, "R@100": 0.9})
    row.cells["efficiency_status"] = RowStatus(Status.FAILED, "latency (see the log)")
    row.latency_samples_ms, row.raw_p[("bm25", "nDCG@10")] = [1.0, 2.0], (0.01, 0.1)
    record = row.record()
    assert list(record) == ["dataset", "system", "kind", "model", "k", "engine", "status", "nDCG@10", "R@100",
                            "efficiency_status"]
    assert record["status"] == "ok" and record["efficiency_status"] == "failed: latency (see the log)"
    assert row.ok and row.get("nDCG@10") == 0.7 and row.get("kind") == "splade" and row.get("flops") is None


def test_a_failed_row_says_why_in_the_text_committed_tables_hold():
    row = Row("nfcorpus", "bm25")
    row.fail(ValueError("index missing"))
    assert not row.ok and row.record() == {"dataset": "nfcorpus", "system": "bm25", "status": "failed: index missing"}
    assert RowStatus.parse(row.record()["status"]) == row.status


def test_only_a_rescaled_systems_row_has_the_k_column():
    from lsr_eval.benchmark.config import SystemEntry
    from lsr_eval.benchmark.run import _system_columns

    assert "k" not in _system_columns(SystemEntry("bm25", "bm25", {"k1": 0.9, "b": 0.4}))
    assert "k" not in _system_columns(SystemEntry("s", "splade", {"model": "m"}))
    rescaled = _system_columns(SystemEntry("s4", "splade", {"model": "m", "rescale_k": 4.0}))
    assert rescaled["k"] == 4.0 and list(rescaled)[:4] == ["kind", "model", "k", "engine"]


def test_the_table_puts_k_beside_model_wherever_its_first_row_is():
    from lsr_eval.benchmark.run import table_of

    plain = Row("scifact", "bm25", {"kind": "bm25", "model": "", "engine": "anserini"}, cells={"nDCG@10": 0.6})
    rescaled = Row("scifact", "s4", {"kind": "splade", "model": "m", "k": 4.0, "engine": "anserini"},
                   cells={"nDCG@10": 0.7})
    table = table_of([plain, rescaled])
    assert list(table.columns) == ["dataset", "system", "kind", "model", "k", "engine", "status", "nDCG@10"]
    assert table["k"].isna().tolist() == [True, False]
    assert "k" not in table_of([plain]).columns
