"""The papers' tables, built from benchmark rows (:func:`lsr_eval.report.loading.combine` and
:func:`lsr_eval.report.linking.link_training` output).

- :func:`benchmark_table`: datasets x systems, each dataset's main measure with significance markers;
- :func:`rescaling_table`: backbone x k -> MS MARCO RR@10, DL19 nDCG@10, BEIR-13 mean nDCG@10 and each BEIR
  dataset (Jang et al., "Rescaling MLM-Head for Neural Sparse Retrieval", 2026); the mean only when all 13 are there;
- :func:`efficiency_table`: system -> effectiveness, latency, FLOPs, active dimensions, index size on one dataset
  (as Lassance & Clinchant, "An Efficiency Study for SPLADE Models", SIGIR 2022).

A cell without a number says why: the row's status ("not run", "failed"), "missing" (the row is ok but has no
value for that column) or "absent" (no row for that dataset and system); the notes under each table explain them
and list failure reasons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import pandas as pd

from lsr_eval.data.registry import BENCHMARKS, GROUPS
from lsr_eval.errors import ConfigError
from lsr_eval.report.formatting import MIB, NumberFormat
from lsr_eval.report.loading import EFFICIENCY_COLUMNS, SIG_SUFFIX, measure_columns
from lsr_eval.report.table import Table

ABSENT = "absent"
MISSING = "missing"
#: Cell of a fusion-only column (parts run in parallel) in another system's row.
NOT_FUSION = "n/a"
FUSION_ONLY = "latency_parallel_"
#: Significance marker meaning "significantly better than the baseline after Bonferroni correction".
BETTER_MARKER = "†"


@dataclass(frozen=True)
class Column:
    """A rescaling-table column: ``measure`` on ``dataset``, headed ``header``."""

    header: str
    dataset: str
    measure: str


#: The rescaling table's in-domain columns.
RESCALING_COLUMNS = (Column("MS MARCO RR@10", "msmarco-dev", "RR@10"), Column("DL19 nDCG@10", "dl19", "nDCG@10"))


@dataclass(frozen=True)
class EfficiencyColumn:
    """An efficiency column: source column, header (with unit), unit conversion and formatter name."""

    source: str
    header: str
    scale: float
    kind: str  # NumberFormat method


EFFICIENCY_DISPLAY = (
    EfficiencyColumn("latency_mean_ms", "latency mean (ms)", 1.0, "latency"),
    EfficiencyColumn("latency_p50_ms", "latency p50 (ms)", 1.0, "latency"),
    EfficiencyColumn("latency_p99_ms", "latency p99 (ms)", 1.0, "latency"),
    EfficiencyColumn("latency_parallel_mean_ms", "parallel latency mean (ms)", 1.0, "latency"),
    EfficiencyColumn("flops", "FLOPs", 1.0, "flops"),
    EfficiencyColumn("postings_per_query", "postings per query", 1.0, "count"),
    EfficiencyColumn("postings", "postings", 1.0, "count"),
    EfficiencyColumn("avg_q_dims", "query dims", 1.0, "dims"),
    EfficiencyColumn("avg_d_dims", "doc dims", 1.0, "dims"),
    EfficiencyColumn("index_bytes", "index (MiB)", 1 / MIB, "mib"),
)


def why_missing(status: str) -> str:
    """What a cell of a row with ``status`` shows when it has no number."""
    if status == "ok":
        return MISSING
    if status.startswith("failed"):
        return "failed"
    return status


def main_measure(frame: pd.DataFrame, dataset: str) -> str | None:
    """The measure a dataset is reported by: its registry's first official measure when the table has that
    column, else the first measure column with a value for the dataset, else the first measure column, else
    None (the table has no measure column)."""
    measures = measure_columns(frame.columns)
    bench = BENCHMARKS.get(dataset)
    if bench is not None and bench.measures[0] in measures:
        return bench.measures[0]
    rows = frame[frame["dataset"] == dataset]
    for m in measures:
        if rows[m].notna().any():
            return m
    return measures[0] if measures else None


def datasets_in_order(frame: pd.DataFrame) -> list[str]:
    """The datasets of ``frame``: the registry's in its order (msmarco-dev, dl19, BEIR), then the others as they
    appear."""
    known = list(BENCHMARKS)
    return sorted(dict.fromkeys(frame["dataset"]), key=lambda d: known.index(d) if d in known else len(known))


def efficiency_datasets(frame: pd.DataFrame) -> list[str]:
    """The datasets (:func:`datasets_in_order`) with a value in some efficiency column."""
    cols = [c for c in EFFICIENCY_COLUMNS if c in frame.columns]
    return [d for d in datasets_in_order(frame) if frame.loc[frame["dataset"] == d, cols].notna().any().any()]


def group_column(frame: pd.DataFrame) -> str:
    """The column naming a model family: ``backbone`` (see :mod:`lsr_eval.report.linking`) if any, else ``system``."""
    return "backbone" if "backbone" in frame.columns else "system"


def model_order(frame: pd.DataFrame) -> Callable[[pd.Series], tuple]:
    """Sort key of rows: their family (:func:`group_column`) in order of first appearance in ``frame``, then k
    (rows without k first), so that tables and figures list models alike whatever dataset they show."""
    col = group_column(frame)
    rank = {g: i for i, g in enumerate(dict.fromkeys(frame[col]))}
    return lambda row: (rank.get(row[col], len(rank)), -math.inf if math.isnan(row["k"]) else row["k"])


class _Notes:
    """Collects what the cells of one table need explained."""

    def __init__(self) -> None:
        self.failures: dict[str, list[str]] = {}
        self.reasons: set[str] = set()
        self.markers: dict[str, set[str]] = {}

    def missing(self, reason: str, status: str, where: str) -> None:
        self.reasons.add(reason)
        if reason == "failed":
            self.failures.setdefault(status, [])
            if where not in self.failures[status]:
                self.failures[status].append(where)

    def marker(self, marker: str, baseline: str) -> None:
        if marker:
            self.markers.setdefault(marker, set()).add(baseline or "not named")

    def lines(self) -> list[str]:
        out = []
        for marker, baselines in sorted(self.markers.items()):
            meaning = ("significantly better than" if marker == BETTER_MARKER
                       else "significance marker (from the <measure>_sig columns) against")
            out.append(f"{marker}: {meaning} the baseline {', '.join(sorted(baselines))}"
                       + (" after Bonferroni correction" if marker == BETTER_MARKER else ""))
        explained = {ABSENT: "absent: the results hold no row for this dataset and system",
                     MISSING: "missing: the row ran (status ok) but has no value for this column",
                     "not run": "not run: the row's status says it was not run",
                     NOT_FUSION: "n/a: parts in parallel apply to fusions only"}
        out += [explained[r] for r in (ABSENT, MISSING, "not run", NOT_FUSION) if r in self.reasons]
        for status, where in self.failures.items():
            out.append(f"{status} ({'; '.join(where)})")
        out += sorted(f"{r}: status of the row" for r in self.reasons - set(explained) - {"failed"})
        return out


def _rows_by_key(frame: pd.DataFrame, keys: Sequence[str]) -> dict[tuple, pd.Series]:
    return {tuple(r[k] for k in keys): r for _, r in frame.iterrows()}


def _measure_cell(row: pd.Series | None, measure: str, fmt: NumberFormat, notes: _Notes, where: str,
                  markers: bool = True) -> tuple[float, str]:
    """(number in the table's unit or NaN, text) of ``measure`` in ``row``."""
    if row is None:
        notes.missing(ABSENT, "", where)
        return math.nan, ABSENT
    value = row.get(measure, math.nan)
    if value is None or math.isnan(value):
        reason = why_missing(row["status"])
        notes.missing(reason, row["status"], where)
        return math.nan, reason
    marker = str(row.get(measure + SIG_SUFFIX, "") or "") if markers else ""
    notes.marker(marker, str(row.get("baseline", "") or ""))
    return fmt.effectiveness_value(value), fmt.effectiveness(value) + marker


def _unit_note(fmt: NumberFormat) -> str:
    if fmt.scale == "percent":
        return f"effectiveness x100, {fmt.percent_decimals} decimal(s)"
    return f"effectiveness as fractions, {fmt.fraction_decimals} decimals"


def _table(name: str, title: str, labels: pd.DataFrame, values: dict[str, list[float]],
           text: dict[str, list[str]], notes: list[str]) -> Table:
    index = pd.RangeIndex(len(labels))
    return Table(name, title, labels.set_index(index),
                 pd.DataFrame(values, index=index, dtype="float64"),
                 pd.DataFrame(text, index=index, dtype=object), notes)


def benchmark_table(frame: pd.DataFrame, *, name: str = "benchmark", title: str | None = None,
                    measure: str | None = None, fmt: NumberFormat = NumberFormat()) -> Table:
    """Datasets (rows, in order of appearance) x systems (columns): each dataset's :func:`main_measure` (or
    ``measure`` for all) with the row's significance marker."""
    measures = measure_columns(frame.columns)
    if measure is not None and measure not in measures:
        raise ConfigError(f"measure {measure!r} is not in the table; its measures: {', '.join(measures) or 'none'}")
    datasets = list(dict.fromkeys(frame["dataset"]))
    systems = list(dict.fromkeys(frame["system"]))
    rows = _rows_by_key(frame, ("dataset", "system"))
    notes = _Notes()
    used = {d: measure or main_measure(frame, d) for d in datasets}
    values: dict[str, list[float]] = {s: [] for s in systems}
    text: dict[str, list[str]] = {s: [] for s in systems}
    for d in datasets:
        for s in systems:
            if used[d] is None:
                v, t = math.nan, "no measure"
            else:
                v, t = _measure_cell(rows.get((d, s)), used[d], fmt, notes, f"{d} / {s}")
            values[s].append(v)
            text[s].append(t)
    labels = pd.DataFrame({"dataset": datasets, "measure": [used[d] or "none" for d in datasets]})
    return _table(name, title or f"{name}: main measure per dataset", labels, values, text,
                  [_unit_note(fmt), *notes.lines()])


def _k_text(k: float) -> str:
    return "" if math.isnan(k) else f"{k:g}"


def rescaling_table(frame: pd.DataFrame, *, columns: Iterable[Column] = RESCALING_COLUMNS,
                    group: str = "beir-13", group_measure: str = "nDCG@10", systems: Sequence[str] | None = None,
                    name: str = "rescaling", fmt: NumberFormat = NumberFormat()) -> Table:
    """Backbone x k (rows: the ``backbone`` column, else ``system``; rows with a rescaling k, or the rows of
    ``systems``) -> ``columns``, then the mean of ``group_measure`` over the datasets of ``group`` (only when all
    of them have a value; else "n/a (n of N)"), then each dataset of the group.

    Rows of different systems with the same backbone and k are labelled ``backbone [system]``."""
    if group not in GROUPS:
        raise ConfigError(f"group {group!r}: expected one of {', '.join(GROUPS)}")
    columns = list(columns)
    members = GROUPS[group]
    label_col = "backbone" if "backbone" in frame.columns else "system"
    if systems is not None:
        unknown = sorted(set(systems) - set(frame["system"]))
        if unknown:
            raise ConfigError(f"systems not in the results: {', '.join(unknown)}")
        chosen = frame[frame["system"].isin(systems)]
    else:
        chosen = frame[frame["k"].notna()]
    # one table row per (label, k, system); the system is shown only where a (label, k) has several
    keys = list(dict.fromkeys(zip(chosen[label_col], chosen["k"], chosen["system"])))
    order = {lab: i for i, lab in enumerate(dict.fromkeys(k[0] for k in keys))}
    keys.sort(key=lambda t: (order[t[0]], math.inf if math.isnan(t[1]) else t[1]))
    counts: dict[tuple, int] = {}
    for lab, k, _ in keys:
        counts[(lab, _k_text(k))] = counts.get((lab, _k_text(k)), 0) + 1
    rows = _rows_by_key(frame, ("dataset", "system"))
    notes = _Notes()
    mean_header = f"{group.upper()} mean {group_measure}"
    headers = [c.header for c in columns] + [mean_header] + list(members)
    values: dict[str, list[float]] = {h: [] for h in headers}
    text: dict[str, list[str]] = {h: [] for h in headers}
    label_text = []
    for lab, k, system in keys:
        label_text.append(lab if counts[(lab, _k_text(k))] == 1 else f"{lab} [{system}]")
        for c in columns:
            v, t = _measure_cell(rows.get((c.dataset, system)), c.measure, fmt, notes, f"{c.dataset} / {system}")
            values[c.header].append(v)
            text[c.header].append(t)
        present = []
        for d in members:
            row = rows.get((d, system))
            v, t = _measure_cell(row, group_measure, fmt, notes, f"{d} / {system}")
            values[d].append(v)
            text[d].append(t)
            if not math.isnan(v):
                present.append(row[group_measure])
        if len(present) == len(members):
            mean = sum(present) / len(present)
            values[mean_header].append(fmt.effectiveness_value(mean))
            text[mean_header].append(fmt.effectiveness(mean))
        else:
            values[mean_header].append(math.nan)
            text[mean_header].append(f"n/a ({len(present)} of {len(members)})")
    labels = pd.DataFrame({label_col: label_text, "k": [_k_text(k) for _, k, _ in keys]})
    empty = [h for h in headers if not any(not math.isnan(v) for v in values[h])]
    shown = [h for h in headers if h not in empty]
    lead = [_unit_note(fmt)]
    if mean_header in shown:
        lead.append(f"{mean_header}: mean over the {len(members)} datasets of {group}, given only when all have a "
                    f"value (n/a (n of {len(members)}) otherwise)")
    if any(d in shown for d in members):
        lead.append(f"dataset columns: {group_measure}")
    if empty:
        lead.append("not shown, no row has a number there: " + "; ".join(
            f"{', '.join(hs)} ({why})" for why, hs in _group_by_reason(empty, text, mean_header, len(members))))
        # only the reasons of cells still shown are explained under the table
        notes.reasons = {t for h in shown for t in text[h] if t in (ABSENT, MISSING, "not run")} | (
            {"failed"} if notes.failures else set())
    title = "Rescaling k: in-domain and " + group.upper() + " effectiveness by " + label_col + " and k"
    return _table(name, title, labels, {h: values[h] for h in shown}, {h: text[h] for h in shown},
                  lead + notes.lines())


def _group_by_reason(headers: list[str], text: dict[str, list[str]], mean_header: str,
                     members: int) -> list[tuple[str, list[str]]]:
    """Empty columns grouped by why they are empty (the reasons their cells give), in column order."""
    words = {ABSENT: "no row for the dataset", MISSING: "rows ran but have no value", "not run": "not run",
             "failed": "failed"}
    groups: dict[str, list[str]] = {}
    for h in headers:
        if h == mean_header:
            why = f"needs all {members} datasets"
        else:
            why = " or ".join(words.get(t, t) for t in dict.fromkeys(text[h])) or "no rows"
        groups.setdefault(why, []).append(h)
    return list(groups.items())


def efficiency_table(frame: pd.DataFrame, dataset: str, *, measures: Sequence[str] | None = None,
                     name: str | None = None, fmt: NumberFormat = NumberFormat()) -> Table:
    """Systems run on ``dataset`` -> ``measures`` (default: the dataset's official measures that the table holds,
    else its main measure), then the efficiency columns of :data:`EFFICIENCY_DISPLAY` that have a value for the
    dataset (the others are named in a note)."""
    rows_frame = frame[frame["dataset"] == dataset]
    key = model_order(frame)
    rows_frame = rows_frame.loc[sorted(rows_frame.index, key=lambda i: key(rows_frame.loc[i]))]
    if rows_frame.empty:
        raise ConfigError(f"dataset {dataset!r} is not in the results; datasets: "
                          f"{', '.join(dict.fromkeys(frame['dataset']))}")
    available = measure_columns(frame.columns)
    if measures is None:
        bench = BENCHMARKS.get(dataset)
        measures = [m for m in (bench.measures if bench else ()) if m in available]
        if not measures:
            main = main_measure(frame, dataset)
            measures = [main] if main else []
    else:
        unknown = [m for m in measures if m not in available]
        if unknown:
            raise ConfigError(f"measures not in the table: {', '.join(unknown)}; its measures: "
                              f"{', '.join(available) or 'none'}")
    eff = [c for c in EFFICIENCY_DISPLAY if c.source in rows_frame.columns and rows_frame[c.source].notna().any()]
    absent = [c.header for c in EFFICIENCY_DISPLAY if c not in eff]
    notes = _Notes()
    headers = list(measures) + [c.header for c in eff]
    values: dict[str, list[float]] = {h: [] for h in headers}
    text: dict[str, list[str]] = {h: [] for h in headers}
    for _, row in rows_frame.iterrows():
        where = f"{dataset} / {row['system']}"
        for m in measures:
            v, t = _measure_cell(row, m, fmt, notes, where)
            values[m].append(v)
            text[m].append(t)
        for c in eff:
            raw = row[c.source]
            if c.source.startswith(FUSION_ONLY) and str(row.get("kind", "")) != "fusion" and math.isnan(raw):
                notes.reasons.add(NOT_FUSION)
                values[c.header].append(math.nan)
                text[c.header].append(NOT_FUSION)
            elif math.isnan(raw):
                reason = why_missing(row["status"])
                notes.missing(reason, row["status"], where)
                values[c.header].append(math.nan)
                text[c.header].append(reason)
            else:
                formatter: Callable[[float], str] = getattr(fmt, c.kind)
                values[c.header].append(raw * c.scale)
                text[c.header].append(formatter(raw * c.scale))
    labels = {"system": list(rows_frame["system"])}
    if rows_frame["k"].notna().any():
        labels["k"] = [_k_text(k) for k in rows_frame["k"]]
    if "engine" in rows_frame.columns and (rows_frame["engine"].fillna("") != "").any():
        labels["engine"] = list(rows_frame["engine"].fillna(""))
    lead = [_unit_note(fmt)]
    if absent:
        lead.append(f"not recorded for {dataset}: {', '.join(absent)}")
    if "kind" in rows_frame.columns and ((rows_frame["kind"] == "fusion") & rows_frame[
            [c.source for c in eff]].notna().any(axis=1)).any():
        from lsr_eval.efficiency.fusion_cost import RULE

        lead.append(RULE[0].upper() + RULE[1:] + "; latency columns: sequential")
    return _table(name or f"efficiency-{dataset}", f"Effectiveness and efficiency on {dataset}",
                  pd.DataFrame(labels), values, text, lead + notes.lines())
