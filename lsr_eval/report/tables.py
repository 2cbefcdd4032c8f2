"""The papers' tables, built from benchmark rows (:func:`lsr_eval.report.loading.combine` and
:func:`lsr_eval.report.linking.link_training` output).

Design notes: docs/design.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import pandas as pd

from lsr_eval.data.registry import BENCHMARKS, GROUPS
from lsr_eval.errors import ConfigError
from lsr_eval.report.formatting import MIB, NumberFormat
from lsr_eval.report.loading import EFFICIENCY_COLUMNS, measure_columns
from lsr_eval.report.marks import (
    ABSENT,
    BETTER_MARKER,
    DECLARED,
    MISSING,
    NOT_FUSION,
    CellNotes,
    best_cells,
    declared,
    tested_pairs,
    why_missing,
)
from lsr_eval.report.table import Table

#: Re-exported: what a cell says beyond its number lives in :mod:`lsr_eval.report.marks`.
__all__ = ["ABSENT", "MISSING", "NOT_FUSION", "BETTER_MARKER", "why_missing"]
FUSION_ONLY = "latency_parallel_"


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
    """An efficiency column: source column, header (with unit), unit conversion, formatter name and which way is
    better (``min``, or None where neither is: dimensions and total postings describe, they do not rank)."""

    source: str
    header: str
    scale: float
    kind: str  # NumberFormat method
    better: str | None = "min"


EFFICIENCY_DISPLAY = (
    EfficiencyColumn("latency_mean_ms", "latency mean (ms)", 1.0, "latency"),
    EfficiencyColumn("latency_p50_ms", "latency p50 (ms)", 1.0, "latency"),
    EfficiencyColumn("latency_p99_ms", "latency p99 (ms)", 1.0, "latency"),
    EfficiencyColumn("latency_parallel_mean_ms", "parallel latency mean (ms)", 1.0, "latency"),
    EfficiencyColumn("latency_ratio_bm25", "latency / same-engine BM25", 1.0, "ratio"),
    EfficiencyColumn("latency_search_ratio_bm25", "search / same-engine BM25 search", 1.0, "ratio"),
    EfficiencyColumn("flops", "FLOPs", 1.0, "flops"),
    EfficiencyColumn("query_encoder_gflop", "query encoder (GFLOP/query)", 1.0, "gflop"),
    EfficiencyColumn("postings_per_query", "postings in the query's lists", 1.0, "count"),
    EfficiencyColumn("postings", "postings", 1.0, "count", None),
    EfficiencyColumn("avg_q_dims", "query dims", 1.0, "dims", None),
    EfficiencyColumn("avg_d_dims", "doc dims", 1.0, "dims", None),
    EfficiencyColumn("index_bytes", "index (MiB)", 1 / MIB, "mib"),
)

#: What the latency columns measure (the note under a table that shows them).
LATENCY_NOTE = ("latency: per query, one query at a time on one thread, from the query text to the ranked list: "
                "query encoding + search (BM25: query analysis + search); mean, p50 and p99 over the measured "
                "queries")
#: Columns of costs that do not depend on the machine (or, for the ratios, cancel it out).
TRAVELLING = ("latency_ratio_bm25", "latency_search_ratio_bm25", "query_encoder_gflop", "postings_per_query")
#: What the costs that do not depend on the CPU are (the note under a table that shows them).
COST_NOTE = ("costs that travel between machines: 'latency / same-engine BM25' divides a mean latency by that of the "
             "BM25 measured in the same run on the same engine (same k, one thread); 'postings in the query's "
             "lists' is the sum of the document frequencies of the query's terms, an upper bound of the postings "
             "an engine scores (none of Anserini, PISA, Seismic and BMP reports the postings it scored); FLOPs: the "
             "expected multiplications of a query-document dot product; query encoder GFLOP: the matrix products "
             "of one query's forward pass (0 for a term table)")
#: The note of a table with best cells.
BEST_NOTE = "bold: the best number of its column (highest effectiveness, lowest cost)"


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


def dataset_measures(frame: pd.DataFrame, dataset: str, requested: Sequence[str] | None = None) -> list[str]:
    """The measures shown for ``dataset``: every measure column with a value in its rows (the measures its benchmark
    YAML asked for), the registry's official ones first in their order, then the others in the table's order; or
    those of ``requested`` that it has, in that order; an unknown requested measure raises."""
    available = measure_columns(frame.columns)
    rows = frame[frame["dataset"] == dataset]
    bench = BENCHMARKS.get(dataset)
    official = [m for m in (bench.measures if bench else ()) if m in available]
    have = [m for m in dict.fromkeys(official + available) if rows[m].notna().any()]
    if requested is None:
        return have or ([main_measure(frame, dataset)] if main_measure(frame, dataset) else [])
    check_measures(requested, available)
    return [m for m in requested if m in have]


def check_measures(requested: Sequence[str], available: Sequence[str]) -> None:
    """Refuse measures that no column holds, listing those the results have."""
    unknown = [m for m in requested if m not in available]
    if unknown:
        raise ConfigError(f"measures not in the results: {', '.join(unknown)}; they have: "
                          f"{', '.join(available) or 'none'}")


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


def result_rows(frame: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    """The frame's rows by (dataset, system)."""
    return {(r["dataset"], r["system"]): r for _, r in frame.iterrows()}


