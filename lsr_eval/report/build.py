"""A whole report of a results folder: tables (md, tex, csv), figures (png, pdf), ``index.html`` and a manifest.

Design notes: docs/design.md."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from lsr_eval.errors import ConfigError
from lsr_eval.manifest import prepare_output, recorded, write_manifest
from lsr_eval.report.best_k import head_norm_points
from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.html import FigureFiles, Section, render_html
from lsr_eval.report.linking import link_training
from lsr_eval.report.loading import Results, load_results, measure_columns
from lsr_eval.report.papers import PAPERS
from lsr_eval.report.plots import (
    COSTS,
    has_tradeoff,
    head_norm_figure,
    read_tradeoff,
    rescaling_figure,
    save_figure,
    tradeoff_figure,
    training_figure,
)
from lsr_eval.report.rescaling_runs import candidates, diagnoses_table, runs_table
from lsr_eval.report.seeds import seeds_figure, seeds_table
from lsr_eval.report.settings import table_settings_notes
from lsr_eval.report.summary import benchmarks_table, training_table
from lsr_eval.report.table import Table
from lsr_eval.report.tables import (
    RESCALING_COLUMNS,
    _slug,
    benchmark_tables,
    check_measures,
    dataset_measures,
    datasets_in_order,
    efficiency_datasets,
    efficiency_table,
    group_column,
    main_measure,
    rescaling_table,
)

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


@dataclass
class _Report:
    """What every section of one report shares: the results and their merged frame, the options, and the files
    written so far (each table and figure written as its section adds it)."""

    results: Results
    frame: Any
    fmt: NumberFormat
    smooth: int | None
    best_k_by: str | None
    measures: list[str] | None
    files: ReportFiles
    figures: bool = True

    @property
    def plots_dir(self) -> Path:
        return self.files.out / "plots"

    def table(self, t: Table) -> Table:
        """Write ``t`` (md, tex, csv) under ``tables/``."""
        self.files.tables[t.name] = t.write(self.files.out / "tables")
        return t

    def figure(self, section: Section, draw: Callable[[], Any], stem: str, caption: str) -> Any:
        """Draw a figure (``draw()``), write it (png, pdf) under ``plots/`` and add it to ``section``; returns the
        figure, or None in a report without figures (nothing drawn)."""
        if not self.figures:
            return None
        fig = draw()
        png, pdf = save_figure(fig, self.plots_dir, stem)
        self.files.figures += [png, pdf]
        section.figures.append(FigureFiles(caption, png, pdf))
        return fig

    def figure_measure(self, d: str) -> str | None:
        """The measure of ``d``'s figures: the first of ``measures`` it has, else its main measure."""
        if self.measures is None:
            return main_measure(self.frame, d)
        return next(iter(dataset_measures(self.frame, d, self.measures)), None)


def _seed_tables(rep: _Report, s: Section, name: str, rows, linked) -> None:
    """Per dataset and measure of one benchmark, the spread over training seeds (table and figure) where the
    benchmark has several seeds of an arm."""
    for d in dict.fromkeys(rows["dataset"]):
        for m in (dataset_measures(rows, d, rep.measures) if rep.measures is not None else [main_measure(rows, d)]):
            st = m and seeds_table(linked, d, m, name=f"seeds-{name}-{_slug(d)}-{_slug(m)}",
                                   runs=rep.results.training, fmt=rep.fmt)
            if st:
                s.tables.append(rep.table(st))
                rep.figure(s, lambda: seeds_figure(st), st.name,
                           f"{m} on {d}: mean and 95% interval over training seeds, by arm")


def _paper_tables(rep: _Report, s: Section, name: str, rows, linked) -> None:
    """The paper's own table (and trade-off figure) when benchmark ``name`` reproduces a paper
    (:data:`lsr_eval.report.papers.PAPERS`)."""
    paper = PAPERS.get(name)
    if paper is None:
        return
    s.tables.append(rep.table(paper.make_table(rows, linked, rep.fmt)))
    if paper.tradeoff is not None:
        cost, measure = paper.tradeoff
        frame = linked if paper.frame == "linked" else rows
        for d in [d for d in datasets_in_order(frame) if has_tradeoff(frame, d, cost, measure)][:1]:
            rep.figure(s, lambda: tradeoff_figure(frame, d, cost, measure), f"{name}-{cost}-{d}",
                       paper.caption.format(measure=measure, cost=cost, dataset=d))


