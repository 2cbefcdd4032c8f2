"""The rescaling study run by run: what each SPLADE training run with a rescaling k did and what its model scored,
as a paper reports a k grid (Jang et al., "Rescaling MLM-Head for Neural Sparse Retrieval", 2026), and the
inspect-head diagnoses behind the suggested k.

Design notes: docs/design.md."""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import pandas as pd

from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.loading import HeadDiagnosis, TrainingRun
from lsr_eval.report.marks import ABSENT, MISSING, best_cells
from lsr_eval.report.table import Table
from lsr_eval.report.tables import _table, datasets_in_order, main_measure
from lsr_eval.train.stability import WINDOW, stability

#: Effectiveness measures shown per dataset besides its main one, when the rows have them.
EXTRA_MEASURES = ("R@1000",)
#: Efficiency columns shown per dataset: (column, header, formatter, best direction).
COSTS = (("flops", "FLOPs", "flops", "min"), ("avg_d_dims", "doc dims", "dims", None))


def candidates(run: TrainingRun) -> int | None:
    """Documents each query is scored against in the run's InfoNCE loss: ``batch_size x (1 + n_negatives)`` with
    in-batch negatives, ``1 + n_negatives`` without; None when its manifest does not say."""
    config = (run.manifest or {}).get("config") or {}
    train, data, loss = (config.get(s) or {} for s in ("train", "data", "loss"))
    batch, negatives = train.get("batch_size"), data.get("n_negatives")
    if not isinstance(batch, int) or not isinstance(negatives, int):
        return None
    return batch * (1 + negatives) if loss.get("in_batch", False) else 1 + negatives


def _tail_mean(run: TrainingRun, key: str) -> float:
    if key not in run.log.columns:
        return math.nan
    values = pd.to_numeric(run.log[key], errors="coerce").dropna()
    return float(values.tail(WINDOW).mean()) if not values.empty else math.nan