def _measure_cell(row: pd.Series | None, measure: str, fmt: NumberFormat, notes: CellNotes, where: str,
                  tested: set[tuple[str, str]]) -> tuple[float, str]:
    """(number in the table's unit or NaN, text) of ``measure`` in ``row``, with its significance mark."""
    if row is None:
        notes.missing(ABSENT, "", where)
        return math.nan, ABSENT
    value = row.get(measure, math.nan)
    if value is None or math.isnan(value):
        reason = why_missing(row["status"])
        notes.missing(reason, row["status"], where)
        return math.nan, reason
    mark = notes.significance_mark(row, measure, tested)
    return fmt.effectiveness_value(value), fmt.effectiveness(value) + mark


def _unit_note(fmt: NumberFormat) -> str:
    if fmt.scale == "percent":
        return f"effectiveness x100, {fmt.percent_decimals} decimal(s)"
    return f"effectiveness as fractions, {fmt.fraction_decimals} decimals"


def _table(name: str, title: str, labels: pd.DataFrame, values: dict[str, list[float]],
           text: dict[str, list[str]], notes: list[str], best: dict[str, list[bool]] | None = None) -> Table:
    index = pd.RangeIndex(len(labels))
    return Table(name, title, labels.set_index(index),
                 pd.DataFrame(values, index=index, dtype="float64"),
                 pd.DataFrame(text, index=index, dtype=object), notes,
                 pd.DataFrame(best, index=index, dtype=bool) if best is not None else None)


def _systems(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["system"]))


def datasets_table(frame: pd.DataFrame, measure: str, *, datasets: Sequence[str] | None = None,
                   name: str | None = None, title: str | None = None, fmt: NumberFormat = NumberFormat()) -> Table:
    """The BEIR papers' shape: one row per system, one column per dataset (``datasets``, default: those whose rows
    have ``measure``; a note names the others with their rows' statuses, e.g. datasets not available offline)
    holding ``measure`` with its significance mark, then their mean, taken over the datasets on which every system
    of the table has a value (the note names them and those left out); the best per column bold."""
    if measure not in measure_columns(frame.columns):
        raise ConfigError(f"measure {measure!r} is not in the results; they have: "
                          f"{', '.join(measure_columns(frame.columns)) or 'none'}")
    left_aside: list[str] = []
    if datasets is None:
        datasets = [d for d in dict.fromkeys(frame["dataset"])
                    if frame.loc[frame["dataset"] == d, measure].notna().any()]
        left_aside = [d for d in dict.fromkeys(frame["dataset"]) if d not in datasets]
    datasets = list(datasets)
    rows_frame = frame[frame["dataset"].isin(datasets)]
    systems = _systems(rows_frame)
    rows = result_rows(rows_frame)
    tested = tested_pairs(rows_frame, [measure])
    notes = CellNotes()
    values: dict[str, list[float]] = {d: [] for d in datasets}
    text: dict[str, list[str]] = {d: [] for d in datasets}
    labels = []
    for s in systems:
        labels.append(s + _label_mark(rows, datasets, s, notes))
        for d in datasets:
            v, t = _measure_cell(rows.get((d, s)), measure, fmt, notes, f"{d} / {s}", tested)
            values[d].append(v)
            text[d].append(t)
    complete = [d for d in datasets if all(not math.isnan(v) for v in values[d])]
    mean_header = "mean"
    lead = [_unit_note(fmt)]
    if len(datasets) > 1:
        raw = {d: [rows[(d, s)][measure] for s in systems] for d in complete}
        values[mean_header] = [fmt.effectiveness_value(math.fsum(raw[d][i] for d in complete) / len(complete))
                               if complete else math.nan for i in range(len(systems))]
        text[mean_header] = [fmt.effectiveness(math.fsum(raw[d][i] for d in complete) / len(complete))
                             if complete else "n/a" for i in range(len(systems))]
        left_out = [d for d in datasets if d not in complete]
        if not complete:
            lead.append(f"mean: n/a, no dataset has a {measure} value for every system")
        elif left_out:
            lead.append(f"mean: over the {len(complete)} of {len(datasets)} datasets on which every system has a "
                        f"{measure} value ({', '.join(complete)}); left out: {', '.join(left_out)}")
        else:
            lead.append(f"mean: over all {len(datasets)} datasets")
    if left_aside:
        lead.append(f"not shown, no {measure} value (e.g. not available when run): " + "; ".join(
            f"{d} ({_dataset_status(frame, d)})" for d in left_aside))
    best = {h: best_cells(values[h], text[h], "max") for h in values}
    if any(any(b) for b in best.values()):
        notes.best = BEST_NOTE
    return _table(name or f"datasets-{measure}", title or f"{measure} per dataset", pd.DataFrame({"system": labels}),
                  values, text, lead + notes.lines(), best)


