"""The report's sections that belong to a study or a paper, registered in :mod:`lsr_eval.report.papers` so that the
page (:mod:`lsr_eval.report.build`) names none of them: a benchmark's spread over training seeds, a paper's own table
and trade-off figure, and the MLM-head rescaling section (training runs and rows with a rescaling k)."""

from __future__ import annotations

from lsr_eval.errors import ConfigError
from lsr_eval.report.best_k import head_norm_points
from lsr_eval.report.context import ReportContext
from lsr_eval.report.html import Section
from lsr_eval.report.papers.registry import PAPERS
from lsr_eval.report.plots import has_tradeoff, head_norm_figure, rescaling_figure, tradeoff_figure, training_figure
from lsr_eval.report.rescaling_runs import candidates, diagnoses_table, runs_table
from lsr_eval.report.seeds import seeds_figure, seeds_table
from lsr_eval.report.table import Table
from lsr_eval.report.tables import (
    RESCALING_COLUMNS,
    _slug,
    dataset_measures,
    datasets_in_order,
    group_column,
    main_measure,
    rescaling_table,
)

#: More datasets than this with rescaled models: measure-against-k figures for the in-domain datasets only.
RESCALING_FIGURES_MAX = 4


def seed_tables(rep: ReportContext, s: Section, name: str, rows, linked) -> None:
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


def paper_tables(rep: ReportContext, s: Section, name: str, rows, linked) -> None:
    """The paper's own table (and trade-off figure) when benchmark ``name`` reproduces a paper
    (:data:`lsr_eval.report.papers.PAPERS`)."""
    paper = PAPERS.get(name)
    if paper is None:
        return
    s.tables.append(rep.table(paper.make_table(rows, linked, rep.fmt, rep.results.training)))
    if paper.tradeoff is not None:
        cost, measure = paper.tradeoff
        frame = linked if paper.frame == "linked" else rows
        for d in [d for d in datasets_in_order(frame) if has_tradeoff(frame, d, cost, measure)][:1]:
            rep.figure(s, lambda: tradeoff_figure(frame, d, cost, measure), f"{name}-{cost}-{d}",
                       paper.caption.format(measure=measure, cost=cost, dataset=d))


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


def _head_norm_figure(rep: ReportContext, resc: Section, rt: Table | None) -> None:
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


def rescaling_section(rep: ReportContext) -> Section | None:
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
