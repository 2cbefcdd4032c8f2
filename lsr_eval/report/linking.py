"""Which training run produced each benchmark row, so that rows can be labelled by backbone and rescaling k.

A row links to run ``R`` (a folder ``train/R``) when its ``system`` is ``R``, or its ``model`` path has a component
``R`` right after a component ``train`` (``results/train/R/model``), or its ``model`` is R's backbone and its ``k``
is R's k. A row matching several runs is left unlinked and said so.
"""

from __future__ import annotations

import math
from pathlib import PurePath
from typing import Mapping

import pandas as pd

from lsr_eval.report.loading import TRAIN_DIR, TrainingRun


def _in_train_path(model: str, run: str) -> bool:
    parts = PurePath(model).parts
    return any(a == TRAIN_DIR and b == run for a, b in zip(parts, parts[1:]))


def _matches(row: pd.Series, run: TrainingRun) -> bool:
    model, k = row.get("model", ""), row.get("k", math.nan)
    if row["system"] == run.name or (model and _in_train_path(model, run.name)):
        return True
    return bool(model) and model == run.backbone and run.k is not None and k == run.k


def link_training(frame: pd.DataFrame, runs: Mapping[str, TrainingRun]) -> pd.DataFrame:
    """``frame`` with columns ``run`` (the linked run's name, "" when none) and ``backbone`` (a ``backbone`` column
    the table already has, else the linked run's backbone, else the system name). ``k`` is filled from the run
    where the row has none. ``attrs["link_notes"]`` lists the rows that matched several runs."""
    out = frame.copy()
    had_backbone = "backbone" in out.columns
    runs_col, backbones, ks, notes = [], [], [], []
    for _, row in out.iterrows():
        hits = [r for r in runs.values() if _matches(row, r)]
        if len(hits) > 1:
            notes.append(f"({row['dataset']}, {row['system']}) matches training runs "
                         f"{', '.join(r.name for r in hits)}; not linked")
            hits = []
        run = hits[0] if hits else None
        runs_col.append(run.name if run else "")
        own = str(row["backbone"]).strip() if had_backbone and isinstance(row["backbone"], str) else ""
        backbones.append(own or (run.backbone if run and run.backbone else row["system"]))
        k = row.get("k", math.nan)
        ks.append(run.k if run and run.k is not None and math.isnan(k) else k)
    out["run"] = runs_col
    out["backbone"] = backbones
    out["k"] = pd.Series(ks, index=out.index, dtype="float64")
    out.attrs = {**frame.attrs, "link_notes": notes}
    return out
