"""Report figures: what each one draws (axes, Pareto front, legends) and that PNG and PDF files come out."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from lsr_eval.errors import ConfigError
from lsr_eval.report import load_results
from lsr_eval.report.best_k import head_norm_points
from lsr_eval.report.linking import link_training
from lsr_eval.report.plots import (
    auto_smooth,
    head_norm_figure,
    read_tradeoff,
    rescaling_figure,
    save_figure,
    tradeoff_figure,
    training_figure,
)
from lsr_eval.report.tables import rescaling_table

DATA = REPO / "tests" / "data" / "report"


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


def check_files(paths: list[Path], size: tuple[int, int] = (1200, 750)) -> None:
    png, pdf = paths[:2]
    assert png.suffix == ".png" and pdf.suffix == ".pdf"
    width, height = png_size(png)
    assert (width, height) == size  # 8 x 5 inches at 150 dpi (trade-offs: 10 x 6)
    assert png.stat().st_size > 10_000  # a drawn figure, not a blank canvas
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000


def legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_flops_tradeoff(frame, tmp_path):
    fig = tradeoff_figure(frame, "msmarco-dev", "flops")
    data = read_tradeoff(fig)
    # FLOPs 0.92 .. 6.51 span less than a decade: a linear axis
    assert data["xscale"] == "linear"
    assert "FLOPs" in data["xlabel"] and data["ylabel"] == "RR@10 on msmarco-dev"
    # every drawn point is its row's (FLOPs, RR@10), labelled by its system (tests/data/report/make_data.py)
    assert data["points"] == {"splade-minilm-k1": [4.12, 0.3012], "splade-minilm-k4": [1.83, 0.3456],
                              "splade-minilm-k16": [0.92, 0.3321], "splade-ettin-k1": [6.51, 0.3102],
                              "splade-ettin-k16": [1.21, 0.3587]}
    assert data["labels"] == {s: s for s in data["points"]}
    # minilm-k16 (0.92, .3321) and ettin-k16 (1.21, .3587) dominate the others
    assert data["front"] == [[0.92, 0.3321], [1.21, 0.3587]]
    assert "not plotted: bm25 (no flops)" in data["note"]
    check_files(save_figure(fig, tmp_path, "flops"), size=(1500, 900))


def test_save_figure_lays_out_once_for_both_files(frame, tmp_path, monkeypatch):
    """The PDF has the PNG's layout: constrained layout runs for the PNG only, and the axes stay where it put them."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    runs = []
    execute = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", lambda self, fig: runs.append(1) or execute(self, fig))
    fig = tradeoff_figure(frame, "msmarco-dev", "flops")
    before = len(runs)  # the label placement's layout
    fig.savefig(tmp_path / "alone.png", dpi=150)
    laid_out = [ax.get_position().bounds for ax in fig.axes]
    check_files(save_figure(fig, tmp_path, "flops"), size=(1500, 900))
    assert len(runs) - before == 2  # alone.png and the saved PNG: none for the PDF
    for ax, bounds in zip(fig.axes, laid_out):   # where a layout at this size puts them (to its convergence)
        assert ax.get_position().bounds == pytest.approx(bounds, abs=1e-3)


def test_latency_tradeoff(frame, tmp_path):
    fig = tradeoff_figure(frame, "msmarco-dev", "latency")
    data = read_tradeoff(fig)
    assert data["xscale"] == "linear" and data["xlabel"].startswith("mean query latency (ms")
    assert data["points"]["bm25"] == [12.3, 0.184]
    assert [x for x, _ in data["front"]] == [12.3, 15.8, 19.9]  # bm25, minilm-k16, ettin-k16
    assert "splade-ettin-k1 (no latency_mean_ms)" in data["note"]
    ax = fig.axes[0]
    bm25 = next(c for c in ax.collections if c.get_gid() == "point:bm25")
    minilm = next(c for c in ax.collections if c.get_gid() == "point:splade-minilm-k4")
    assert _marker(bm25) != _marker(minilm)  # a marker per kind
    assert "kind: BM25" in legend(ax) and "kind: learned sparse model" in legend(ax)
    check_files(save_figure(fig, tmp_path, "latency"), size=(1500, 900))
    with pytest.raises(ConfigError, match="flops, latency"):
        tradeoff_figure(frame, "msmarco-dev", "energy")


def _marker(collection) -> tuple:
    return tuple(map(tuple, collection.get_paths()[0].vertices.round(3)))


