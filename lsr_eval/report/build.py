"""A whole report of a results folder: tables (md, tex, csv), figures (png, pdf), ``index.html`` and a manifest.

Design notes: docs/design.md."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from lsr_eval.manifest import prepare_output, recorded, write_manifest
from lsr_eval.report.context import ReportContext, ReportFiles
from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.html import Section, render_html
from lsr_eval.report.linking import link_training
from lsr_eval.report.loading import Results, load_results, measure_columns
from lsr_eval.report.papers import BENCHMARK_PARTS, SECTIONS
from lsr_eval.report.plots import (
    COSTS,
    has_tradeoff,
    read_tradeoff,
    tradeoff_figure,
    training_figure,
)
from lsr_eval.report.settings import table_settings_notes
from lsr_eval.report.summary import benchmarks_table, training_table
from lsr_eval.report.tables import (
    benchmark_tables,
    check_measures,
    efficiency_datasets,
    efficiency_table,
)

#: Logged quantities drawn against the training step, when some log has them.
TRAINING_CURVES = ("loss", "active_dims_q", "active_dims_d")
#: Costs of the trade-off figures (keys of :data:`lsr_eval.report.plots.COSTS`).
TRADEOFF_COSTS = ("flops", "latency")


def _benchmark_section(rep: ReportContext, name: str, bench) -> Section:
    """One benchmark folder: its tables (one per measure with several datasets), then the registered parts
    (:data:`lsr_eval.report.papers.BENCHMARK_PARTS`: seed spreads, a paper's table);
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
    for add in BENCHMARK_PARTS:
        add(rep, s, name, rows, linked)
    return s


def _efficiency_section(rep: ReportContext) -> Section | None:
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


def _training_section(rep: ReportContext) -> Section | None:
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


def _provenance_section(rep: ReportContext) -> Section:
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


def _write_page(rep: ReportContext, sections: list[Section], experiment: dict[str, Any]) -> None:
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
    rep = ReportContext(results, frame, fmt, smooth, best_k_by, measures, ReportFiles(out), figures)
    sections = [_benchmark_section(rep, name, bench) for name, bench in results.benchmarks.items()]
    later = (_efficiency_section(rep), *(section(rep) for section in SECTIONS), _training_section(rep))
    sections += [s for s in later if s is not None]
    sections.append(_provenance_section(rep))  # results first, then what they were read from
    _write_page(rep, sections, experiment)
    return rep.files
