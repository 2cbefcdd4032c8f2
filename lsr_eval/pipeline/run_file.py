"""A system whose run was made elsewhere (a published run, a colleague's dense run): its TREC file is read, checked
and evaluated with the dataset's measures, and a manifest records the file (path, size, sha256) and what it held,
so that a table row of an imported run is as traceable as one lsr-eval ran itself."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from lsr_eval.data.datasets import Dataset
from lsr_eval.data.trec_files import file_sha256
from lsr_eval.manifest import write_manifest
from lsr_eval.pipeline.result import SystemResult


def run_file(dataset: Dataset, path: str | os.PathLike, out: Path) -> SystemResult:
    """Read the run at ``path``, evaluate it on ``dataset``'s qrels with its measures (trec_eval -c), write
    ``metrics.json`` and ``manifest.json`` to ``out`` (the run itself stays where it is: its sha256 names it)."""
    from lsr_eval.evaluation import count_queries, evaluate, write_metrics
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.runs.trec import read_run

    path = Path(path).resolve()
    run = read_run(path)
    qrels = dataset.qrels()
    metrics = evaluate(qrels, run, dataset.measures)
    counts = count_queries(qrels, run)
    out.mkdir(parents=True, exist_ok=True)
    write_metrics(out, metrics)
    write_manifest(out, "run-file", {"dataset": dataset.describe(), "run": str(path)},
                   run={"path": str(path), "bytes": path.stat().st_size, "sha256": file_sha256(path)},
                   counts={"queries": len(run), "documents": sum(len(h) for h in run.values()),
                           "evaluation": asdict(counts)},
                   metrics=metrics, measures=list(dataset.measures), evaluation=evaluation_code(),
                   outputs=["metrics.json"])
    return SystemResult(metrics, run, out)
