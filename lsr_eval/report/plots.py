"""The report's figures, drawn with matplotlib's object API (``matplotlib.figure.Figure``; no pyplot state, so
it works headless and inside notebooks alike) and saved as PNG and PDF.

- :func:`tradeoff_figure`: a dataset's main measure against a cost (FLOPs on a log axis, or latency in ms), one
  marker per model, the Pareto front drawn (:func:`lsr_eval.report.pareto.pareto_front`);
- :func:`training_figure`: a logged quantity (the loss) against the step, one panel per backbone, one colour per k;
- :func:`head_norm_figure`: the backbone's head norm against its best k (:mod:`lsr_eval.report.best_k`);
- :func:`rescaling_figure`: a dataset's main measure against the rescaling k, one marker per model.

Points and runs that cannot be drawn are named in a note under the axes, with the reason.
"""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import pandas as pd

from lsr_eval.errors import ConfigError
from lsr_eval.report.loading import TrainingRun
from lsr_eval.report.pareto import pareto_front
from lsr_eval.report.tables import MISSING, group_column, main_measure, model_order, why_missing

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Cost:
    """A cost axis: table column, name (titles), axis label with unit, log scale or not."""

    column: str
    name: str
    label: str
    log: bool


COSTS = {
    "flops": Cost("flops", "FLOPs", "FLOPs: expected multiplications per query-document score (log scale)", True),
    "latency": Cost("latency_mean_ms", "mean latency", "mean query latency (ms)", False),
    "latency_p99": Cost("latency_p99_ms", "p99 latency", "99th percentile query latency (ms)", False),
}

#: Axis labels of the training quantities a figure may show (key -> label with unit).
TRAINING_LABELS = {
    "loss": "training loss (ranking + sparsity regularisation)",
    "rank": "ranking loss",
    "flops_d": "document FLOPs regulariser",
    "active_dims_q": "active query dimensions (terms)",
    "active_dims_d": "active document dimensions (terms)",
    "batch_flops": "batch FLOPs",
    "head_norm": "MLM-head norm (Frobenius)",
}

#: Marker shapes cycled over the k values of a figure (one shape per k).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
#: Legend entries (models) drawn inside the axes; more go to the right of them.
LEGEND_INSIDE_MAX = 8
#: Characters per line of the note under the axes.
NOTE_WRAP = 110
#: Points a training curve keeps after the automatic moving average (see :func:`auto_smooth`).
SMOOTH_POINTS = 50
#: Ratio max/min of a log axis's values below which its minor ticks are labelled.
LABEL_MINOR_BELOW = 30.0
#: Line styles cycled over the runs of a panel that share a k.
LINE_STYLES = ("-", "--", ":", "-.")
#: A training panel whose positive values span more than this ratio max/min gets a log y axis.
LOG_Y_ABOVE = 100.0
#: Figure size in inches (width, height) of a single-panel figure.
FIG_SIZE = (8.0, 5.0)


def _figure(size: tuple[float, float] = FIG_SIZE) -> "Figure":
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained")


def _note(fig: "Figure", lines: Sequence[str]) -> None:
    """Lines under the axes (what was not drawn, and why)."""
    if lines:
        text = "\n".join(textwrap.fill(line, NOTE_WRAP) for line in lines)
        fig.supxlabel(text, fontsize=7, ha="left", x=0.01, color="0.35")


def _k_label(k: float) -> str:
    return f"k={k:g}" if not math.isnan(k) else ""


def point_label(row: pd.Series) -> str:
    """Legend label of a model: system, and k where it has one (``splade-minilm, k=4``)."""
    k = _k_label(row.get("k", math.nan))
    return f"{row['system']}, {k}" if k else str(row["system"])


def has_tradeoff(frame: pd.DataFrame, dataset: str, cost: str) -> bool:
    """Whether some row of ``dataset`` has both the ``cost`` column and the dataset's main measure."""
    column = COSTS[cost].column
    measure = main_measure(frame, dataset)
    if measure is None or column not in frame.columns:
        return False
    rows = frame[frame["dataset"] == dataset]
    return bool((rows[column].notna() & rows[measure].notna()).any())


