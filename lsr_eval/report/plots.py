"""The report's figures, drawn with matplotlib's object API (``matplotlib.figure.Figure``; no pyplot state, so
it works headless and inside notebooks alike) and saved as PNG and PDF.

Design notes: docs/design.md."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import pandas as pd

from lsr_eval.errors import ConfigError
from lsr_eval.report.loading import HeadDiagnosis, TrainingRun
from lsr_eval.report.marks import why_missing
from lsr_eval.report.tables import group_column, main_measure
from lsr_eval.report.tradeoff import KINDS, row_family, sweep_curves, tradeoff_points
from lsr_eval.settings import Setting, check

if TYPE_CHECKING:
    from matplotlib.figure import Figure


#: Logged steps in a training curve's moving average.
SMOOTH = Setting(help="logged steps in the moving average", ge=1, unit="steps")


@dataclass(frozen=True)
class Cost:
    """A cost axis: table column, name (titles), axis label with unit (the axis is logarithmic when the drawn
    costs span a decade, :data:`lsr_eval.report.tradeoff.LOG_SPAN`)."""

    column: str
    name: str
    label: str


COSTS = {
    "flops": Cost("flops", "FLOPs", "FLOPs: expected multiplications per query-document score"),
    "latency": Cost("latency_mean_ms", "mean latency",
                    "mean query latency (ms, one thread: query encoding + search)"),
    "latency_p99": Cost("latency_p99_ms", "p99 latency",
                        "99th percentile query latency (ms, one thread: query encoding + search)"),
}

#: Axis labels of the training quantities a figure may show (key -> label with unit).
TRAINING_LABELS = {
    "loss": "loss: ranking + sparsity",
    "rank": "ranking loss",
    "flops_d": "document FLOPs regulariser",
    "active_dims_q": "active query dimensions (terms)",
    "active_dims_d": "active document dimensions (terms)",
    "batch_flops": "batch FLOPs",
    "head_norm": "MLM-head norm (Frobenius)",
}

#: Marker shapes cycled over the k values of a figure (one shape per k).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
#: Characters per line of the note under the axes.
NOTE_WRAP = 110
#: Characters per line of a panel title (a long backbone path wraps instead of being cut).
TITLE_WRAP = 48
#: Points a training curve keeps after the automatic moving average (see :func:`auto_smooth`).
SMOOTH_POINTS = 50
#: Ratio max/min of a log axis's values below which its minor ticks 2, 3, 5 are labelled (2 and 5 below the second).
LABEL_MINOR_BELOW = 30.0
LABEL_MINOR_FEW_BELOW = 300.0
#: Line styles cycled over the runs of a panel that share a k.
LINE_STYLES = ("-", "--", ":", "-.")
#: A training panel whose positive values span more than this ratio max/min gets a log y axis.
LOG_Y_ABOVE = 100.0
#: Figure size in inches (width, height) of a single-panel figure.
FIG_SIZE = (8.0, 5.0)


def _figure(size: tuple[float, float] = FIG_SIZE) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained")


def _note(fig: Figure, lines: Sequence[str]) -> None:
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


def has_tradeoff(frame: pd.DataFrame, dataset: str, cost: str, measure: str | None = None) -> bool:
    """Whether some row of ``dataset`` has both the ``cost`` column and ``measure`` (default: the dataset's main
    measure)."""
    column = COSTS[cost].column
    measure = measure or main_measure(frame, dataset)
    if measure is None or column not in frame.columns:
        return False
    rows = frame[frame["dataset"] == dataset]
    return bool((rows[column].notna() & rows[measure].notna()).any())


#: Artist ids (``Artist.get_gid``) of a trade-off figure, so that its data can be read back (:func:`read_tradeoff`).
GID_POINT, GID_LABEL, GID_PARALLEL, GID_FRONT, GID_SWEEP = "point:", "label:", "parallel:", "pareto-front", "sweep:"
#: Offset of a point's label from the point, in points (right, up).
LABEL_OFFSET = (5, 3)
#: Hatch of a point whose cost a run file's source declared.
DECLARED_HATCH = "////"


def tradeoff_figure(frame: pd.DataFrame, dataset: str, cost: str = "flops", measure: str | None = None,
                    title: str | None = None) -> Figure:
    """``measure`` (default: the dataset's main measure) of each system on ``dataset`` against ``cost`` (a key of
    :data:`COSTS`), as decided by :func:`lsr_eval.report.tradeoff.tradeoff_points`: colour per family, marker per
    kind (learned sparse model, BM25, fusion, run file), a short label next to each point, each sweep joined by a
    line, the Pareto front as a dashed line through its points only (straight segments between consecutive front
    points, which no point off the front can lie on), a log cost axis when the costs span a decade or more. A fusion
    is drawn at its parts' summed cost; on latency axes a hollow marker joined to it shows the parts run in parallel
    (max). A cost declared by a run file's source is hatched and labelled "(declared)". The rows not drawn are named
    under the axes with the reason."""
    from lsr_eval.efficiency.fusion_cost import RULE

    if cost not in COSTS:
        raise ConfigError(f"cost {cost!r}: expected one of {', '.join(COSTS)}")
    axis = COSTS[cost]
    rows = frame[frame["dataset"] == dataset]
    if rows.empty:
        raise ConfigError(f"dataset {dataset!r} is not in the results")
    measure = measure or main_measure(frame, dataset)
    if measure is None or measure not in rows.columns:
        raise ConfigError(f"no measure {measure!r} for {dataset}")
    t = tradeoff_points(frame, dataset, axis.column, measure)
    pts = t.points
    labels = []
    colours = dict(zip(t.families, _colours(len(t.families))))
    fig = _figure((10.0, 6.0))
    ax = fig.add_subplot()
    for i, (name, curve) in enumerate(sweep_curves(pts).items()):
        line, = ax.plot(curve["x"], curve["y"], color=colours[curve["family"].iloc[0]], linewidth=1.2, alpha=0.7,
                        zorder=2, linestyle=LINE_STYLES[i % len(LINE_STYLES)])
        line.set_gid(GID_SWEEP + name)
    for _, p in pts.iterrows():
        colour = colours[p["family"]]
        dot = ax.scatter([p["x"]], [p["y"]], s=55, marker=KINDS[p["kind"]].marker, color=colour,
                         edgecolor="black", linewidth=0.6, zorder=4, hatch=DECLARED_HATCH if p["declared"] else None)
        dot.set_gid(GID_POINT + p["system"])
        if not math.isnan(p["parallel_x"]):
            hollow = ax.scatter([p["parallel_x"]], [p["y"]], s=55, marker=KINDS[p["kind"]].marker,
                                facecolor="white", edgecolor=colour, linewidth=1.2, zorder=3)
            hollow.set_gid(GID_PARALLEL + p["system"])
            ax.plot([p["parallel_x"], p["x"]], [p["y"], p["y"]], color=colour, linewidth=0.8, linestyle=":",
                    zorder=2)
        if p["label"]:  # points on top of each other share the first one's label
            text = ax.annotate(p["label"], (p["x"], p["y"]), xytext=LABEL_OFFSET, textcoords="offset points",
                               fontsize=7, color="0.15", zorder=5)
            text.set_gid(GID_LABEL + p["system"])
            labels.append(text)
    if len(pts):
        front = pts[pts["on_front"]].sort_values("x")
        line, = ax.plot(front["x"], front["y"], linestyle="--", color="0.35", linewidth=1,
                        zorder=1, marker="o", markersize=13, markerfacecolor="none", markeredgecolor="0.35",
                        markeredgewidth=0.8)  # a ring round each front point: a one-point front shows too
        line.set_gid(GID_FRONT)
    if t.log_x:
        _log_axis(ax.xaxis, ax.set_xscale, list(pts["x"]) + [x for x in pts["parallel_x"] if not math.isnan(x)])
    label = axis.label.replace(" (log scale)", "")
    ax.set_xlabel(label + (" (log scale)" if t.log_x else ""))
    ax.margins(x=0.06, y=0.06)
    _place_labels(ax, labels)
    ax.set_ylabel(f"{measure} on {dataset}")
    ax.set_title(title or f"{measure} against {axis.name} on {dataset}")
    ax.grid(True, which="both", alpha=0.3)
    if len(pts):
        _tradeoff_legend(ax, pts, colours)
    else:
        ax.text(0.5, 0.5, "no system has both values", transform=ax.transAxes, ha="center")
    notes = []
    if (pts["kind"] == "fusion").any():
        notes.append(RULE + ("; hollow marker: parts in parallel" if pts["parallel_x"].notna().any() else ""))
    engines = sorted(set(pts["engine"]) - {""})
    if engines:
        from lsr_eval.report.tradeoff import REFERENCE_ENGINE

        notes.append("retrieval engine: " + (f"{REFERENCE_ENGINE} unless marked [engine]" if REFERENCE_ENGINE in engines
                                             else ", ".join(engines)))
    if pts["declared"].any():
        notes.append("hatched, (declared): cost declared by the run's source, not measured by lsr-eval: " + "; ".join(
            f"{p['system']}: {p['source'] or 'source not given'}" for _, p in pts[pts["declared"]].iterrows()))
    if t.skipped:
        notes.append(f"not plotted: {'; '.join(t.skipped)}")
    _note(fig, notes)
    return fig


#: Vertical offsets (points) tried in turn for a label that would overlap one placed before it.
LABEL_SHIFTS = (3, -10, 12, -19, 21, -28, 30)
#: Radius (points) of a point's marker that labels keep clear of (markers are drawn with s=55, ~7.4 pt wide).
MARKER_RADIUS_PT = 4.5


def _place_labels(ax, labels: list) -> None:
    """Each label goes right of its point (left of it in the right fifth of the axes, else it would leave them);
    one that would overlap a label placed before it or another point's marker, or leave the axes, moves up or down
    (:data:`LABEL_SHIFTS`), then tries the other side; labels are placed by increasing cost."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # the layout, so that label boxes are where they will be drawn
    renderer = fig.canvas.get_renderer()
    to_axes = ax.transData + ax.transAxes.inverted()
    radius = MARKER_RADIUS_PT * fig.dpi / 72
    markers = {}
    for text in labels:
        cx, cy = ax.transData.transform(text.xy)
        markers[id(text)] = Bbox([[cx - radius, cy - radius], [cx + radius, cy + radius]])
    placed = []
    frame = ax.get_window_extent(renderer)
    for text in sorted(labels, key=lambda t: (t.xy[0], t.xy[1])):
        obstacles = placed + [m for key, m in markers.items() if key != id(text)]
        x, _ = to_axes.transform(text.xy)
        sides = [(-LABEL_OFFSET[0], "right"), (LABEL_OFFSET[0], "left")]
        if x <= 0.8:
            sides.reverse()
        if x < 0.2:
            sides = sides[:1]  # a label left of a point near the left edge would leave the axes
        chosen = None
        for dx, align in sides:
            text.set_horizontalalignment(align)
            for dy in LABEL_SHIFTS:
                text.xyann = (dx, dy)
                box = text.get_window_extent(renderer)
                inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
                if inside and not any(box.overlaps(other) for other in obstacles):
                    chosen = (dx, dy, align)
                    break
            if chosen:
                break
        if chosen is None:  # crowded everywhere: the first place
            dx, align = sides[0]
            text.set_horizontalalignment(align)
            text.xyann = (dx, LABEL_SHIFTS[0])
        placed.append(text.get_window_extent(renderer))