def _sweep_frame() -> pd.DataFrame:
    """A sweep of model m (3 document budgets + the swept system), BM25, and their fusion, hand-made."""
    rows = [
        {"system": "bm25", "kind": "bm25", "model": "", "flops": 2.0, "latency_mean_ms": 10.0, "nDCG@10": 0.60},
        {"system": "m", "kind": "splade", "model": "splade-tiny", "flops": 8.0, "latency_mean_ms": 30.0,
         "nDCG@10": 0.64, "engine": "pisa"},
        {"system": "m-d8", "kind": "splade", "model": "splade-tiny", "sweep": "m:doc_top_k", "point": "d8",
         "doc_top_k": 8, "flops": 0.05, "latency_mean_ms": 2.0, "nDCG@10": 0.30},
        {"system": "m-d64", "kind": "splade", "model": "splade-tiny", "sweep": "m:doc_top_k", "point": "d64",
         "doc_top_k": 64, "flops": 1.0, "latency_mean_ms": 25.0, "nDCG@10": 0.58},  # a slow measurement
        {"system": "m-d256", "kind": "splade", "model": "splade-tiny", "sweep": "m:doc_top_k", "point": "d256",
         "doc_top_k": 256, "flops": 4.0, "latency_mean_ms": 20.0, "nDCG@10": 0.65, "engine": "anserini"},
        {"system": "rrf", "kind": "fusion", "model": "", "flops": 10.0, "latency_mean_ms": 40.0,
         "latency_parallel_mean_ms": 30.0, "nDCG@10": 0.69},
        {"system": "broken", "kind": "splade", "model": "x", "status": "failed: out of memory"},
    ]
    frame = pd.DataFrame(rows).assign(dataset="d", k=float("nan"))
    frame["status"] = frame["status"].fillna("ok")
    for c in ("sweep", "point", "engine"):
        frame[c] = frame[c].fillna("")
    return frame


def test_tradeoff_figure_reads_back_sweeps_fusions_front_and_log_axis(tmp_path):
    frame = _sweep_frame()
    fig = tradeoff_figure(frame, "d", "flops")
    data = read_tradeoff(fig)
    assert data["xscale"] == "log"  # 0.05 .. 10: decades
    assert data["points"] == {"bm25": [2.0, 0.6], "m": [8.0, 0.64], "m-d8": [0.05, 0.3], "m-d64": [1.0, 0.58],
                              "m-d256": [4.0, 0.65], "rrf": [10.0, 0.69]}
    # sweep points by their budget, the engine beside a system on another engine than the reference (Anserini,
    # left unmarked and named in the note)
    assert data["labels"] == {"bm25": "bm25", "m": "m [pisa]", "m-d8": "d8", "m-d64": "d64", "m-d256": "d256",
                              "rrf": "rrf"}
    assert "retrieval engine: anserini unless marked [engine]" in data["note"]
    # by hand: d8 (0.05, .30) < d64 (1, .58) < bm25 (2, .60) < d256 (4, .65) < rrf (10, .69); m (8, .64) is beaten
    assert data["front"] == [[0.05, 0.3], [1.0, 0.58], [2.0, 0.6], [4.0, 0.65], [10.0, 0.69]]
    assert data["sweeps"] == {"m:doc_top_k": [[0.05, 0.3], [1.0, 0.58], [4.0, 0.65], [8.0, 0.64]]}
    assert "broken (failed)" in data["note"] and "FLOPs summed" in data["note"]
    ax = fig.axes[0]
    colour = {c.get_gid()[6:]: tuple(c.get_facecolor()[0]) for c in ax.collections if c.get_gid().startswith("point:")}
    assert colour["m"] == colour["m-d8"] == colour["m-d256"]  # one family
    assert len({colour["bm25"], colour["m"], colour["rrf"]}) == 3
    markers = {g: _marker(c) for c in ax.collections if (g := c.get_gid()).startswith("point:")}
    assert len({markers["point:bm25"], markers["point:m"], markers["point:rrf"]}) == 3  # marker per kind
    assert markers["point:m"] == markers["point:m-d8"]
    lat = read_tradeoff(tradeoff_figure(frame, "d", "latency"))
    assert lat["xscale"] == "log"  # 2 .. 40 ms
    assert lat["points"]["rrf"] == [40.0, 0.69] and lat["parallel"] == {"rrf": [30.0, 0.69]}
    # the sweep line follows the budget (8, 64, 256, then the swept system), not the measured latency
    assert [x for x, _ in lat["sweeps"]["m:doc_top_k"]] == [2.0, 25.0, 20.0, 30.0]
    assert "parts in parallel" in lat["note"]
    check_files(save_figure(fig, tmp_path, "sweep"), size=(1500, 900))


