"""The points of an effectiveness-cost figure, decided before anything is drawn: which rows are drawn (and why the
others are not), each row's kind (marker), family (colour), short label, sweep curve and place on the Pareto front.

Design notes: docs/design.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePath

import pandas as pd

from lsr_eval.engines.registry import REFERENCE_ENGINE  # the engine left unmarked in labels (the note says so)
from lsr_eval.report.marks import DECLARED, MISSING, cell_number, cell_text, declared, precision_mark, why_missing
from lsr_eval.report.pareto import pareto_front


@dataclass(frozen=True)
class Kind:
    marker: str
    name: str


#: Kinds of system, their marker and legend name.
KINDS = {"sparse": Kind("o", "learned sparse model"), "bm25": Kind("s", "BM25"), "fusion": Kind("D", "fusion"),
         "run": Kind("^", "run file")}
#: Table ``kind`` values -> :data:`KINDS` key.
KIND_OF = {"splade": "sparse", "sparse": "sparse", "bm25": "bm25", "fusion": "fusion", "run": "run"}
#: A cost axis is logarithmic when its largest drawn value is at least this many times its smallest ("decades").
LOG_SPAN = 10.0
#: Cost columns of a fusion's parts run in parallel (max per query), by sequential cost column.
PARALLEL = {"latency_mean_ms": "latency_parallel_mean_ms", "latency_p50_ms": "latency_parallel_p50_ms",
            "latency_p99_ms": "latency_parallel_p99_ms"}


def row_kind(row: pd.Series) -> str:
    """A key of :data:`KINDS` (see docs/design.md)."""
    given = KIND_OF.get(cell_text(row, "kind"))
    if given:
        return given
    if cell_text(row, "model"):
        return "sparse"
    return "bm25" if str(row["system"]).lower().startswith("bm25") else "fusion"


def _model_name(model: str) -> str:
    parts = PurePath(model).parts
    if len(parts) > 1 and parts[-1] == "model":
        return parts[-2]
    return parts[-1] if parts else model


def row_family(row: pd.Series) -> str:
    """The colour group of a row (see docs/design.md)."""
    kind = row_kind(row)
    if kind == "bm25":
        return "BM25"
    if kind in ("fusion", "run"):
        return str(row["system"])
    if cell_text(row, "run") and cell_text(row, "backbone"):
        return cell_text(row, "backbone")
    model = cell_text(row, "model")
    return _model_name(model) if model else str(row["system"])


def row_label(row: pd.Series) -> str:
    """Short label drawn next to a point."""
    label = cell_text(row, "point") or str(row["system"])
    engine = cell_text(row, "engine")
    label = f"{label} [{engine}]" if engine and engine != REFERENCE_ENGINE else label
    return label + precision_mark(row)


@dataclass(frozen=True)
class Tradeoff:
    """What a trade-off figure draws: ``points`` (columns system, label, kind, family, sweep, x, y, parallel_x,
    engine, declared, source, on_front), the families in colour order, the rows not drawn (with the reason) and the
    front's systems."""

    points: pd.DataFrame
    families: list[str]
    skipped: list[str]
    front: list[str]
    log_x: bool


def tradeoff_points(frame: pd.DataFrame, dataset: str, cost_column: str, measure: str,
                    can_log: bool = True) -> Tradeoff:
    """The drawn points of ``measure`` against ``cost_column`` on ``dataset``; families are ordered over the whole
    ``frame`` (a family keeps its colour in every figure)."""
    rows = frame[frame["dataset"] == dataset]
    skipped, kept = [], []
    for _, row in rows.iterrows():
        c, v = row.get(cost_column, math.nan), row.get(measure, math.nan)
        bad = [name for name, x in ((cost_column, c), (measure, v)) if x is None or math.isnan(x)]
        if bad:
            reason = why_missing(row["status"])
            if reason == MISSING and row_kind(row) == "run" and bad == [cost_column]:
                reason = f"a run file without a declared {cost_column}: lsr-eval did not run it, so cannot measure it"
            elif reason == MISSING:
                reason = "no " + " and no ".join(bad)
            skipped.append(f"{row['system']} ({reason})")
        else:
            kept.append(row)
    positive = [float(r[cost_column]) for r in kept if r[cost_column] > 0]
    log_x = can_log and bool(positive) and max(positive) / min(positive) >= LOG_SPAN
    if log_x:
        for r in [r for r in kept if r[cost_column] <= 0]:
            skipped.append(f"{r['system']} ({cost_column}={r[cost_column]:g} cannot go on a log axis)")
        kept = [r for r in kept if r[cost_column] > 0]
    families = list(dict.fromkeys(row_family(r) for _, r in frame.iterrows()))
    parallel = PARALLEL.get(cost_column)
    records = []
    for r in kept:
        sweep = cell_text(r, "sweep")
        par = r.get(parallel, math.nan) if parallel else math.nan
        records.append({"system": r["system"], "label": row_label(r), "kind": row_kind(r), "family": row_family(r),
                        "sweep": sweep, "setting": _setting(r, sweep), "x": float(r[cost_column]),
                        "y": float(r[measure]),
                        "parallel_x": float(par) if par is not None and not math.isnan(par) else math.nan,
                        "engine": cell_text(r, "engine"), "declared": declared(r, cost_column),
                        "source": cell_text(r, "cost_source")})
    points = pd.DataFrame(records, columns=["system", "label", "kind", "family", "sweep", "setting", "x", "y",
                                            "parallel_x", "engine", "declared", "source"])
    points["label"] = [f"{lab}{DECLARED}" if d else lab for lab, d in zip(points["label"], points["declared"])]
    for _, same in points.groupby(["x", "y"], sort=False):
        if len(same) > 1:  # one label for points drawn on top of each other
            points.loc[same.index[0], "label"] = " = ".join(same["label"])
            points.loc[same.index[1:], "label"] = ""
    front_idx = pareto_front(list(points["x"]), list(points["y"])) if len(points) else []
    points["on_front"] = [i in front_idx for i in range(len(points))]
    return Tradeoff(points, families, skipped, [points.at[i, "system"] for i in front_idx], log_x)


def _setting(row: pd.Series, sweep: str) -> float:
    """The value a sweep point sets (its first swept key), for ordering the curve; NaN for other rows."""
    if not sweep or ":" not in sweep:
        return math.nan
    return cell_number(row, sweep.split(":", 1)[1].split("+")[0])


def sweep_curves(points: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each sweep's points (``<system>:<keys>``) by the setting they sweep, then the swept system's point."""
    curves = {}
    for sweep in dict.fromkeys(s for s in points["sweep"] if s):
        base = sweep.split(":", 1)[0]
        mine = points[points["sweep"] == sweep].sort_values(["setting", "x"])
        curves[sweep] = pd.concat([mine, points[points["system"] == base]])
    return curves