def _dataset_status(frame: pd.DataFrame, dataset: str) -> str:
    """Why a dataset's rows have no number: their statuses, each once ("missing" for rows that ran)."""
    return "; ".join(dict.fromkeys(why_missing(s) if s == "ok" else str(s)
                                   for s in frame.loc[frame["dataset"] == dataset, "status"]))


def _label_mark(rows: dict[tuple, pd.Series], datasets: Sequence[str], system: str, notes: CellNotes) -> str:
    """The label mark of ``system`` (its precision) from its rows, recording each row's notes."""
    marks = [notes.row(rows[(d, system)], f"{system} on {d}") for d in datasets if (d, system) in rows]
    return next((m for m in marks if m), "")


def benchmark_tables(frame: pd.DataFrame, *, name: str = "benchmark", measures: Sequence[str] | None = None,
                     fmt: NumberFormat = NumberFormat(), label: str | None = None) -> list[Table]:
    """The tables of one benchmark's rows: on one dataset, systems x its measures (``name``); on several, one
    :func:`datasets_table` per measure (``name-<measure>``), the main measure's first. ``label``: the benchmark's
    name in the titles (default ``name``)."""
    label = label or name
    datasets = list(dict.fromkeys(frame["dataset"]))
    if measures is not None:  # those this benchmark has (several benchmarks' results may have others)
        have = [m for m in measures if m in measure_columns(frame.columns)]
        if not have:
            check_measures(measures, measure_columns(frame.columns))
        measures = have
    if len(datasets) == 1:
        return [efficiency_table(frame, datasets[0], measures=measures, costs=False, name=name,
                                 title=f"{label}: effectiveness on {datasets[0]}", fmt=fmt)]
    shown = list(measures) if measures is not None else list(dict.fromkeys(
        [m for m in (main_measure(frame, d) for d in datasets) if m]
        + [m for d in datasets for m in dataset_measures(frame, d)]))
    return [datasets_table(frame, m, name=f"{name}-{_slug(m)}", title=f"{label}: {m} per dataset", fmt=fmt)
            for m in shown if frame[m].notna().any()]


def _slug(measure: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "@.-" else "_" for ch in measure).strip("_")


