"""The best rescaling k of each backbone, and the norm of the backbone's MLM head, for the "head norm against
best k" figure (does a larger head need a larger k? Jang et al., "Rescaling MLM-Head for Neural Sparse
Retrieval", 2026).

Design notes: docs/design.md."""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import pandas as pd

from lsr_eval.errors import ConfigError
from lsr_eval.report.loading import TrainingRun, find_key
from lsr_eval.report.table import Table

#: Manifest keys holding the backbone's head norm before rescaling.
HEAD_NORM_KEYS = ("head_norm_before", "norm_before", "initial_head_norm")
#: Criteria tried in order when none is given: the first column of the rescaling table with a value.
DEFAULT_CRITERIA = ("MS MARCO RR@10", "DL19 nDCG@10", "BEIR-13 mean nDCG@10")
#: The dev measure that chooses the best k when runs have a dev evaluation.
DEV_MEASURE = "nDCG@10"


def choose_criterion(table: Table, criterion: str | None = None,
                     preference: Sequence[str] = DEFAULT_CRITERIA) -> str:
    """``criterion`` (checked to be a column of ``table``), else the first of ``preference`` with a value."""
    if criterion is not None:
        if criterion not in table.values.columns:
            raise ConfigError(f"criterion {criterion!r} is not a column of table {table.name}; columns: "
                              f"{', '.join(map(str, table.values.columns))}")
        return criterion
    for c in preference:
        if c in table.values.columns and table.values[c].notna().any():
            return c
    raise ConfigError(f"table {table.name} has no value in any of {', '.join(preference)}")


def best_k(table: Table, criterion: str) -> pd.DataFrame:
    """Per label of the rescaling ``table`` (its first label column): ``best_k``, its ``value`` in ``criterion``,
    the ``ks`` with a value, and ``ks_without`` (k values whose cell has no number)."""
    label = table.labels.columns[0]
    ks = pd.to_numeric(table.labels["k"], errors="coerce")
    rows = []
    for name in dict.fromkeys(table.labels[label]):
        mask = (table.labels[label] == name) & ks.notna()
        vals = table.values.loc[mask, criterion]
        have = vals.dropna()
        if have.empty:
            rows.append({"backbone": name, "best_k": math.nan, "value": math.nan, "ks": [],
                         "ks_without": sorted(ks[mask])})
            continue
        top = have.max()
        rows.append({"backbone": name, "best_k": float(min(ks[have.index[have == top]])), "value": float(top),
                     "ks": sorted(float(k) for k in ks[have.index]),
                     "ks_without": sorted(float(k) for k in ks[vals.index[vals.isna()]])})
    return pd.DataFrame(rows, columns=["backbone", "best_k", "value", "ks", "ks_without"])


def best_k_on_dev(runs: Iterable[TrainingRun], measure: str = DEV_MEASURE) -> pd.DataFrame:
    """:func:`best_k`'s frame from the runs' dev evaluations: per backbone, the k of the run highest in dev
    ``measure`` (ties: the smallest k); ``ks_without``: k of runs without that dev value."""
    rows = []
    mine: dict[str, list[TrainingRun]] = {}
    for r in runs:
        if r.k is not None and r.backbone is not None:
            mine.setdefault(r.backbone, []).append(r)
    for backbone, rs in mine.items():
        have = [(r.k, r.dev[measure]) for r in rs if measure in r.dev]
        without = sorted(r.k for r in rs if measure not in r.dev)
        if not have:
            rows.append({"backbone": backbone, "best_k": math.nan, "value": math.nan, "ks": [], "ks_without": without})
            continue
        top = max(v for _, v in have)
        rows.append({"backbone": backbone, "best_k": float(min(k for k, v in have if v == top)), "value": float(top),
                     "ks": sorted(float(k) for k, _ in have), "ks_without": without})
    return pd.DataFrame(rows, columns=["backbone", "best_k", "value", "ks", "ks_without"])


def suggested_k(backbone: str, runs: Iterable[TrainingRun]) -> float:
    """The k of ``backbone``'s run that took inspect-head's suggestion (NaN when none did)."""
    for r in runs:
        if r.backbone == backbone and r.k is not None and r.manifest and \
                find_key(r.manifest, ("rescale_rule",), lambda v: v == "suggested") is not None:
            return float(r.k)
    return math.nan


def _first_logged(run: TrainingRun, key: str) -> float | None:
    if key not in run.log.columns:
        return None
    values = pd.to_numeric(run.log[key], errors="coerce").dropna()
    return float(values.iloc[0]) if not values.empty else None


def head_norm(backbone: str, runs: Iterable[TrainingRun]) -> tuple[float, str] | tuple[None, str]:
    """(norm, where it came from) of ``backbone``'s head before rescaling (see docs/design.md)."""
    mine = [r for r in runs if r.backbone == backbone]
    if not mine:
        return None, "no training run of this backbone"
    for r in mine:
        value = find_key(r.manifest, HEAD_NORM_KEYS, lambda v: isinstance(v, (int, float)) and v > 0)
        if value is not None:
            return float(value), f"manifest of run {r.name}"
    for r in mine:
        first = _first_logged(r, "head_norm")
        if r.k == 1 and first is not None:
            return first, f"first logged head_norm of run {r.name} (k=1)"
    for r in mine:
        first = _first_logged(r, "head_norm")
        if r.k is not None and first is not None:
            return first * r.k, f"first logged head_norm of run {r.name} x k={r.k:g}"
    return None, "no head norm in the manifests or logs of its runs"


def head_norm_points(table: Table | None, runs: Mapping[str, TrainingRun] | Iterable[TrainingRun],
                     criterion: str | None = None) -> pd.DataFrame:
    """:func:`best_k` of each backbone (or :func:`best_k_on_dev`, see docs/design.md) joined with its
    :func:`head_norm` (columns ``head_norm``, ``source``), its :func:`suggested_k` and the ``criterion`` used."""
    runs = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    if criterion is None and any(DEV_MEASURE in r.dev for r in runs if r.k is not None):
        criterion, points = f"dev {DEV_MEASURE}", best_k_on_dev(runs)
    elif table is None:
        raise ConfigError("no best k: no benchmark row has a rescaling k and no run has a dev evaluation")
    else:
        criterion = choose_criterion(table, criterion)
        points = best_k(table, criterion)
    norms = [head_norm(b, runs) for b in points["backbone"]]
    points["head_norm"] = [n if n is not None else math.nan for n, _ in norms]
    points["source"] = [s for _, s in norms]
    points["suggested_k"] = [suggested_k(b, runs) for b in points["backbone"]]
    points["criterion"] = criterion
    return points