def _benchmark_section(rep: _Report, name: str, bench) -> Section:
    """One benchmark folder: its tables (one per measure with several datasets), seed spreads and paper tables;
    a note instead when it has none of the measures asked for."""
    rows, measures = bench.table, rep.measures
    s = Section(f"Benchmark {name}", f"Read from {bench.source}; systems as rows"
                + ("." if rows["dataset"].nunique() < 2 else ", one table per measure, datasets as columns and "
                   "their mean last (as the BEIR papers)."))
    if measures is not None and not set(measures) & set(measure_columns(rows.columns)):
        s.notes.append(f"none of the measures asked for ({', '.join(measures)}) is in this benchmark; it has "
                       f"{', '.join(measure_columns(rows.columns)) or 'none'}")
        return s
    s.tables += [rep.table(t) for t in benchmark_tables(rows, name=f"benchmark-{name}", measures=measures,
                                                        fmt=rep.fmt, label=name)]
    ran = rows[rows["status"] == "ok"]
    s.notes += table_settings_notes(bench.path, list(zip(ran["dataset"], ran["system"])))
    linked = link_training(rows, rep.results.training)
    _seed_tables(rep, s, name, rows, linked)
    _paper_tables(rep, s, name, rows, linked)
    return s


def _efficiency_section(rep: _Report) -> Section | None:
    """Per dataset with efficiency measurements: its table and the trade-off figures (with their data as JSON);
    None when no dataset has them."""
    frame = rep.frame
    eff_datasets = efficiency_datasets(frame)
    if not eff_datasets:
        return None
    eff = Section("Effectiveness and efficiency", "Per dataset with efficiency measurements: effectiveness, "
                                                  "latency (query encoding + search), FLOPs, active dimensions "
                                                  "and index size.")
    for d in eff_datasets:
        eff.tables.append(rep.table(efficiency_table(frame, d, measures=rep.measures, fmt=rep.fmt)))
        measure = rep.figure_measure(d)
        for cost in TRADEOFF_COSTS:
            if measure and has_tradeoff(frame, d, cost, measure):
                fig = rep.figure(eff, lambda: tradeoff_figure(frame, d, cost, measure), f"{cost}-{d}",
                                 f"{measure} against {COSTS[cost].name} on {d}")
                if fig is None:
                    continue
                data = rep.plots_dir / f"{cost}-{d}.json"
                data.write_text(json.dumps(read_tradeoff(fig), indent=1) + "\n", encoding="utf-8")
                rep.files.figure_data.append(data)
    return eff


def _head_norm_figure(rep: _Report, resc: Section, rt: Table | None) -> None:
    """The MLM-head norm against the best k; without a criterion column that has a value, a note (an error when
    ``best_k_by`` named one)."""
    frame, results = rep.frame, rep.results
    try:
        points = head_norm_points(rt, results.training, rep.best_k_by)
    except ConfigError as e:  # no criterion column with a value: say so, keep the rest of the report
        if rep.best_k_by is not None:
            raise
        resc.notes.append(f"no head-norm figure: {e}")
        return
    rep.figure(resc, lambda: head_norm_figure(points, groups=list(frame[group_column(frame)]),
                                              diagnoses=list(results.diagnoses.values())),
               "head-norm-best-k",
               f"MLM-head norm against the best k (by {points['criterion'].iloc[0]}) and the suggested k")


def _rescaling_section(rep: _Report) -> Section | None:
    """Rescaled training runs and benchmark rows with a k: runs, backbone x k, measure against k, ranking loss by
    k, head norm against the best k, diagnoses; None when there is neither."""
    frame, results = rep.frame, rep.results
    rescaled = [r for r in results.training.values() if r.k is not None]
    if not (frame["k"].notna().any() or rescaled):
        return None
    resc = Section("Rescaling k", "MLM-head rescaling (the head divided by k before training): each training run "
                                  "with a k (stability, dev selection, results), then backbone x k, the main "
                                  "measure against k, the ranking loss by k, the head norm against the best "
                                  "and the suggested k, and inspect-head's diagnoses.")
    if rescaled:
        resc.tables.append(rep.table(runs_table(frame, rescaled, fmt=rep.fmt)))
    rt = None
    if frame["k"].notna().any():
        rt = rep.table(rescaling_table(frame, fmt=rep.fmt))
        resc.tables.append(rt)
        for d in rescaling_figure_datasets(frame):
            rep.figure(resc, lambda: rescaling_figure(frame, d), f"rescaling-{d}",
                       f"{main_measure(frame, d)} against the rescaling k on {d}")
    if any("rank" in r.log.columns for r in rescaled):
        rep.figure(resc, lambda: training_figure(rescaled, "rank", rep.smooth, chance=candidates),
                   "rank-loss-by-k", "ranking loss against the training step, by backbone and k, with the loss of "
                                     "uniform scores")
    if rescaled:
        _head_norm_figure(rep, resc, rt)
    if results.diagnoses:
        resc.tables.append(rep.table(diagnoses_table(results.diagnoses)))
    return resc


