"""A whole report of a results folder: tables (md, tex, csv), figures (png, pdf), ``index.html`` and a manifest.

Layout of the output folder::

    tables/benchmarks.*, tables/benchmark-<name>.*, tables/rescaling.*, tables/efficiency-<dataset>.*, tables/training.*
    plots/flops-<dataset>.*, plots/latency-<dataset>.* (+ .json: the points, labels and front drawn, read back
    from the figure), plots/training-<key>.*, plots/head-norm-best-k.*,
    plots/rescaling-<dataset>.*
    index.html, manifest.json

A table or figure is made only where the results hold what it needs: the rescaling table when some row has a
rescaling k (and a figure of the main measure against k for each dataset where such rows have it), an efficiency
table and trade-off figures for each dataset with efficiency columns, training figures
for the keys of :data:`TRAINING_CURVES` that some log has, the head-norm figure when training runs and the
rescaling table both exist.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lsr_eval.errors import ConfigError
from lsr_eval.manifest import prepare_output, write_manifest
from lsr_eval.report.best_k import head_norm_points
from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.html import FigureFiles, Section, render_html
from lsr_eval.report.linking import link_training
from lsr_eval.report.loading import Results, load_results
from lsr_eval.report.plots import (COSTS, has_tradeoff, head_norm_figure, read_tradeoff, rescaling_figure,
                                   save_figure, tradeoff_figure, training_figure)
from lsr_eval.report.summary import benchmarks_table, training_table
from lsr_eval.report.table import Table
from lsr_eval.report.tables import (RESCALING_COLUMNS, benchmark_table, datasets_in_order, efficiency_datasets,
                                    efficiency_table, group_column, main_measure, rescaling_table)

#: Logged quantities drawn against the training step, when some log has them.
TRAINING_CURVES = ("loss", "active_dims_q", "active_dims_d")
#: Costs of the trade-off figures (keys of :data:`lsr_eval.report.plots.COSTS`).
TRADEOFF_COSTS = ("flops", "latency")
#: More datasets than this with rescaled models: measure-against-k figures for the in-domain datasets only.
RESCALING_FIGURES_MAX = 4


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote."""

    out: Path
    tables: dict[str, list[Path]] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    figure_data: list[Path] = field(default_factory=list)
    html: Path | None = None
    manifest: Path | None = None

    def all(self) -> list[Path]:
        paths = [p for ps in self.tables.values() for p in ps] + self.figures + self.figure_data
        return paths + [p for p in (self.html, self.manifest) if p is not None]


def rescaling_figure_datasets(frame) -> list[str]:
    """Datasets that get a measure-against-k figure: those where a model with a rescaling k has the main measure;
    with more than :data:`RESCALING_FIGURES_MAX` of them (a BEIR-13 study), only the in-domain columns'."""
    have = []
    for d in datasets_in_order(frame):
        rows = frame[(frame["dataset"] == d) & frame["k"].notna()]
        measure = main_measure(frame, d)
        if measure in rows.columns and rows[measure].notna().any():
            have.append(d)
    if len(have) > RESCALING_FIGURES_MAX:
        have = [d for d in have if d in {c.dataset for c in RESCALING_COLUMNS}]
    return have


