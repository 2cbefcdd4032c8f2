"""A committed result as a rerunnable job, and the rerun compared row by row.

Each kind of result (a benchmark, one stage's run, a training run, a pipeline script's output, a report) has a
planner (:data:`PLANNERS`, by the manifest's ``stage``) that reads its manifests into a :class:`Job`: the committed
rows, the rows that cannot run here and why (missing model or data, needs a GPU: "could not run"; other data or
weights: "refused"), an estimate of the time, the command a reader types, and a function that reruns it into a fresh
folder and returns the new rows. :func:`reproduce_result` runs the job (or not: ``--max-minutes``) and compares.
"""

from __future__ import annotations

import importlib
import logging
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from lsr_eval.errors import LsrEvalError
from lsr_eval.reproduce.checks import Blocker
from lsr_eval.reproduce.compare import COULD_NOT_RUN, DIFFERS, FAILED, REPRODUCED, RowOutcome, compare
from lsr_eval.reproduce.paths import PathMap
from lsr_eval.reproduce.results import Result
from lsr_eval.reproduce.tolerance import Tolerances
from lsr_eval.settings import Validated, setting

log = logging.getLogger(__name__)

Rows = dict[str, dict[str, Any]]


class TimeLimit(LsrEvalError):
    """A rerun stopped at ``--max-minutes`` (its rows could not run)."""


@dataclass(frozen=True)
class Options(Validated):
    """How to reproduce: where reruns go, which cache they may use, tolerances, time limit, training."""

    out: Path = Path("work/reproduce")
    work_dir: Path | None = None   #: a cache of indexes and encodings to reuse (default: a fresh folder per result)
    tolerances: Tolerances = field(default_factory=Tolerances)
    max_minutes: float | None = setting(None, gt=0, unit="minutes", help="rerun only results estimated (from "
                                        "their recorded times) to take at most this long")
    train: bool = False
    paths: PathMap = field(default_factory=PathMap)
    threads: int = 2


@dataclass
class Job:
    """What rerunning one result takes (see the module doc)."""

    command: str
    rows: Rows
    blocked: dict[str, Blocker] = field(default_factory=dict)
    estimate_s: float | None = None
    run: Callable[[Path, Path], Rows] | None = None  #: (fresh output folder, work folder) -> the rerun's rows
    skip: dict[str, set[str]] = field(default_factory=dict)  #: per row, keys not comparable in this rerun
    notes: list[str] = field(default_factory=list)
    kind: str = ""
    stops_itself: bool = False  #: the rerun stops at --max-minutes by itself (so it may run without an estimate)


#: Planner module of each manifest ``stage`` (each has ``plan(result, options) -> Job``); a ``stage`` that is not
#: here and whose command is a study's script (or an old ``pipelines/`` one) is planned by
#: :mod:`lsr_eval.reproduce.pipeline`.
PLANNERS = {
    "benchmark": "lsr_eval.reproduce.benchmark",
    "bm25": "lsr_eval.reproduce.stage",
    "splade": "lsr_eval.reproduce.stage",
    "train": "lsr_eval.reproduce.training",
    "report": "lsr_eval.reproduce.derived",
    "reproduce": "lsr_eval.reproduce.derived",
}


def plan(result: Result, options: Options) -> Job:
    """The job of ``result`` (its planner chosen by the manifest's stage); a planner that raises makes one failed
    row (the other results are still planned)."""
    from lsr_eval.reproduce import pipeline  # it builds jobs of this module

    module = PLANNERS.get(result.stage)
    if module is None and pipeline.is_pipeline(result.manifest):
        module = pipeline.__name__
    if module is None:
        return Job(command="(none)", rows={"": {}}, kind=result.stage or "unknown",
                   blocked={"": Blocker(COULD_NOT_RUN, f"no way to rerun a result of stage {result.stage!r}")})
    try:
        return importlib.import_module(module).plan(result, options)
    except Exception as e:  # noqa: BLE001 - a manifest this code cannot read fails its own row
        log.exception("%s: could not plan its rerun", result.name)
        return Job(command="(none)", rows={"": {}}, kind=result.stage,
                   blocked={"": Blocker(FAILED, f"its manifests could not be read: {type(e).__name__}: {e}")})


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", name).strip("_") or "result"


def fresh_folder(path: Path) -> Path:
    """``path`` emptied (a previous reproduction of the same result is replaced)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def reproduce_result(result: Result, options: Options, job: Job | None = None) -> list[RowOutcome]:
    """Rerun ``result`` (unless nothing can run or it would take longer than ``options.max_minutes``) and compare
    every committed row with the rerun."""
    job = job or plan(result, options)
    outcome: dict[str, RowOutcome] = {}
    for row, b in job.blocked.items():
        outcome[row] = RowOutcome(result.name, row, b.status, b.reason)
    runnable = [r for r in job.rows if r not in outcome]
    if runnable and job.run is None:
        for row in runnable:
            outcome[row] = RowOutcome(result.name, row, COULD_NOT_RUN, "; ".join(job.notes) or "nothing to rerun")
        runnable = []
    limit = None if options.max_minutes is None else options.max_minutes * 60
    unknown = job.estimate_s is None and not job.stops_itself
    if runnable and limit is not None and (unknown or (job.estimate_s or 0) > limit):
        why = (f"longer than --max-minutes {options.max_minutes:g} (estimated {_minutes(job.estimate_s)} from the "
               "recorded times)" if job.estimate_s is not None else
               f"no recorded time to check against --max-minutes {options.max_minutes:g}")
        for row in runnable:
            outcome[row] = RowOutcome(result.name, row, COULD_NOT_RUN, why)
        runnable = []
    if runnable:
        out = fresh_folder(options.out / slug(result.name))
        work = options.work_dir or out / "work"
        t0 = time.perf_counter()
        log.info("reproducing %s into %s (work %s; estimated %s)", result.name, out, work,
                 _minutes(job.estimate_s) if job.estimate_s is not None else "unknown")
        try:
            new = job.run(out, work)
        except TimeLimit as e:
            new = None
            for row in runnable:
                outcome[row] = RowOutcome(result.name, row, COULD_NOT_RUN, str(e))
        except Exception as e:  # noqa: BLE001 - one result's failure is its rows' verdict, not the matrix's end
            if isinstance(e, LsrEvalError):
                log.error("%s: the rerun failed: %s", result.name, e)
            else:
                log.exception("%s: the rerun raised", result.name)
                e = f"{type(e).__name__}: {e}"
            new = None
            for row in runnable:
                outcome[row] = RowOutcome(result.name, row, FAILED, f"the rerun failed: {e}")
        log.info("%s: rerun took %s", result.name, _minutes(time.perf_counter() - t0))
        for row in runnable if new is not None else []:
            if row not in new:
                outcome[row] = RowOutcome(result.name, row, FAILED, "the rerun made no such row (see the log)")
                continue
            c = compare(job.rows[row], new[row], options.tolerances, skip=job.skip.get(row, ()))
            outcome[row] = RowOutcome(result.name, row, REPRODUCED if c.reproduced else DIFFERS,
                                      "; ".join(job.notes), c)
    return [outcome[r] for r in job.rows]
