"""Cells of the papers' tables: a system's measure on a dataset, or its mean over a dataset group (BEIR-13), with
why a cell is empty."""

from __future__ import annotations

import math

from lsr_eval.data.registry import GROUPS
from lsr_eval.report.marks import ABSENT, CellNotes, why_missing


def cell_value(rows: dict, dataset: str, system: str, measure: str, notes: CellNotes) -> tuple[float, str]:
    """(raw measure or NaN, why there is none) of ``system`` on ``dataset``."""
    row = rows.get((dataset, system))
    where = f"{dataset} / {system}"
    if row is None:
        notes.missing(ABSENT, "", where)
        return math.nan, ABSENT
    v = row.get(measure, math.nan)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        reason = why_missing(str(row["status"]))
        notes.missing(reason, str(row["status"]), where)
        return math.nan, reason
    return float(v), ""


def group_mean(rows: dict, group: str, system: str, measure: str, notes: CellNotes) -> tuple[float, str]:
    """(mean of ``measure`` over ``group``'s datasets, "") when all have a value, else (NaN, "n/a (n of N)")."""
    members = GROUPS[group]
    got = [cell_value(rows, d, system, measure, notes)[0] for d in members]
    have = [v for v in got if not math.isnan(v)]
    if len(have) == len(members):
        return math.fsum(have) / len(have), ""
    return math.nan, f"n/a ({len(have)} of {len(members)})"


def cell_part(rows: dict, dataset: str, system: str, measure: str, notes: CellNotes) -> tuple[float, str]:
    if dataset in GROUPS:
        return group_mean(rows, dataset, system, measure, notes)
    return cell_value(rows, dataset, system, measure, notes)
