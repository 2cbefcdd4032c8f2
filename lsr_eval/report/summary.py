"""Bookkeeping tables of a report: what each benchmark folder holds (rows by status) and each training run's log
(steps, first and final loss), so that the report counts everything it read."""

from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from lsr_eval.benchmark.status import Status, kind_of
from lsr_eval.report.loading import BenchmarkResults, TrainingRun
from lsr_eval.report.table import Table


def _int(v: float) -> str:
    return "" if math.isnan(v) else f"{v:,.0f}"


def _table(name: str, title: str, labels: dict[str, list[str]], values: dict[str, list[float]],
           formats: dict[str, object], notes: list[str]) -> Table:
    index = pd.RangeIndex(len(next(iter(labels.values()), [])))
    frame = pd.DataFrame(values, index=index, dtype="float64")
    text = pd.DataFrame({c: [formats[c](v) if not math.isnan(v) else "none" for v in frame[c]]
                         for c in frame.columns}, index=index, dtype=object)
    return Table(name, title, pd.DataFrame(labels, index=index), frame, text, notes)


def benchmarks_table(benchmarks: Iterable[BenchmarkResults]) -> Table:
    """One row per benchmark folder: file read, manifest date, rows, datasets, systems, rows by status."""
    benchmarks = list(benchmarks)
    status = [b.table["status"] for b in benchmarks]
    labels = {"benchmark": [b.name for b in benchmarks], "file": [b.source.name for b in benchmarks],
              "created": [str((b.manifest or {}).get("created", "no manifest")) for b in benchmarks]}
    values = {"rows": [len(b.table) for b in benchmarks], "datasets": [len(b.datasets) for b in benchmarks],
              "systems": [len(b.systems) for b in benchmarks],
              **{k.value: [int((s.map(kind_of) == k).sum()) for s in status]
                 for k in (Status.OK, Status.NOT_RUN, Status.FAILED)}}
    values["other status"] = [r - o - n - f for r, o, n, f in
                              zip(values["rows"], values["ok"], values["not run"], values["failed"])]
    return _table("benchmarks", "Benchmark folders read", labels, values, {c: _int for c in values},
                  ["rows = ok + not run + failed + other status"])


def training_table(runs: Iterable[TrainingRun]) -> Table:
    """One row per training run: backbone, k, log lines, steps kept, last step, first and final loss."""
    runs = list(runs)

    def loss(r: TrainingRun, pos: int) -> float:
        if "loss" not in r.log.columns:
            return math.nan
        values = pd.to_numeric(r.log["loss"], errors="coerce").dropna()
        return float(values.iloc[pos]) if not values.empty else math.nan

    labels = {"run": [r.name for r in runs], "backbone": [r.backbone or "unknown" for r in runs],
              "k": [f"{r.k:g}" if r.k is not None else "unknown" for r in runs]}
    values = {"log lines": [r.lines for r in runs], "steps kept": [len(r.log) for r in runs],
              "replaced": [r.replaced_steps for r in runs], "blank lines": [r.blank_lines for r in runs],
              "last step": [float(r.log["step"].max()) if len(r.log) else math.nan for r in runs],
              "first loss": [loss(r, 0) for r in runs], "final loss": [loss(r, -1) for r in runs]}
    formats = {c: _int for c in values} | {"first loss": lambda v: f"{v:.4f}", "final loss": lambda v: f"{v:.4f}"}
    return _table("training", "Training runs read", labels, values, formats,
                  ["log lines = steps kept + replaced (a step logged again by a resumed run: the later line is "
                   "kept) + blank lines"])