def benchmark_table(frame: pd.DataFrame, *, name: str = "benchmark", title: str | None = None,
                    measure: str | None = None, fmt: NumberFormat = NumberFormat()) -> Table:
    """One table of a benchmark's rows: ``measure`` (default: the main measure) per dataset and system, systems as
    rows (on one dataset: every measure unless ``measure`` is given)."""
    measures = measure_columns(frame.columns)
    if measure is not None and measure not in measures:
        raise ConfigError(f"measure {measure!r} is not in the table; its measures: {', '.join(measures) or 'none'}")
    datasets = list(dict.fromkeys(frame["dataset"]))
    if len(datasets) == 1:
        return efficiency_table(frame, datasets[0], measures=[measure] if measure else None, costs=False, name=name,
                                title=title, fmt=fmt)
    measure = measure or main_measure(frame, datasets[0])
    return datasets_table(frame, measure, name=name, title=title or f"{name}: {measure} per dataset", fmt=fmt)


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
    rows = result_rows(frame)
    tested = tested_pairs(frame[frame["system"].isin([k[2] for k in keys])],
                          list(dict.fromkeys([c.measure for c in columns] + [group_measure])))
    notes = CellNotes()
    mean_header = f"{group.upper()} mean {group_measure}"
    headers = [c.header for c in columns] + [mean_header] + list(members)
    values: dict[str, list[float]] = {h: [] for h in headers}
    text: dict[str, list[str]] = {h: [] for h in headers}
    label_text = []
    for lab, k, system in keys:
        mine = [r for (_, s), r in rows.items() if s == system]
        mark = next((m for m in (notes.row(r, f"{system} on {r['dataset']}") for r in mine) if m), "")
        label_text.append((lab if counts[(lab, _k_text(k))] == 1 else f"{lab} [{system}]") + mark)
        for c in columns:
            v, t = _measure_cell(rows.get((c.dataset, system)), c.measure, fmt, notes, f"{c.dataset} / {system}",
                                 tested)
            values[c.header].append(v)
            text[c.header].append(t)
        present = []
        for d in members:
            row = rows.get((d, system))
            v, t = _measure_cell(row, group_measure, fmt, notes, f"{d} / {system}", tested)
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
    best = {h: best_cells(values[h], text[h], "max") for h in shown}
    if any(any(b) for b in best.values()):
        notes.best = BEST_NOTE
    title = "Rescaling k: in-domain and " + group.upper() + " effectiveness by " + label_col + " and k"
    return _table(name, title, labels, {h: values[h] for h in shown}, {h: text[h] for h in shown},
                  lead + notes.lines(), best)


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
                     costs: bool = True, name: str | None = None, title: str | None = None,
                     fmt: NumberFormat = NumberFormat()) -> Table:
    """Systems run on ``dataset`` -> ``measures`` (default: every measure its rows hold, :func:`dataset_measures`)
    with their significance marks, then (``costs``) the efficiency columns of :data:`EFFICIENCY_DISPLAY` that have
    a value for the dataset (the others are named in a note), declared costs marked; the best per column bold."""
    rows_frame = frame[frame["dataset"] == dataset]
    key = model_order(frame)
    rows_frame = rows_frame.loc[sorted(rows_frame.index, key=lambda i: key(rows_frame.loc[i]))]
    if rows_frame.empty:
        raise ConfigError(f"dataset {dataset!r} is not in the results; datasets: "
                          f"{', '.join(dict.fromkeys(frame['dataset']))}")
    measures = dataset_measures(frame, dataset, measures)
    eff = [c for c in EFFICIENCY_DISPLAY
           if costs and c.source in rows_frame.columns and rows_frame[c.source].notna().any()]
    absent = [c.header for c in EFFICIENCY_DISPLAY if c not in eff]
    tested = tested_pairs(rows_frame, list(measures))
    notes = CellNotes()
    headers = list(measures) + [c.header for c in eff]
    values: dict[str, list[float]] = {h: [] for h in headers}
    text: dict[str, list[str]] = {h: [] for h in headers}
    skip: dict[str, list[bool]] = {h: [] for h in headers}
    labels: dict[str, list[str]] = {"system": []}
    for _, row in rows_frame.iterrows():
        where = f"{dataset} / {row['system']}"
        labels["system"].append(str(row["system"]) + notes.row(row, str(row["system"])))
        for m in measures:
            v, t = _measure_cell(row, m, fmt, notes, where, tested)
            values[m].append(v)
            text[m].append(t)
            skip[m].append(False)
        for c in eff:
            raw = row[c.source]
            was_declared = declared(row, c.source) and not math.isnan(raw)
            skip[c.header].append(was_declared)
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
                text[c.header].append(formatter(raw * c.scale) + (DECLARED if was_declared else ""))
                if was_declared:
                    notes.declared_cost(row)
    if rows_frame["k"].notna().any():
        labels["k"] = [_k_text(k) for k in rows_frame["k"]]
    if "engine" in rows_frame.columns and (rows_frame["engine"].fillna("") != "").any():
        labels["engine"] = list(rows_frame["engine"].fillna(""))
    better = {m: "max" for m in measures} | {c.header: c.better for c in eff}
    best = {h: best_cells(values[h], text[h], better[h], skip[h]) for h in headers}
    if any(any(b) for b in best.values()):
        notes.best = BEST_NOTE
    lead = [_unit_note(fmt)]
    if absent and costs:
        lead.append(f"not recorded for {dataset}: {', '.join(absent)}")
    if any(c.source.startswith("latency_") for c in eff):
        lead.append(LATENCY_NOTE)
    if any(c.source in TRAVELLING for c in eff):
        lead.append(COST_NOTE)
    if "kind" in rows_frame.columns and eff and ((rows_frame["kind"] == "fusion") & rows_frame[
            [c.source for c in eff]].notna().any(axis=1)).any():
        from lsr_eval.efficiency.fusion_cost import RULE

        lead.append(RULE[0].upper() + RULE[1:] + "; latency columns: sequential")
    default_title = f"Effectiveness and efficiency on {dataset}" if costs else f"Effectiveness on {dataset}"
    return _table(name or f"efficiency-{dataset}", title or default_title, pd.DataFrame(labels), values, text,
                  lead + notes.lines(), best)
