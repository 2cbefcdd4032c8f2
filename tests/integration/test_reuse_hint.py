"""A reused run says where its run.trec lives."""

from __future__ import annotations

import logging

from lsr_eval.manifest import read_manifest, write_manifest
from lsr_eval.pipeline.reuse import reevaluate


def test_reused_run_names_its_run_file(tmp_path, caplog):
    folder = tmp_path / "benchmarks" / "tiny" / "runs" / "bm25" / "tiny"
    folder.mkdir(parents=True)
    (folder / "run.trec").write_text("q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 2 1.0 bm25\n")
    write_manifest(folder, "bm25", {"method": "bm25-flat"}, metrics={"nDCG@10": 1.0})
    with caplog.at_level(logging.INFO, logger="lsr_eval"):
        result = reevaluate(folder, {"q1": {"d1": 1}}, ["nDCG@10"], read_manifest(folder))
    assert result.reused and result.metrics["nDCG@10"] == 1.0
    hint = [r.getMessage() for r in caplog.records if "reusing the finished run" in r.getMessage()]
    assert len(hint) == 1 and str(folder / "run.trec") in hint[0] and "--overwrite" in hint[0]
