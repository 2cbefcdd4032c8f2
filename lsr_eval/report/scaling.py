"""Engines compared across collection sizes: mean latency (log) against documents, one line per engine, setting,
query setting and k; and recall against mean latency at one size. Each figure is saved with ``figure.csv``, the
numbers it draws, so that a reader (or a test) can check a figure without reading pixels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from lsr_eval.errors import ConfigError
from lsr_eval.report.plots import LINE_STYLES, MARKERS, _colours, _figure, _log_axis, _note, save_figure

if TYPE_CHECKING:
    from lsr_eval.report.plots import Figure

#: The columns a scaling frame needs (one row per size, engine, setting, query setting and k).
LINE = ["engine", "setting", "queries", "k"]
COLUMNS = ["documents", *LINE, "latency_mean_ms"]


def _check(frame: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    missing = [c for c in COLUMNS + extra if c not in frame.columns]
    if missing:
        raise ConfigError(f"scaling figure: the frame lacks {', '.join(missing)} (it needs {', '.join(COLUMNS)})")
    return frame[COLUMNS + extra].sort_values(LINE + ["documents"], kind="stable").reset_index(drop=True)


def _label(row) -> str:
    return f"{row.engine} {row.setting}, {row.queries}, k={row.k:g}"


def latency_by_size(frame: pd.DataFrame, title: str) -> tuple[Figure, pd.DataFrame]:
    """Mean latency (log) against collection size (log), a line per engine, setting, query setting and k: colour per
    engine and setting, line style per k, marker per query setting. Returns the figure and the rows it draws."""
    data = _check(frame, [])
    fig = _figure((9.0, 6.0))
    ax = fig.add_subplot()
    systems = list(dict.fromkeys(zip(data["engine"], data["setting"])))
    colours = dict(zip(systems, _colours(len(systems))))
    ks = sorted(data["k"].unique())
    queries = list(dict.fromkeys(data["queries"]))
    for key, line in data.groupby(LINE, sort=False):
        engine, setting, q, k = key
        ax.plot(line["documents"], line["latency_mean_ms"], color=colours[(engine, setting)],
                linestyle=LINE_STYLES[ks.index(k) % len(LINE_STYLES)],
                marker=MARKERS[queries.index(q) % len(MARKERS)], label=_label(line.iloc[0]))
    _log_axis(ax.xaxis, ax.set_xscale, list(data["documents"]), fmt="{:,.0f}")
    _log_axis(ax.yaxis, ax.set_yscale, list(data["latency_mean_ms"]))
    ax.set_xlabel("documents in the collection (log scale)")
    ax.set_ylabel("mean latency per query (ms, log scale)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    _note(fig, ["line style: k; marker: query setting"])
    return fig, data


def recall_by_latency(frame: pd.DataFrame, documents: int, k: int, title: str) -> tuple[Figure, pd.DataFrame]:
    """Recall@``k`` against mean latency (log) at ``documents``, a point per engine, setting and query setting (the
    rows with a recall value). Returns the figure and the rows it draws."""
    column = f"recall_at_{k}"
    data = _check(frame, [column])
    data = data[(data["documents"] == documents) & (data["k"] == k) & data[column].notna()].reset_index(drop=True)
    if data.empty:
        raise ConfigError(f"scaling figure: no row at {documents:,} documents with {column}")
    fig = _figure()
    ax = fig.add_subplot()
    colours = _colours(len(data))
    for i, row in enumerate(data.itertuples()):
        ax.scatter([row.latency_mean_ms], [getattr(row, column)], color=colours[i], s=50, edgecolor="black",
                   linewidth=0.5, label=_label(row))
    _log_axis(ax.xaxis, ax.set_xscale, list(data["latency_mean_ms"]))
    ax.set_xlabel("mean latency per query (ms, log scale)")
    ax.set_ylabel(f"recall@{k} against the exact top {k}")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig, data


def write_figure(fig: Figure, data: pd.DataFrame, folder: str | Path) -> list[Path]:
    """``folder/figure.png``, ``figure.pdf`` and ``figure.csv`` (the rows drawn); returns the three paths."""
    paths = save_figure(fig, folder, "figure")
    csv = Path(folder) / "figure.csv"
    data.to_csv(csv, index=False)
    return [*paths, csv]