def tradeoff_figure(frame: pd.DataFrame, dataset: str, cost: str = "flops", measure: str | None = None,
                    title: str | None = None) -> "Figure":
    """``measure`` (default: the dataset's main measure) of each system on ``dataset`` against ``cost`` (a key of
    :data:`COSTS`): colour per backbone (or system), marker shape per k, dashed Pareto front. Colours and markers
    are assigned over the whole ``frame``, so a model looks the same in the figures of every dataset."""
    if cost not in COSTS:
        raise ConfigError(f"cost {cost!r}: expected one of {', '.join(COSTS)}")
    axis = COSTS[cost]
    rows = frame[frame["dataset"] == dataset]
    if rows.empty:
        raise ConfigError(f"dataset {dataset!r} is not in the results")
    measure = measure or main_measure(frame, dataset)
    if measure is None or measure not in rows.columns:
        raise ConfigError(f"no measure {measure!r} for {dataset}")
    skipped, points = [], []
    for _, row in rows.iterrows():
        c = row.get(axis.column, math.nan)
        v = row[measure]
        bad = [name for name, x in ((axis.column, c), (measure, v)) if x is None or math.isnan(x)]
        if not bad and axis.log and c <= 0:
            skipped.append(f"{row['system']} ({axis.column}={c:g} cannot go on a log axis)")
        elif bad:
            reason = why_missing(row["status"])
            skipped.append(f"{row['system']} ({'no ' + ' and no '.join(bad) if reason == MISSING else reason})")
        else:
            points.append(row)
    fig = _figure()
    ax = fig.add_subplot()
    group_col = group_column(frame)
    groups = list(dict.fromkeys(frame[group_col]))
    ks = sorted(set(frame["k"].dropna()))
    colours = _colours(len(groups))
    points.sort(key=model_order(frame))
    for r in points:
        marker = MARKERS[ks.index(r["k"]) % len(MARKERS)] if not math.isnan(r["k"]) else "o"
        ax.scatter(r[axis.column], r[measure], s=60, marker=marker, color=colours[groups.index(r[group_col])],
                   edgecolor="black", linewidth=0.5, zorder=3, label=point_label(r))
    if points:
        costs = [float(r[axis.column]) for r in points]
        values = [float(r[measure]) for r in points]
        front = pareto_front(costs, values)
        ax.plot([costs[i] for i in front], [values[i] for i in front], linestyle="--", color="0.4",
                drawstyle="steps-post", linewidth=1, zorder=2, label="Pareto front")
    if axis.log:
        _log_axis(ax.xaxis, ax.set_xscale, [float(r[axis.column]) for r in points])
    ax.set_xlabel(axis.label)
    ax.set_ylabel(f"{measure} on {dataset}")
    ax.set_title(title or f"{measure} against {axis.name} on {dataset}")
    ax.grid(True, which="both", alpha=0.3)
    if len(points) > LEGEND_INSIDE_MAX:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    elif points:
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no system has both values", transform=ax.transAxes, ha="center")
    _note(fig, [f"not plotted: {'; '.join(skipped)}"] if skipped else [])
    return fig


