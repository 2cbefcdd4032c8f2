"""A whole report of a results folder: tables (md, tex, csv), figures (png, pdf), ``index.html`` and a manifest.

Design notes: docs/design.md."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from lsr_eval.errors import ConfigError
from lsr_eval.manifest import prepare_output, recorded, write_manifest
from lsr_eval.report.best_k import head_norm_points
from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.html import FigureFiles, Section, render_html
from lsr_eval.report.linking import link_training
from lsr_eval.report.papers import (EFFICIENCY_BENCHMARK, RESCALING_BENCHMARK, efficiency_paper_table,
                                    rescaling_paper_table)
from lsr_eval.report.loading import Results, load_results
from lsr_eval.report.rescaling_runs import candidates, diagnoses_table, runs_table
from lsr_eval.report.plots import (COSTS, has_tradeoff, head_norm_figure, read_tradeoff, rescaling_figure,
                                   save_figure, tradeoff_figure, training_figure)
from lsr_eval.report.loading import measure_columns
from lsr_eval.report.seeds import seeds_figure, seeds_table
from lsr_eval.report.summary import benchmarks_table, training_table
from lsr_eval.report.table import Table
from lsr_eval.report.tables import (RESCALING_COLUMNS, benchmark_tables, check_measures, datasets_in_order,
                                    dataset_measures, efficiency_datasets, efficiency_table, group_column,
                                    main_measure, rescaling_table, _slug)

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
                 smooth: int | None = None, best_k_by: str | None = None, measures: Sequence[str] | None = None,
                 overwrite: bool = False) -> ReportFiles:
    """Read ``results`` (a folder or loaded :class:`Results`) and write the report into ``out`` (see the module
    doc); ``smooth``: moving-average window of the training curves (None: automatic); ``best_k_by``: rescaling
    table column choosing each backbone's best k (None: the first of MS MARCO RR@10, DL19 nDCG@10, BEIR-13 mean
    with a value); ``measures``: the measures the benchmark and efficiency tables show, the first one the figures
    (None: every measure of each dataset, its main measure in the figures)."""
    results = results if isinstance(results, Results) else load_results(results)
    frame = link_training(results.combined(), results.training)
    if measures is not None:
        measures = list(measures)
        check_measures(measures, measure_columns(frame.columns))
    experiment = {"results": str(results.root.resolve()), "scale": fmt.scale, "smooth": smooth,
                  "best_k_by": best_k_by, **({"measures": measures} if measures is not None else {})}
    out = prepare_output(out, experiment, overwrite)
    files = ReportFiles(out)
    tables_dir, plots_dir = out / "tables", out / "plots"
    for owned in (tables_dir, plots_dir):   # a rewrite leaves no table or figure of a result no longer there
        shutil.rmtree(owned, ignore_errors=True)

    def table(t: Table) -> Table:
        files.tables[t.name] = t.write(tables_dir)
        return t

    def figure(fig, stem: str, caption: str) -> FigureFiles:
        png, pdf = save_figure(fig, plots_dir, stem)
        files.figures += [png, pdf]
        return FigureFiles(caption, png, pdf)

    def figure_measure(d: str) -> str | None:
        """The measure of ``d``'s figures: the first of ``measures`` it has, else its main measure."""
        if measures is None:
            return main_measure(frame, d)
        return next(iter(dataset_measures(frame, d, measures)), None)

    sections: list[Section] = []  # results first, then what they were read from (provenance)
    for name, bench in results.benchmarks.items():
        rows = bench.table
        s = Section(f"Benchmark {name}", f"Read from {bench.source}; systems as rows"
                    + ("." if rows["dataset"].nunique() < 2 else ", one table per measure, datasets as columns and "
                       "their mean last (as the BEIR papers)."))
        if measures is not None and not set(measures) & set(measure_columns(rows.columns)):
            s.notes.append(f"none of the measures asked for ({', '.join(measures)}) is in this benchmark; it has "
                           f"{', '.join(measure_columns(rows.columns)) or 'none'}")
        else:
            s.tables += [table(t) for t in benchmark_tables(rows, name=f"benchmark-{name}", measures=measures,
                                                            fmt=fmt, label=name)]
            linked = link_training(rows, results.training)
            for d in dict.fromkeys(rows["dataset"]):
                for m in (dataset_measures(rows, d, measures) if measures is not None else [main_measure(rows, d)]):
                    st = m and seeds_table(linked, d, m, name=f"seeds-{name}-{_slug(d)}-{_slug(m)}",
                                           runs=results.training, fmt=fmt)
                    if st:
                        s.tables.append(table(st))
                        s.figures.append(figure(seeds_figure(st), st.name, f"{m} on {d}: mean and 95% interval "
                                                                          "over training seeds, by arm"))
            if name == RESCALING_BENCHMARK:
                s.tables.append(table(rescaling_paper_table(linked, fmt=fmt)))
                for d in [d for d in datasets_in_order(linked) if has_tradeoff(linked, d, "flops", "nDCG@10")][:1]:
                    s.figures.append(figure(tradeoff_figure(linked, d, "flops", "nDCG@10"), f"{name}-flops-{d}",
                                            f"nDCG@10 against FLOPs on {d}, by backbone and k"))
            elif name == EFFICIENCY_BENCHMARK:
                s.tables.append(table(efficiency_paper_table(rows, fmt=fmt)))
        sections.append(s)

    eff_datasets = efficiency_datasets(frame)
    if eff_datasets:
        eff = Section("Effectiveness and efficiency", "Per dataset with efficiency measurements: effectiveness, "
                                                      "latency (query encoding + search), FLOPs, active dimensions "
                                                      "and index size.")
        for d in eff_datasets:
            eff.tables.append(table(efficiency_table(frame, d, measures=measures, fmt=fmt)))
            measure = figure_measure(d)
            for cost in TRADEOFF_COSTS:
                if measure and has_tradeoff(frame, d, cost, measure):
                    fig = tradeoff_figure(frame, d, cost, measure)
                    eff.figures.append(figure(fig, f"{cost}-{d}", f"{measure} against {COSTS[cost].name} on {d}"))
                    data = plots_dir / f"{cost}-{d}.json"
                    data.write_text(json.dumps(read_tradeoff(fig), indent=1) + "\n", encoding="utf-8")
                    files.figure_data.append(data)
        sections.append(eff)

    rescaled = [r for r in results.training.values() if r.k is not None]
    if frame["k"].notna().any() or rescaled:
        resc = Section("Rescaling k", "MLM-head rescaling (the head divided by k before training): each training run "
                                      "with a k (stability, dev selection, results), then backbone x k, the main "
                                      "measure against k, the ranking loss by k, the head norm against the best "
                                      "and the suggested k, and inspect-head's diagnoses.")
        if rescaled:
            resc.tables.append(table(runs_table(frame, rescaled, fmt=fmt)))
        rt = None
        if frame["k"].notna().any():
            rt = table(rescaling_table(frame, fmt=fmt))
            resc.tables.append(rt)
            for d in rescaling_figure_datasets(frame):
                resc.figures.append(figure(rescaling_figure(frame, d), f"rescaling-{d}",
                                           f"{main_measure(frame, d)} against the rescaling k on {d}"))
        if any("rank" in r.log.columns for r in rescaled):
            resc.figures.append(figure(training_figure(rescaled, "rank", smooth, chance=candidates),
                                       "rank-loss-by-k", "ranking loss against the training step, by backbone and "
                                                         "k, with the loss of uniform scores"))
        if rescaled:
            try:
                points = head_norm_points(rt, results.training, best_k_by)
            except ConfigError as e:  # no criterion column with a value: say so, keep the rest of the report
                if best_k_by is not None:
                    raise
                resc.notes.append(f"no head-norm figure: {e}")
            else:
                resc.figures.append(figure(head_norm_figure(points, groups=list(frame[group_column(frame)]),
                                                            diagnoses=list(results.diagnoses.values())),
                                           "head-norm-best-k",
                                           f"MLM-head norm against the best k (by {points['criterion'].iloc[0]}) "
                                           "and the suggested k"))
        if results.diagnoses:
            resc.tables.append(table(diagnoses_table(results.diagnoses)))
        sections.append(resc)

    if results.training:
        tr = Section("Training", "Training logs by backbone and rescaling k.")
        for key in TRAINING_CURVES:
            if any(key in r.log.columns for r in results.training.values()):
                tr.figures.append(figure(training_figure(results.training.values(), key, smooth),
                                         f"training-{key}", f"{key} against the training step, by backbone and k"))
        tr.notes += [n for r in results.training.values() for n in r.notes]
        sections.append(tr)

    provenance = Section("Provenance", "What was read from the results folder, and the manifests: what was run, on "
                                       "what, when.")
    if results.benchmarks:
        provenance.tables.append(table(benchmarks_table(results.benchmarks.values())))
    if results.training:
        provenance.tables.append(table(training_table(results.training.values())))
    provenance.manifests += [(f"{name}/manifest.json", b.manifest) for name, b in results.benchmarks.items()]
    provenance.manifests += [(f"train/{r.name}/manifest.json", r.manifest) for r in results.training.values()]
    provenance.notes += list(frame.attrs.get("merged", [])) + list(frame.attrs.get("link_notes", []))
    sections.append(provenance)

    header = [f"results: {results.root.resolve()}",
              f"{len(results.benchmarks)} benchmark folder(s), {len(frame)} (dataset, system) rows after merging, "
              f"{len(results.training)} training run(s)",
              f"effectiveness as {fmt.effectiveness_unit}; latency in ms; a cell without a number says why; bold: "
              "the best of its column"]
    files.html = out / "index.html"
    page = render_html(f"lsr-eval report: {results.root.name}", sections, out, files.tables, header)
    files.html.write_text(recorded(page, out), encoding="utf-8")   # under results/: no folder of this machine
    files.manifest = write_manifest(
        out, "report", experiment, format=asdict(fmt),
        counts={"benchmarks": len(results.benchmarks), "rows": len(frame), "training_runs": len(results.training),
                "tables": len(files.tables), "figures": len(files.figures) // 2},
        outputs=[p.relative_to(out).as_posix() for p in files.all() if p != out / "manifest.json"])
    return files
