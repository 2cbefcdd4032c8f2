"""A benchmark row's status as a type (lsr_eval/benchmark/status.py): written as the text committed tables hold,
read back without matching prose."""

from __future__ import annotations

import math

from lsr_eval.benchmark.status import RowStatus, Status, kind_of


def test_written_as_committed_tables_hold_it():
    assert str(RowStatus(Status.OK)) == "ok"
    assert str(RowStatus(Status.FAILED, str(ValueError("no index")))) == "failed: no index"
    assert str(RowStatus(Status.NOT_RUN, "inputs failed (bm25)")) == "not run: inputs failed (bm25)"


def test_read_back_by_kind_and_reason():
    assert RowStatus.parse("failed: dataset not available: x: y") == RowStatus(Status.FAILED,
                                                                              "dataset not available: x: y")
    assert RowStatus.parse("not run: no tune_split on nfcorpus") == RowStatus(Status.NOT_RUN,
                                                                              "no tune_split on nfcorpus")
    assert RowStatus.parse(" ok ").ok and kind_of("failed") is Status.FAILED
    # prose that only starts like a status is not one
    assert kind_of("failed-over to BM25") is Status.UNKNOWN and kind_of("okay") is Status.UNKNOWN
    assert kind_of(None) is Status.UNKNOWN and kind_of(math.nan) is Status.UNKNOWN
    assert kind_of("unknown") is Status.UNKNOWN and RowStatus.parse("unknown").reason == ""
    for text in ("ok", "failed: x", "not run: y"):
        assert str(RowStatus.parse(text)) == text
