"""lsr_eval.report.scaling: the rows each figure draws (its figure.csv), by hand, and one-line refusals."""

from __future__ import annotations

import pandas as pd
import pytest

from lsr_eval.errors import ConfigError
from lsr_eval.report.scaling import latency_by_size, recall_by_latency, write_figure


def _frame() -> pd.DataFrame:
    rows = []
    for n, ms in ((1000, 1.0), (100, 0.2), (10, 0.1)):                     # out of order: drawn by size
        rows.append({"documents": n, "engine": "pisa", "setting": "exact", "queries": "q", "k": 10,
                     "latency_mean_ms": ms, "recall_at_10": None, "other": "x"})
        rows.append({"documents": n, "engine": "seismic", "setting": "default", "queries": "q", "k": 10,
                     "latency_mean_ms": ms / 4, "recall_at_10": 0.9 + n / 1e5, "other": "y"})
    return pd.DataFrame(rows)


def test_latency_by_size_draws_a_line_per_engine_setting_and_k_in_size_order(tmp_path):
    fig, data = latency_by_size(_frame(), "t")
    assert list(data.columns) == ["documents", "engine", "setting", "queries", "k", "latency_mean_ms"]
    assert list(data["engine"]) == ["pisa"] * 3 + ["seismic"] * 3 and list(data["documents"][:3]) == [10, 100, 1000]
    lines = fig.axes[0].get_lines()
    assert [list(line.get_xdata()) for line in lines] == [[10, 100, 1000]] * 2
    assert list(lines[1].get_ydata()) == [0.025, 0.05, 0.25]
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_yscale() == "log"
    paths = write_figure(fig, data, tmp_path / "f")
    assert [p.name for p in paths] == ["figure.png", "figure.pdf", "figure.csv"]
    assert pd.read_csv(paths[2]).equals(data)


def test_recall_by_latency_draws_the_rows_with_a_recall_at_one_size():
    fig, data = recall_by_latency(_frame(), 1000, 10, "t")
    assert list(data["engine"]) == ["seismic"] and data["recall_at_10"].iloc[0] == pytest.approx(0.91)
    assert [tuple(c.get_offsets()[0]) for c in fig.axes[0].collections] == [(0.25, pytest.approx(0.91))]


def test_a_frame_without_the_columns_or_rows_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="lacks latency_mean_ms"):
        latency_by_size(_frame().drop(columns="latency_mean_ms"), "t")
    with pytest.raises(ConfigError, match="no row at 10 documents with recall_at_1000"):
        recall_by_latency(_frame().assign(recall_at_1000=None), 10, 1000, "t")
