"""Report figures: what each one draws (axes, Pareto front, legends) and that PNG and PDF files come out."""

from __future__ import annotations

import struct
from pathlib import Path

import pandas as pd
import pytest

from lsr_eval.errors import ConfigError
from lsr_eval.report import load_results
from lsr_eval.report.best_k import head_norm_points
from lsr_eval.report.linking import link_training
from lsr_eval.report.plots import (auto_smooth, head_norm_figure, rescaling_figure, save_figure, tradeoff_figure,
                                   training_figure)
from lsr_eval.report.tables import rescaling_table

DATA = Path(__file__).resolve().parent / "data" / "report"


@pytest.fixture(scope="module")
def results():
    return load_results(DATA)


@pytest.fixture(scope="module")
def frame(results):
    return link_training(results.combined(), results.training)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def check_files(paths: list[Path]) -> None:
    png, pdf = paths
    assert png.suffix == ".png" and pdf.suffix == ".pdf"
    width, height = png_size(png)
    assert (width, height) == (1200, 750)  # 8 x 5 inches at 150 dpi
    assert png.stat().st_size > 10_000  # a drawn figure, not a blank canvas
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000


def legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_flops_tradeoff(frame, tmp_path):
    fig = tradeoff_figure(frame, "msmarco-dev", "flops")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert "FLOPs" in ax.get_xlabel() and ax.get_ylabel() == "RR@10 on msmarco-dev"
    front = next(line for line in ax.get_lines() if line.get_label() == "Pareto front")
    # points (FLOPs, RR@10): minilm-k16 (0.92, .3321) and ettin-k16 (1.21, .3587) dominate the others
    assert list(front.get_xdata()) == [0.92, 1.21] and list(front.get_ydata()) == [0.3321, 0.3587]
    assert legend(ax)[:3] == ["splade-minilm-k1, k=1", "splade-minilm-k4, k=4", "splade-minilm-k16, k=16"]
    assert "not plotted: bm25 (no flops)" in fig.get_supxlabel()
    check_files(save_figure(fig, tmp_path, "flops"))


def test_latency_tradeoff(frame, tmp_path):
    fig = tradeoff_figure(frame, "msmarco-dev", "latency")
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear" and ax.get_xlabel() == "mean query latency (ms)"
    front = next(line for line in ax.get_lines() if line.get_label() == "Pareto front")
    assert list(front.get_xdata()) == [12.3, 15.8, 19.9]  # bm25, minilm-k16, ettin-k16
    assert "bm25" in legend(ax) and "splade-ettin-k1 (no latency_mean_ms)" in fig.get_supxlabel()
    check_files(save_figure(fig, tmp_path, "latency"))
    with pytest.raises(ConfigError, match="flops, latency"):
        tradeoff_figure(frame, "msmarco-dev", "energy")


def test_training_loss_curves(results, tmp_path):
    runs = list(results.training.values())
    assert auto_smooth(runs) == 1  # 41 logged steps: fewer than 2 x 50
    fig = training_figure(runs, "loss", smooth=3)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert sorted(ax.get_title() for ax in axes) == ["jhu-clsp/ettin-encoder-17m",
                                                      "sentence-transformers/all-MiniLM-L6-v2"]
    minilm = next(ax for ax in axes if "MiniLM" in ax.get_title())
    assert legend(minilm) == ["k=1", "k=4", "k=16"]
    assert minilm.get_xlabel() == "training step" and "loss" in minilm.get_ylabel()
    # raw (faint) + moving average per run
    assert len(minilm.get_lines()) == 6
    check_files(save_figure(fig, tmp_path, "loss"))
    missing = training_figure(runs, "no_such_key")
    assert "minilm-k4 (no 'no_such_key' in its log.jsonl)" in " ".join(missing.get_supxlabel().split())


def test_head_norm_figure(frame, results, tmp_path):
    points = head_norm_points(rescaling_table(frame), results.training)
    fig = head_norm_figure(points)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "best rescaling k by MS MARCO RR@10" in ax.get_ylabel()
    assert legend(ax) == ["sentence-transformers/all-MiniLM-L6-v2: best k=4 (0.3456)",
                          "jhu-clsp/ettin-encoder-17m: best k=16 (0.3587)"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "4", "16"]
    check_files(save_figure(fig, tmp_path, "head-norm"))


def test_rescaling_figure(frame, tmp_path):
    fig = rescaling_figure(frame, "dl19")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "nDCG@10 on dl19"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "4", "16"]
    labels = legend(ax)
    assert "sentence-transformers/all-MiniLM-L6-v2: splade-minilm-k4, k=4" in labels
    minilm = [line for line in ax.lines if list(line.get_xdata()) == [1.0, 4.0, 16.0]]
    assert len(minilm) == 1 and list(minilm[0].get_ydata()) == [0.6512, 0.6890, 0.6700]   # tests/data values
    assert "not plotted: splade-ettin-k16" in " ".join(fig.get_supxlabel().split())   # no dl19 value
    check_files(save_figure(fig, tmp_path, "rescaling"))
    with pytest.raises(ConfigError, match="no model with a rescaling k"):
        rescaling_figure(frame, "no-such-dataset")


def test_training_figure_log_axis_and_styles_for_shared_k(tmp_path):
    from lsr_eval.report.loading import TrainingRun

    def run(name, k, losses):
        log = pd.DataFrame({"step": range(1, len(losses) + 1), "loss": losses})
        return TrainingRun(name=name, path=tmp_path / name, log=log, manifest=None, backbone="minilm", k=k)

    runs = [run("k1", 1.0, [330.0, 600.0, 200.0]), run("a", 16.0, [7.0, 3.0, 2.8]), run("b", 16.0, [8.0, 4.0, 2.5])]
    ax = training_figure(runs, "loss", smooth=1).axes[0]
    assert ax.get_yscale() == "log"                       # 2.5 .. 600: a ratio above LOG_Y_ABOVE
    assert [line.get_linestyle() for line in ax.lines] == ["-", "-", "--"]
    assert legend(ax) == ["k=1", "k=16 (a)", "k=16 (b)"]
    flat = training_figure([run("c", 1.0, [3.0, 2.0, 1.5])], "loss", smooth=1).axes[0]
    assert flat.get_yscale() == "linear"