class _Columns:
    """Value columns filled row by row (number or NaN, and the text shown), with the best direction of each."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}
        self.text: dict[str, list[str]] = {}
        self.direction: dict[str, str | None] = {}

    def add(self, row: int, header: str, value: float, text: str, direction: str | None = None) -> None:
        if header not in self.values:
            self.values[header], self.text[header] = [math.nan] * row, [""] * row
            self.direction[header] = direction
        self.values[header].append(value)
        self.text[header].append(text)

    def pad(self, rows: int) -> None:
        for h in self.values:
            self.values[h] += [math.nan] * (rows - len(self.values[h]))
            self.text[h] += ["n/a"] * (rows - len(self.text[h]))

    def table(self, name: str, title: str, labels: pd.DataFrame, notes: list[str]) -> Table:
        best = {h: best_cells(self.values[h], self.text[h], self.direction[h]) for h in self.values}
        return _table(name, title, labels, self.values, self.text, notes, best)


def runs_table(frame: pd.DataFrame, runs: Mapping[str, TrainingRun] | Iterable[TrainingRun], *,
               name: str = "rescaling-runs", fmt: NumberFormat = NumberFormat()) -> Table:
    """One row per training run with a rescaling k (see docs/design.md); ``frame``: benchmark rows with the ``run``
    column of :func:`lsr_eval.report.linking.link_training`."""
    runs = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    chosen = sorted((r for r in runs if r.k is not None),
                    key=lambda r: (str(r.backbone or r.name), r.k, r.name))
    cols = _Columns()
    yes_no = {True: "yes", False: "no"}
    dev_measures = list(dict.fromkeys(m for r in chosen for m in r.dev))
    linked = frame[frame["run"].isin([r.name for r in chosen])] if "run" in frame.columns else frame.iloc[:0]
    datasets = datasets_in_order(linked)
    without_rank = []
    for i, run in enumerate(chosen):
        cols.add(i, "steps", float(len(run.log)), f"{len(run.log):,}")
        c = candidates(run)
        if "rank" in run.log.columns and c is not None and c >= 2:
            st = stability(run.log.to_dict("records"), c)   # a NaN (logged null) counts as non-finite there
            cols.add(i, "rank loss, first 10", st.first_rank, f"{st.first_rank:.3g}")
            cols.add(i, "rank loss, last 10", st.last_rank, f"{st.last_rank:.3g}", "min")
            cols.add(i, "diverged", math.nan, yes_no[st.diverged])
            cols.add(i, "collapsed", math.nan, yes_no[st.collapsed])
            cols.add(i, "max grad norm", st.max_grad_norm, f"{st.max_grad_norm:.3g}")
        else:
            without_rank.append(run.name)
            for h in ("rank loss, first 10", "rank loss, last 10", "diverged", "collapsed", "max grad norm"):
                cols.add(i, h, math.nan, "n/a")
        for key, header in (("active_dims_q", "query dims, last 10"), ("active_dims_d", "doc dims, last 10")):
            v = _tail_mean(run, key)
            cols.add(i, header, v, fmt.dims(v) if not math.isnan(v) else "n/a")
        for m in dev_measures:
            v = run.dev.get(m, math.nan)
            cols.add(i, f"dev {m}", fmt.effectiveness_value(v) if not math.isnan(v) else v,
                     fmt.effectiveness(v) if not math.isnan(v) else "n/a", "max")
        mine = linked[linked["run"] == run.name]
        for d in datasets:
            row = mine[mine["dataset"] == d]
            row = row.iloc[0] if len(row) else None
            measures = [main_measure(linked, d), *(m for m in EXTRA_MEASURES if m in linked.columns)]
            for m in dict.fromkeys(m for m in measures if m):
                v = math.nan if row is None else float(row.get(m, math.nan))
                cols.add(i, f"{d} {m}", fmt.effectiveness_value(v) if not math.isnan(v) else v,
                         fmt.effectiveness(v) if not math.isnan(v) else (ABSENT if row is None else MISSING), "max")
            for column, header, kind, direction in COSTS:
                if column in linked.columns and linked.loc[linked["dataset"] == d, column].notna().any():
                    v = math.nan if row is None else float(row.get(column, math.nan))
                    cols.add(i, f"{d} {header}", v, getattr(fmt, kind)(v) if not math.isnan(v) else "n/a", direction)
    cols.pad(len(chosen))
    labels = pd.DataFrame({"backbone": [str(r.backbone or "?") for r in chosen],
                           "k": [f"{r.k:g}" for r in chosen], "run": [r.name for r in chosen]})
    notes = [f"training: ranking loss (log key 'rank') averaged over the first and last {WINDOW} logged steps; "
             "diverged: a non-finite loss, or the last mean not below the first; collapsed: the last mean within 5% "
             "of ln(candidates), the loss of scoring every candidate alike (lsr_eval.train.stability); dims: active "
             f"dimensions averaged over the last {WINDOW} logged steps",
             f"effectiveness as {fmt.effectiveness_unit}; dev: the run's dev split (model selection); other datasets: "
             "the benchmarks' rows of the run's model; bold: the best of its column"]
    if without_rank:
        notes.append("no stability (no 'rank' in the log or no batch size in the manifest): " + ", ".join(without_rank))
    return cols.table(name, "Rescaling runs: training stability, selection (dev) and results by k", labels, notes)


def diagnoses_table(diagnoses: Mapping[str, HeadDiagnosis], *, name: str = "head-diagnoses") -> Table:
    """One row per inspect-head diagnosis: the head at k = 1 and the suggested k (see docs/design.md)."""
    items = list(diagnoses.values())
    cols = _Columns()
    for i, d in enumerate(items):
        cols.add(i, "head norm", d.head_norm, f"{d.head_norm:.1f}")
        cols.add(i, "mean max logit", d.mean_max_logit, f"{d.mean_max_logit:.2f}")
        cols.add(i, "cross-text score", d.mean_score, f"{d.mean_score:,.1f}")
        cols.add(i, "active fraction", d.active_fraction, f"{d.active_fraction:.3f}")
        cols.add(i, "suggested k", d.suggested_k, f"{d.suggested_k:g}")
    labels = pd.DataFrame({"diagnosis": [d.label for d in items], "model": [d.model for d in items],
                           "tied input": [d.tied_input or "" for d in items]})
    rules = sorted({d.rule for d in items if d.rule})
    notes = ["the head as loaded (k = 1), lsr-eval inspect-head on its default texts: Frobenius norm of the decoder "
             "weight, mean over texts of the largest logit, cross-text score (the mean SPLADE score between two "
             "different texts; not a self-score), fraction of the vocabulary active; the rule bounds magnitudes "
             "only (a k at which the encoder input no longer tells texts apart can pass it)"]
    notes += [f"suggested k: {r}" for r in rules]
    return cols.table(name, "MLM-head diagnoses: head norm and the suggested k", labels, notes)