def test_labels_do_not_overlap():
    frame = _sweep_frame()
    frame.loc[frame.system == "m-d64", ["flops", "nDCG@10"]] = [2.05, 0.6]  # next to bm25
    frame.loc[frame.system == "m-d256", ["flops", "nDCG@10"]] = [8.0, 0.64]  # on top of m
    fig = tradeoff_figure(frame, "d", "flops")
    labels = read_tradeoff(fig)["labels"]
    assert labels["m"] == "m [pisa] = d256" and "m-d256" not in labels  # one label for both
    renderer = fig.canvas.get_renderer()
    boxes = {t.get_gid(): t.get_window_extent(renderer) for t in fig.axes[0].texts if t.get_gid()}
    assert not boxes["label:bm25"].overlaps(boxes["label:m-d64"])
    axes_box = fig.axes[0].get_window_extent(renderer)
    assert all(axes_box.x0 <= b.x0 and b.x1 <= axes_box.x1 and axes_box.y0 <= b.y0 and b.y1 <= axes_box.y1
               for b in boxes.values())  # labels stay inside the axes


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
    check_files(save_figure(fig, tmp_path, "head-norm"), size=(1200, 975))   # 8 x 6.5 in: the legend below


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


def test_a_family_keeps_its_colour_across_figures(frame):
    trade = tradeoff_figure(frame, "msmarco-dev", "flops")
    colour = {c.get_gid()[6:]: tuple(c.get_facecolor()[0]) for c in trade.axes[0].collections
              if (c.get_gid() or "").startswith("point:")}
    resc = rescaling_figure(frame, "msmarco-dev")
    by_label = {c.get_label(): tuple(c.get_facecolor()[0]) for c in resc.axes[0].collections}
    minilm = next(v for k, v in by_label.items() if "splade-minilm-k4" in k)
    ettin = next(v for k, v in by_label.items() if "splade-ettin-k16" in k)
    assert minilm == colour["splade-minilm-k4"] and ettin == colour["splade-ettin-k16"] and minilm != ettin


def test_rank_loss_panel_draws_the_loss_of_uniform_scores_and_mlm_losses_are_labelled(tmp_path):
    from lsr_eval.report.loading import TrainingRun

    def run(name, k, losses, stage="train"):
        log = pd.DataFrame({"step": range(1, len(losses) + 1), "loss": losses, "rank": losses})
        return TrainingRun(name=name, path=tmp_path / name, log=log, manifest={"stage": stage}, backbone="m", k=k)

    ax = training_figure([run("a", 1.0, [9.0, 5.0]), run("b", 16.0, [3.0, 2.8])], "rank", smooth=1,
                         chance=lambda r: 16).axes[0]
    (uniform,) = [line for line in ax.lines if line.get_label().startswith("uniform scores")]
    assert list(uniform.get_ydata()) == [pytest.approx(math.log(16))] * 2   # ln 16 = 2.77, across the panel
    assert uniform.get_label() == "uniform scores: ln 16 = 2.77"
    mlm = training_figure([run("mlm", None, [7.0, 6.0], stage="middle-train")], "loss", smooth=1).axes[0]
    assert "masked LM" in mlm.get_ylabel() and "ranking" not in mlm.get_ylabel()
    assert legend(mlm) == ["mlm (masked LM)"]
    splade = training_figure([run("a", 1.0, [9.0, 5.0])], "loss", smooth=1).axes[0]
    assert "ranking + sparsity" in splade.get_ylabel()
    long = training_figure([TrainingRun("x", tmp_path, pd.DataFrame({"step": [1], "loss": [1.0]}), None,
                                        "work/train/rescale-mlm-minilm-mlm/model (input compensated)", 2.0)],
                           "loss").axes[0]
    assert "\n" in long.get_title()                       # wrapped, not cut at the panel's edge


def test_head_norm_markers_at_one_place_sit_side_by_side():
    points = pd.DataFrame([{"backbone": "m (input compensated)", "head_norm": 190.0, "best_k": 16.0, "ks": [16.0],
                            "value": 0.3, "suggested_k": 16.0, "source": "s", "criterion": "dev nDCG@10"}])
    from lsr_eval.report.loading import HeadDiagnosis

    diag = HeadDiagnosis("run/mlm-compensated", "m", "compensated", 190.0, 12.0, 1000.0, 0.5, 16.0, "rule")
    fig = head_norm_figure(points, diagnoses=[diag])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    xs = [c.get_offset_transform().transform(c.get_offsets())[0][0] for c in ax.collections if len(c.get_offsets())]
    assert len(xs) == 3 and len({round(x) for x in xs}) == 3    # best k, suggested star, cross: none hidden
    legend_box = ax.get_legend().get_window_extent()
    assert legend_box.y1 <= ax.get_window_extent().y0             # the legend sits below the axes