def _tradeoff_legend(ax, pts: pd.DataFrame, colours: dict) -> None:
    """One entry per family drawn (its colour, with its kind's marker), per kind drawn (its marker), for declared
    costs, and for the lines drawn."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    kind_of = {f: mine.iloc[0] if len(set(mine)) == 1 else "" for f, mine in pts.groupby("family", sort=False)["kind"]}
    handles = [Line2D([], [], marker=KINDS[kind_of[f]].marker if kind_of[f] else "o", linestyle="",
                      color=colours[f], markeredgecolor="black", label=f) for f in dict.fromkeys(pts["family"])]
    handles += [Line2D([], [], marker=KINDS[k].marker, linestyle="", color="0.6", markeredgecolor="black",
                       label=f"kind: {KINDS[k].name}") for k in KINDS if (pts["kind"] == k).any()]
    if pts["declared"].any():
        handles.append(Patch(facecolor="0.8", edgecolor="black", hatch=DECLARED_HATCH,
                             label="cost declared by the run's source"))
    for i, sweep in enumerate(dict.fromkeys(s for s in pts["sweep"] if s)):
        what = sweep.split(":", 1)[1].replace("_", " ").replace("+", ", ")
        handles.append(Line2D([], [], color="0.3", linewidth=1.2, linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                              label=f"sweep of {sweep.split(':', 1)[0]}: {what}"))
    if (pts["sweep"] != "").any():
        handles.append(Line2D([], [], linestyle="", label="(d64: 64 document terms, q16: 16 query terms)"))
    if pts["parallel_x"].notna().any():
        handles.append(Line2D([], [], marker="D", linestyle="", markerfacecolor="white", markeredgecolor="0.3",
                              label="fusion, parts in parallel"))
    handles.append(Line2D([], [], linestyle="--", color="0.35", marker="o", markersize=9, markerfacecolor="none",
                          markeredgecolor="0.35", label="Pareto front (ringed points, joined)"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def read_tradeoff(fig: Figure) -> dict:
    """The data a trade-off figure shows, read back from its artists: points ``{system: [x, y]}``, labels
    ``{system: text}``, parallel points, the Pareto front's vertices, sweep lines, axis scale and the note."""
    ax = fig.axes[0]
    out: dict = {"points": {}, "labels": {}, "parallel": {}, "front": [], "sweeps": {}, "xscale": ax.get_xscale(),
                 "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "note": " ".join(fig.get_supxlabel().split())}
    for c in ax.collections:
        gid = c.get_gid() or ""
        xy = [float(v) for v in c.get_offsets()[0]]
        if gid.startswith(GID_POINT):
            out["points"][gid[len(GID_POINT):]] = xy
        elif gid.startswith(GID_PARALLEL):
            out["parallel"][gid[len(GID_PARALLEL):]] = xy
    for text in ax.texts:
        gid = text.get_gid() or ""
        if gid.startswith(GID_LABEL):
            out["labels"][gid[len(GID_LABEL):]] = text.get_text()
    for line in ax.lines:
        gid = line.get_gid() or ""
        xy = [[float(x), float(y)] for x, y in zip(line.get_xdata(), line.get_ydata())]
        if gid == GID_FRONT:
            out["front"] = xy
        elif gid.startswith(GID_SWEEP):
            out["sweeps"][gid[len(GID_SWEEP):]] = xy
    return out


def rescaling_figure(frame: pd.DataFrame, dataset: str, measure: str | None = None,
                     title: str | None = None) -> Figure:
    """``measure`` (default: the dataset's main measure) of each model with a rescaling k on ``dataset`` against
    k (log2 axis): colour per family (the trade-off figures' colours), a line through each backbone's models when
    they have distinct k, every model labelled with its system name."""
    rows = frame[(frame["dataset"] == dataset) & frame["k"].notna()]
    measure = measure or main_measure(frame, dataset)
    if rows.empty or measure is None or measure not in rows.columns:
        raise ConfigError(f"no model with a rescaling k and a {measure!r} value on {dataset!r}")

    fig = _figure()
    ax = fig.add_subplot()
    group_col = group_column(frame)
    families = list(dict.fromkeys(row_family(r) for _, r in frame.iterrows()))  # as in the trade-off figures
    palette = dict(zip(families, _colours(len(families))))
    ok = rows[rows[measure].notna()]
    skipped = [f"{r['system']} ({why_missing(r['status'])})" for _, r in rows[rows[measure].isna()].iterrows()]
    for group, mine in ok.groupby(group_col, sort=False):
        mine = mine.sort_values("k")
        colour = palette[row_family(mine.iloc[0])]
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


def _log_axis(axis, set_scale, values: Sequence[float], fmt: str = "{:g}") -> None:
    """A log axis with plain numbers as tick labels (``0.5``, ``2``, ``300``, not ``2 x 10^0``; ``fmt``: how a tick
    is written, ``{:,.0f}`` for counts). Minor ticks are labelled where the values span little: all of them below a
    ratio max/min of 3, those with leading digit 2, 3 or 5 below :data:`LABEL_MINOR_BELOW`, 2 or 5 below
    :data:`LABEL_MINOR_FEW_BELOW`, none above (they would crowd)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    set_scale("log")
    axis.set_major_formatter(FuncFormatter(lambda x, _: fmt.format(x)))
    span = max(values) / min(values) if values and min(values) > 0 else math.inf
    if span < 3:
        axis.set_minor_formatter(FuncFormatter(lambda x, _: fmt.format(x)))
    elif span < LABEL_MINOR_BELOW:
        axis.set_minor_formatter(FuncFormatter(lambda x, _: fmt.format(x) if f"{x:e}"[0] in "235" else ""))
    elif span < LABEL_MINOR_FEW_BELOW:
        axis.set_minor_formatter(FuncFormatter(lambda x, _: fmt.format(x) if f"{x:e}"[0] in "25" else ""))
    else:
        axis.set_minor_formatter(NullFormatter())


def _colours(n: int) -> list:
    """``n`` distinct colours: tab10, or beyond 10 tab20's strong shades first, then its light ones."""
    from matplotlib import colormaps

    if n <= 10:
        cmap = colormaps["tab10"]
        return [cmap(i) for i in range(n)]
    cmap = colormaps["tab20"]
    order = list(range(0, 20, 2)) + list(range(1, 20, 2))
    return [cmap(order[i % 20]) for i in range(n)]


def auto_smooth(runs: Iterable[TrainingRun]) -> int:
    """Moving-average window giving the longest log about :data:`SMOOTH_POINTS` independent points (at least 1)."""
    longest = max((len(r.log) for r in runs), default=0)
    return max(1, longest // SMOOTH_POINTS)


def _stage(run: TrainingRun) -> str:
    return str((run.manifest or {}).get("stage", "train"))


def _panel_label(key: str, runs: Sequence[TrainingRun]) -> str:
    """The y label of a panel: a ``loss`` is the objective of its runs' stage (SPLADE ranking + sparsity, or the
    masked-LM loss of middle training)."""
    if key != "loss":
        return TRAINING_LABELS.get(key, key)
    stages = {_stage(r) for r in runs}
    if stages == {"middle-train"}:
        return "loss: masked LM (+ FLOPS)"
    if "middle-train" in stages:
        return "training loss (each panel: its runs' objective)"
    return TRAINING_LABELS["loss"]


def training_figure(runs: Iterable[TrainingRun], key: str = "loss", smooth: int | None = None,
                    title: str | None = None,
                    chance: Callable[[TrainingRun], int | None] | None = None) -> Figure:
    """``key`` of each run's log against the step: one panel per backbone, colour by log2 k (viridis), the raw
    values faint and their moving average over ``smooth`` logged steps solid (``smooth=1``: raw only; None:
    :func:`auto_smooth`). ``chance(run)``: the number of candidates a query's loss is over; each panel then draws
    ln(candidates), the ranking loss of uniform scores (a run lying on it has collapsed). The y label follows the
    runs' stage (a middle-training loss is the masked-LM loss)."""
    runs = list(runs)
    if smooth is None:
        smooth = auto_smooth(runs)
    check("smooth", smooth, int, SMOOTH)
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
            label = (f"k={r.k:g}" if r.k is not None
                     else f"{r.name} (masked LM)" if _stage(r) == "middle-train" else f"{r.name} (k unknown)")
            if r.k is not None and ks.count(r.k) > 1:  # several runs with this k: name them
                label += f" ({r.name})"
            if smooth > 1:
                ax.plot(r.log["step"], y, color=colour, alpha=0.25, linewidth=0.8, linestyle=style)
                ax.plot(r.log["step"], y.rolling(smooth, min_periods=1).mean(), color=colour, linewidth=1.6,
                        label=label, linestyle=style)
            else:
                ax.plot(r.log["step"], y, color=colour, linewidth=1.4, label=label, linestyle=style)
        for c in sorted({c for c in (chance(r) if chance else None for r in mine) if c and c >= 2}):
            ax.axhline(math.log(c), color="crimson", linestyle=":", linewidth=1.2, zorder=1,
                       label=f"uniform scores: ln {c} = {math.log(c):.2f}")
            values.append(math.log(c))
        if values and min(values) > 0 and max(values) / min(values) > LOG_Y_ABOVE:
            ax.set_yscale("log")
        ax.set_title(textwrap.fill(backbone, TITLE_WRAP), fontsize=9)
        ax.set_xlabel("training step")
        ax.set_ylabel(_panel_label(key, mine))
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7, title="rescaling", title_fontsize=7)
    for ax in axes[len(backbones):]:
        ax.set_visible(False)
    what = _panel_label(key, drawn)
    what += f" (moving average over {smooth} logged steps)" if smooth > 1 else ""
    fig.suptitle(title or f"{what[0].upper()}{what[1:]} by rescaling k", fontsize=11)
    _note(fig, [f"not plotted: {'; '.join(skipped)}"] if skipped else [])
    return fig


def head_norm_figure(points: pd.DataFrame, title: str | None = None,
                     groups: Sequence[str] | None = None, diagnoses: Sequence[HeadDiagnosis] = ()) -> Figure:
    """Each backbone's head norm (x, log scale) against its best k (y, log2 scale): the best k as a large marker,
    the other k values tried as small grey dots, the k its run took from inspect-head's rule (``suggested_k``) as
    a hollow star; each of ``diagnoses`` (inspect-head on a head as loaded) as a black cross at its norm and
    suggested k. ``points``: :func:`lsr_eval.report.best_k.head_norm_points`; ``groups``: the backbone order that
    gives colours in the trade-off figures (``frame["backbone"]``), so that a backbone has one colour throughout a
    report."""
    from matplotlib.transforms import offset_copy

    fig = _figure((FIG_SIZE[0], FIG_SIZE[1] + 1.5))
    ax = fig.add_subplot()

    def shifted(dx: float):
        """Data coordinates moved ``dx`` points sideways: markers at one (norm, k) sit side by side, none hidden."""
        return offset_copy(ax.transData, fig=fig, x=dx, y=0, units="points")

    ok = points[points["head_norm"].notna() & points["best_k"].notna()]
    skipped = [f"{p.backbone} ({'no best k' if math.isnan(p.best_k) else p.source})"
               for p in points.itertuples() if p.Index not in ok.index]
    order = list(dict.fromkeys([*(groups or []), *points["backbone"]]))
    palette = _colours(len(order))
    colours = [palette[order.index(b)] for b in ok["backbone"]]
    all_k: set[float] = set()
    norms = list(ok["head_norm"])
    # backbones at about one norm (within 10%) go side by side, 22 points apart; a backbone's suggested k sits
    # 9 points right of its best k, inspect-head's crosses stack leftwards from the backbones
    slots: list[float] = []

    def slot(norm: float) -> int:
        n = sum(abs(math.log(x / norm)) < 0.1 for x in slots)
        slots.append(norm)
        return n

    for colour, p in zip(colours, ok.itertuples()):
        dx = 22.0 * slot(p.head_norm)
        others = [k for k in p.ks if k != p.best_k]
        all_k.update(p.ks)
        ax.scatter([p.head_norm] * len(others), others, s=18, color="0.6", zorder=2, transform=shifted(dx))
        ax.scatter([p.head_norm], [p.best_k], s=90, color=colour, edgecolor="black", zorder=3, transform=shifted(dx),
                   label=f"{p.backbone}: best k={p.best_k:g} ({p.value:.4g})")
        suggested = getattr(p, "suggested_k", math.nan)
        if not math.isnan(suggested):
            all_k.add(suggested)
            ax.scatter([p.head_norm], [suggested], s=160, marker="*", facecolor="none", edgecolor=colour,
                       linewidth=1.5, zorder=4, transform=shifted(dx + 9),
                       label=f"{p.backbone}: suggested k={suggested:g}")
    placed: list[tuple[float, float]] = []   # crosses at about one place go side by side, labels one under the other
    for d in diagnoses:
        all_k.add(d.suggested_k)
        norms.append(d.head_norm)
        n = sum(k == d.suggested_k and abs(math.log(x / d.head_norm)) < 0.1 for x, k in placed)
        placed.append((d.head_norm, d.suggested_k))
        ax.scatter([d.head_norm], [d.suggested_k], s=40, marker="x", color="black", zorder=5,
                   transform=shifted(-12.0 - 10.0 * n))
        name = d.label.rsplit("/", 1)[-1]
        ax.annotate(f"x{'' if n == 0 else n + 1} {name}{f' ({d.tied_input} input)' if d.tied_input else ''}",
                    (d.head_norm, d.suggested_k), textcoords="offset points", ha="right",
                    xytext=(-18.0 - 10.0 * n - 4, LABEL_OFFSET[1] + 9 * n), fontsize=6)
    _log_axis(ax.xaxis, ax.set_xscale, norms)
    ax.set_yscale("log", base=2)
    if all_k:
        from matplotlib.ticker import FixedLocator, NullLocator

        ax.yaxis.set_major_locator(FixedLocator(sorted(all_k)))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_yticklabels([f"{k:g}" for k in sorted(all_k)])
        lo, hi = min(all_k), max(all_k)
        ax.set_ylim(lo / 1.5, hi * 1.5)
    if norms:
        ax.set_xlim(min(norms) / 1.3, max(norms) * 1.3)
    if not ok.empty:   # below the axes: it hides no marker
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1, frameon=False)
    elif not diagnoses:
        ax.text(0.5, 0.5, "no backbone has both a head norm and a best k", transform=ax.transAxes, ha="center")
    ax.set_xlabel("MLM-head norm before rescaling (Frobenius norm of the decoder weight, log scale)")
    criterion = points["criterion"].iloc[0] if len(points) else "?"
    ax.set_ylabel(f"best rescaling k by {criterion} (log2 scale)")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title or "Head norm against the best and the suggested k\n(grey: other k tried; star: the k a run "
                          "took from inspect-head's rule; x: inspect-head's suggestion)", fontsize=10)
    sources = [f"{p.backbone}: {p.source}" for p in ok.itertuples()]
    _note(fig, ["head norm from " + "; ".join(sources)] * bool(sources)
          + ([f"not plotted: {'; '.join(skipped)}"] if skipped else []))
    return fig


def save_figure(fig: Figure, folder: str | Path, stem: str, dpi: int = 150) -> list[Path]:
    """Write ``folder/stem.png`` (``dpi``) and ``folder/stem.pdf``; returns both paths. The figure is laid out once,
    for the PNG: the PDF keeps that layout instead of computing it again (30% of its time), and so does the figure
    afterwards."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{stem}.png", folder / f"{stem}.pdf"]
    fig.savefig(paths[0], dpi=dpi)
    fig.set_layout_engine("none")
    fig.savefig(paths[1])
    return paths

