"""Reusing a finished run: its ranking is kept, its metrics are not. They are recomputed from ``run.trec`` with
the evaluation code that runs now (cheap beside retrieval), so a fix to the evaluation reaches cached rows too;
``metrics.json`` and the manifest's ``metrics``, ``counts.evaluation`` and ``evaluation`` (which code computed them,
:func:`lsr_eval.evaluation.provenance.evaluation_code`) are rewritten, the rest of the manifest (the commit that
made the run) is kept. Changed values are logged and kept in the manifest as ``previous_metrics``."""

from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.data.types import Qrels
from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import update_manifest
from lsr_eval.pipeline.result import SystemResult

log = logging.getLogger(__name__)

RUN_FILE = "run.trec"


def reevaluate(folder: str | Path, qrels: Qrels, measures, done: Mapping[str, Any], run_file: str = RUN_FILE,
               evaluate: bool = True) -> SystemResult:
    """The finished run in ``folder`` (its manifest ``done``) with its metrics recomputed from its ``run_file``;
    ``evaluate=False`` returns the run alone, reading no label (a run kept unevaluated, such as a held-out test
    split's before its turn, stays so)."""
    from lsr_eval.evaluation import count_queries, write_metrics
    from lsr_eval.evaluation import evaluate as evaluate_run
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.runs.trec import read_run

    folder = Path(folder)
    if not (folder / run_file).exists():
        raise LsrEvalError(f"{folder} has a finished manifest but no {run_file}: rerun with --overwrite")
    log.info("reusing the finished run %s (made %s by commit %s)%s; remove its folder (or pass --overwrite) to run "
             "it again", folder / run_file, done.get("created", "at an unknown time"),
             str(done.get("commit") or "unknown")[:12], ": metrics recomputed from it" if evaluate else "")
    run = read_run(folder / run_file)
    if not evaluate:
        return SystemResult({}, run, folder, reused=True)
    metrics = evaluate_run(qrels, run, measures)
    old = dict(done.get("metrics") or {})
    changed = {m: [old.get(m), v] for m, v in metrics.items() if old.get(m) != v}
    if changed:
        log.warning("%s: metrics recomputed from the reused run differ from its manifest's: %s", folder,
                    ", ".join(f"{m} {a} -> {b}" for m, (a, b) in changed.items()))
    write_metrics(folder, metrics)
    counts = {**(done.get("counts") or {}), "evaluation": asdict(count_queries(qrels, run))}
    update_manifest(folder, metrics=metrics, counts=counts,
                    evaluation={**evaluation_code(), "reused_run": True,
                                "evaluated": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")},
                    previous_metrics=old if changed else done.get("previous_metrics"))
    return SystemResult(metrics, run, folder, reused=True,
                        columns=dict((done.get("approximation") or {}).get("columns") or {}))