def _training_section(rep: _Report) -> Section | None:
    """The training curves by backbone and k, with the logs' notes; None without training runs."""
    training = rep.results.training
    if not training:
        return None
    tr = Section("Training", "Training logs by backbone and rescaling k.")
    for key in TRAINING_CURVES:
        if any(key in r.log.columns for r in training.values()):
            rep.figure(tr, lambda: training_figure(training.values(), key, rep.smooth),
                       f"training-{key}", f"{key} against the training step, by backbone and k")
    tr.notes += [n for r in training.values() for n in r.notes]
    return tr


def _provenance_section(rep: _Report) -> Section:
    """What was read (benchmark and training tables), the manifests, and the notes of merging and linking."""
    results, frame = rep.results, rep.frame
    provenance = Section("Provenance", "What was read from the results folder, and the manifests: what was run, on "
                                       "what, when.")
    if results.benchmarks:
        provenance.tables.append(rep.table(benchmarks_table(results.benchmarks.values())))
    if results.training:
        provenance.tables.append(rep.table(training_table(results.training.values())))
    provenance.manifests += [(f"{name}/manifest.json", b.manifest) for name, b in results.benchmarks.items()]
    provenance.manifests += [(f"train/{r.name}/manifest.json", r.manifest) for r in results.training.values()]
    provenance.notes += list(frame.attrs.get("merged", [])) + list(frame.attrs.get("link_notes", []))
    return provenance


def _write_page(rep: _Report, sections: list[Section], experiment: dict[str, Any]) -> None:
    """``index.html`` of the sections under a header, then the manifest listing every file written."""
    results, frame, fmt, files = rep.results, rep.frame, rep.fmt, rep.files
    out = files.out
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


def write_report(results: str | Path | Results, out: str | Path, *, fmt: NumberFormat = NumberFormat(),
                 smooth: int | None = None, best_k_by: str | None = None, measures: Sequence[str] | None = None,
                 overwrite: bool = False, figures: bool = True) -> ReportFiles:
    """Read ``results`` (a folder or loaded :class:`Results`) and write the report into ``out`` (see the module
    doc); ``smooth``: moving-average window of the training curves (None: automatic); ``best_k_by``: rescaling
    table column choosing each backbone's best k (None: the first of MS MARCO RR@10, DL19 nDCG@10, BEIR-13 mean
    with a value); ``measures``: the measures the benchmark and efficiency tables show, the first one the figures
    (None: every measure of each dataset, its main measure in the figures); ``figures=False``: tables and page
    only (drawing the figures takes most of a report's time)."""
    results = results if isinstance(results, Results) else load_results(results)
    frame = link_training(results.combined(), results.training)
    if measures is not None:
        measures = list(measures)
        check_measures(measures, measure_columns(frame.columns))
    experiment = {"results": str(results.root.resolve()), "scale": fmt.scale, "smooth": smooth,
                  "best_k_by": best_k_by, **({"measures": measures} if measures is not None else {}),
                  **({} if figures else {"figures": False})}
    out = prepare_output(out, experiment, overwrite)
    for owned in (out / "tables", out / "plots"):   # a rewrite leaves no table or figure of a result no longer there
        shutil.rmtree(owned, ignore_errors=True)
    rep = _Report(results, frame, fmt, smooth, best_k_by, measures, ReportFiles(out), figures)
    sections = [_benchmark_section(rep, name, bench) for name, bench in results.benchmarks.items()]
    sections += [s for s in (_efficiency_section(rep), _rescaling_section(rep), _training_section(rep))
                 if s is not None]
    sections.append(_provenance_section(rep))  # results first, then what they were read from
    _write_page(rep, sections, experiment)
    return rep.files