def write_report(results: str | Path | Results, out: str | Path, *, fmt: NumberFormat = NumberFormat(),
                 smooth: int | None = None, best_k_by: str | None = None, overwrite: bool = False) -> ReportFiles:
    """Read ``results`` (a folder or loaded :class:`Results`) and write the report into ``out`` (see the module
    doc); ``smooth``: moving-average window of the training curves (None: automatic); ``best_k_by``: rescaling
    table column choosing each backbone's best k (None: the first of MS MARCO RR@10, DL19 nDCG@10, BEIR-13 mean
    with a value)."""
    results = results if isinstance(results, Results) else load_results(results)
    experiment = {"results": str(results.root.resolve()), "scale": fmt.scale, "smooth": smooth,
                  "best_k_by": best_k_by}
    out = prepare_output(out, experiment, overwrite)
    files = ReportFiles(out)
    tables_dir, plots_dir = out / "tables", out / "plots"

    def table(t: Table) -> Table:
        files.tables[t.name] = t.write(tables_dir)
        return t

    def figure(fig, stem: str, caption: str) -> FigureFiles:
        png, pdf = save_figure(fig, plots_dir, stem)
        files.figures += [png, pdf]
        return FigureFiles(caption, png, pdf)

    frame = link_training(results.combined(), results.training)
    sections: list[Section] = []
    overview = Section("Overview", "What was read from the results folder (manifests: under each benchmark and "
                                   "in the training section).")
    if results.benchmarks:
        overview.tables.append(table(benchmarks_table(results.benchmarks.values())))
    if results.training:
        overview.tables.append(table(training_table(results.training.values())))
    sections.append(overview)

    if frame["k"].notna().any():
        resc = Section("Rescaling k", "Each backbone trained with MLM-head rescaling k: in-domain effectiveness and "
                                      "BEIR-13 nDCG@10.")
        rt = table(rescaling_table(frame, fmt=fmt))
        resc.tables.append(rt)
        for d in rescaling_figure_datasets(frame):
            resc.figures.append(figure(rescaling_figure(frame, d), f"rescaling-{d}",
                                       f"{main_measure(frame, d)} against the rescaling k on {d}"))
        if results.training:
            try:
                points = head_norm_points(rt, results.training, best_k_by)
            except ConfigError as e:  # no criterion column with a value: say so, keep the rest of the report
                if best_k_by is not None:
                    raise
                resc.notes.append(f"no head-norm figure: {e}")
            else:
                resc.figures.append(figure(head_norm_figure(points, groups=list(frame[group_column(frame)])),
                                           "head-norm-best-k",
                                           f"MLM-head norm against the best k (by {points['criterion'].iloc[0]})"))
        sections.append(resc)

    eff_datasets = efficiency_datasets(frame)
    if eff_datasets:
        eff = Section("Effectiveness and efficiency", "Per dataset with efficiency measurements: effectiveness, "
                                                      "latency, FLOPs, active dimensions and index size.")
        for d in eff_datasets:
            eff.tables.append(table(efficiency_table(frame, d, fmt=fmt)))
            for cost in TRADEOFF_COSTS:
                if has_tradeoff(frame, d, cost):
                    measure = main_measure(frame, d)
                    fig = tradeoff_figure(frame, d, cost)
                    eff.figures.append(figure(fig, f"{cost}-{d}", f"{measure} against {COSTS[cost].name} on {d}"))
                    data = plots_dir / f"{cost}-{d}.json"
                    data.write_text(json.dumps(read_tradeoff(fig), indent=1) + "\n", encoding="utf-8")
                    files.figure_data.append(data)
        sections.append(eff)

    for name, bench in results.benchmarks.items():
        s = Section(f"Benchmark {name}", f"Read from {bench.source}.")
        s.tables.append(table(benchmark_table(bench.table, name=f"benchmark-{name}",
                                              title=f"{name}: main measure per dataset and system", fmt=fmt)))
        s.manifests.append((f"{name}/manifest.json", bench.manifest))
        sections.append(s)

    if results.training:
        tr = Section("Training", "Training logs by backbone and rescaling k.")
        for key in TRAINING_CURVES:
            if any(key in r.log.columns for r in results.training.values()):
                tr.figures.append(figure(training_figure(results.training.values(), key, smooth),
                                         f"training-{key}", f"{key} against the training step, by backbone and k"))
        tr.manifests += [(f"train/{r.name}/manifest.json", r.manifest) for r in results.training.values()]
        tr.notes += [n for r in results.training.values() for n in r.notes]
        sections.append(tr)

    notes = list(frame.attrs.get("merged", [])) + list(frame.attrs.get("link_notes", []))
    if notes:
        sections.append(Section("Notes", "Rows combined across benchmark folders, and links not made.", notes=notes))

    header = [f"results: {results.root.resolve()}",
              f"{len(results.benchmarks)} benchmark folder(s), {len(frame)} (dataset, system) rows after merging, "
              f"{len(results.training)} training run(s)",
              f"effectiveness as {fmt.effectiveness_unit}; latency in ms; a cell without a number says why"]
    files.html = out / "index.html"
    files.html.write_text(render_html(f"lsr-eval report: {results.root.name}", sections, out, files.tables, header),
                          encoding="utf-8")
    files.manifest = write_manifest(
        out, "report", experiment, format=asdict(fmt),
        counts={"benchmarks": len(results.benchmarks), "rows": len(frame), "training_runs": len(results.training),
                "tables": len(files.tables), "figures": len(files.figures) // 2},
        outputs=[p.relative_to(out).as_posix() for p in files.all() if p != out / "manifest.json"])
    return files