def rescaling_figure(frame: pd.DataFrame, dataset: str, measure: str | None = None,
                     title: str | None = None) -> "Figure":
    """``measure`` (default: the dataset's main measure) of each model with a rescaling k on ``dataset`` against
    k (log2 axis): colour per backbone (as in the trade-off figures), a line through each backbone's models when
    they have distinct k, every model labelled with its system name."""
    rows = frame[(frame["dataset"] == dataset) & frame["k"].notna()]
    measure = measure or main_measure(frame, dataset)
    if rows.empty or measure is None or measure not in rows.columns:
        raise ConfigError(f"no model with a rescaling k and a {measure!r} value on {dataset!r}")
    fig = _figure()
    ax = fig.add_subplot()
    group_col = group_column(frame)
    groups = list(dict.fromkeys(frame[group_col]))
    colours = _colours(len(groups))
    ok = rows[rows[measure].notna()]
    skipped = [f"{r['system']} ({why_missing(r['status'])})" for _, r in rows[rows[measure].isna()].iterrows()]
    for group, mine in ok.groupby(group_col, sort=False):
        mine = mine.sort_values("k")
        colour = colours[groups.index(group)]
        if mine["k"].is_unique and len(mine) > 1:
            ax.plot(mine["k"], mine[measure], color=colour, linewidth=1, alpha=0.6, zorder=2)
        for i, (_, r) in enumerate(mine.iterrows()):
            ax.scatter(r["k"], r[measure], s=60, marker=MARKERS[i % len(MARKERS)], color=colour,
                       edgecolor="black", linewidth=0.5, zorder=3, label=f"{group}: {point_label(r)}")
    ks = sorted(set(ok["k"]))
    ax.set_xscale("log", base=2)
    if ks:
        from matplotlib.ticker import FixedLocator, NullLocator

        ax.xaxis.set_major_locator(FixedLocator(ks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([f"{k:g}" for k in ks])
        ax.set_xlim(ks[0] / 1.5, ks[-1] * 1.5)
        ax.legend(fontsize=7, loc="best")
    ax.set_xlabel("MLM-head rescaling k (log2 scale)")
    ax.set_ylabel(f"{measure} on {dataset}")
    ax.set_title(title or f"{measure} against the rescaling k on {dataset}")
    ax.grid(True, which="both", alpha=0.3)
    _note(fig, [f"not plotted: {'; '.join(skipped)}"] if skipped else [])
    return fig


def _log_axis(axis, set_scale, values: Sequence[float]) -> None:
    """A log axis with plain numbers as tick labels (``0.5``, ``2``, ``300``, not ``2 x 10^0``). Minor ticks are
    labelled where the values span little: all of them below a ratio max/min of 3, those with leading digit 2, 3 or 5
    below :data:`LABEL_MINOR_BELOW`, none above (they would crowd)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    set_scale("log")
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    span = max(values) / min(values) if values and min(values) > 0 else math.inf
    if span < 3:
        axis.set_minor_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    elif span < LABEL_MINOR_BELOW:
        axis.set_minor_formatter(FuncFormatter(lambda x, _: f"{x:g}" if f"{x:e}"[0] in "235" else ""))
    else:
        axis.set_minor_formatter(NullFormatter())


def _colours(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10"] if n <= 10 else colormaps["tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def auto_smooth(runs: Iterable[TrainingRun]) -> int:
    """Moving-average window giving the longest log about :data:`SMOOTH_POINTS` independent points (at least 1)."""
    longest = max((len(r.log) for r in runs), default=0)
    return max(1, longest // SMOOTH_POINTS)


def training_figure(runs: Iterable[TrainingRun], key: str = "loss", smooth: int | None = None,
                    title: str | None = None) -> "Figure":
    """``key`` of each run's log against the step: one panel per backbone, colour by log2 k (viridis), the raw
    values faint and their moving average over ``smooth`` logged steps solid (``smooth=1``: raw only; None:
    :func:`auto_smooth`)."""
    runs = list(runs)
    if smooth is None:
        smooth = auto_smooth(runs)
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ConfigError(f"smooth={smooth!r}: expected an integer >= 1 (logged steps in the moving average)")
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    has = [key in r.log.columns and pd.to_numeric(r.log[key], errors="coerce").notna().any() for r in runs]
    drawn = [r for r, h in zip(runs, has) if h]
    skipped = [f"{r.name} (no {key!r} in its log.jsonl)" for r, h in zip(runs, has) if not h]
    backbones = list(dict.fromkeys(r.backbone or r.name for r in drawn)) or ["(none)"]
    ncols = min(len(backbones), 3)
    nrows = math.ceil(len(backbones) / ncols)
    fig = _figure((FIG_SIZE[0] if ncols < 3 else 12.0, FIG_SIZE[1] * (0.7 if nrows > 1 else 1.0) * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    log2k = [math.log2(r.k) for r in drawn if r.k is not None]
    norm = Normalize(min(log2k, default=0), max(max(log2k, default=1), min(log2k, default=0) + 1e-9))
    cmap = colormaps["viridis"]
    for ax, backbone in zip(axes, backbones):
        mine = sorted((r for r in drawn if (r.backbone or r.name) == backbone), key=lambda r: (r.k is None, r.k or 0))
        ks = [r.k for r in mine]
        seen: dict = {}
        values = []
        for r in mine:
            y = pd.to_numeric(r.log[key], errors="coerce")
            values += [v for v in y.dropna()]
            colour = cmap(norm(math.log2(r.k)) * 0.9) if r.k is not None else "0.5"
            style = LINE_STYLES[seen.get(r.k, 0) % len(LINE_STYLES)]   # runs sharing a k: one style each
            seen[r.k] = seen.get(r.k, 0) + 1
            label = f"k={r.k:g}" if r.k is not None else f"{r.name} (k unknown)"
            if r.k is not None and ks.count(r.k) > 1:  # several runs with this k: name them
                label += f" ({r.name})"
            if smooth > 1:
                ax.plot(r.log["step"], y, color=colour, alpha=0.25, linewidth=0.8, linestyle=style)
                ax.plot(r.log["step"], y.rolling(smooth, min_periods=1).mean(), color=colour, linewidth=1.6,
                        label=label, linestyle=style)
            else:
                ax.plot(r.log["step"], y, color=colour, linewidth=1.4, label=label, linestyle=style)
        if values and min(values) > 0 and max(values) / min(values) > LOG_Y_ABOVE:
            ax.set_yscale("log")
        ax.set_title(backbone, fontsize=9)
        ax.set_xlabel("training step")
        ax.set_ylabel(TRAINING_LABELS.get(key, key))
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7, title="rescaling", title_fontsize=7)
    for ax in axes[len(backbones):]:
        ax.set_visible(False)
    what = TRAINING_LABELS.get(key, key)
    what += f" (moving average over {smooth} logged steps)" if smooth > 1 else ""
    fig.suptitle(title or f"{what[0].upper()}{what[1:]} by rescaling k", fontsize=11)
    _note(fig, [f"not plotted: {'; '.join(skipped)}"] if skipped else [])
    return fig


def head_norm_figure(points: pd.DataFrame, title: str | None = None,
                     groups: Sequence[str] | None = None) -> "Figure":
    """Each backbone's head norm (x, log scale) against its best k (y, log2 scale): the best k as a large marker,
    the other k values tried as small grey dots. ``points``: :func:`lsr_eval.report.best_k.head_norm_points`;
    ``groups``: the backbone order that gives colours in the trade-off figures (``frame["backbone"]``), so that
    a backbone has one colour throughout a report."""
    fig = _figure()
    ax = fig.add_subplot()
    ok = points[points["head_norm"].notna() & points["best_k"].notna()]
    skipped = [f"{p.backbone} ({'no best k' if math.isnan(p.best_k) else p.source})"
               for p in points.itertuples() if p.Index not in ok.index]
    order = list(dict.fromkeys([*(groups or []), *points["backbone"]]))
    palette = _colours(len(order))
    colours = [palette[order.index(b)] for b in ok["backbone"]]
    all_k: set[float] = set()
    for colour, p in zip(colours, ok.itertuples()):
        others = [k for k in p.ks if k != p.best_k]
        all_k.update(p.ks)
        ax.scatter([p.head_norm] * len(others), others, s=18, color="0.6", zorder=2)
        ax.scatter([p.head_norm], [p.best_k], s=90, color=colour, edgecolor="black", zorder=3,
                   label=f"{p.backbone}: best k={p.best_k:g} ({p.value:.4g})")
    _log_axis(ax.xaxis, ax.set_xscale, list(ok["head_norm"]))
    ax.set_yscale("log", base=2)
    if all_k:
        from matplotlib.ticker import FixedLocator, NullLocator

        ax.yaxis.set_major_locator(FixedLocator(sorted(all_k)))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_yticklabels([f"{k:g}" for k in sorted(all_k)])
        lo, hi = min(all_k), max(all_k)
        ax.set_ylim(lo / 1.5, hi * 1.5)
    if not ok.empty:
        lo, hi = ok["head_norm"].min(), ok["head_norm"].max()
        ax.set_xlim(lo / 1.6, hi * 1.6)
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no backbone has both a head norm and a best k", transform=ax.transAxes, ha="center")
    ax.set_xlabel("MLM-head norm before rescaling (Frobenius norm of the decoder weight, log scale)")
    criterion = points["criterion"].iloc[0] if len(points) else "?"
    ax.set_ylabel(f"best rescaling k by {criterion} (log2 scale)")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title or "Head norm against the best rescaling k (grey: other k tried)")
    sources = [f"{p.backbone}: {p.source}" for p in ok.itertuples()]
    _note(fig, ["head norm from " + "; ".join(sources)] * bool(sources)
          + ([f"not plotted: {'; '.join(skipped)}"] if skipped else []))
    return fig


def figure_png(fig: "Figure", dpi: int = 150) -> bytes:
    """The figure as PNG bytes (for HTML embedding and notebooks)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def save_figure(fig: "Figure", folder: str | Path, stem: str, dpi: int = 150) -> list[Path]:
    """Write ``folder/stem.png`` (``dpi``) and ``folder/stem.pdf``; returns both paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{stem}.png", folder / f"{stem}.pdf"]
    fig.savefig(paths[0], dpi=dpi)
    fig.savefig(paths[1])
    return paths

