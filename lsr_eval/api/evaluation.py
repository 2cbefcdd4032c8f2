"""Evaluation as one Python call, with everything ``lsr-eval evaluate`` prints: each run's measures over every
judged query (trec_eval -c), its per-query values and query counts, and with a baseline the paired significance of
every other run (the benchmark's test, :func:`lsr_eval.significance.compare`), corrected over runs x measures.

    >>> ev = lsr_eval.run_evaluation("dl19", {"bm25": bm25_run, "splade": splade_run}, baseline="bm25")
    >>> ev.table()            # what lsr_eval.evaluate returns
    >>> ev.runs[1].per_query["nDCG@10"]["19335"]

The command line parses its options into these arguments and prints what this returns (one implementation).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from lsr_eval.api.inputs import QrelsLike, RunLike, as_run, judgments, named_runs
from lsr_eval.data.types import Qrels
from lsr_eval.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class RunScores:
    """One evaluated run: ``means`` per measure, ``per_query`` (measure -> qid -> value over every judged query, 0
    without results), query ``counts`` (:class:`lsr_eval.evaluation.evaluate.QueryCounts`), and the judged queries
    it answered (trec_eval -q prints those)."""

    name: str
    source: str  #: a file's path as given, or the name of a run in memory
    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    counts: Any
    answered: list[str]


@dataclass
class Evaluation:
    """What :func:`run_evaluation` measured. ``tests`` is :func:`lsr_eval.significance.compare`'s frame (None
    without a baseline); ``measures`` are the parsed measures in order."""

    qrels: Qrels
    measures: list[Any]
    runs: list[RunScores]
    baseline: str | None = None
    tests: Any = None
    official: tuple[str, ...] | None = None  #: the dataset's official measures (None for a qrels file)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.measures]

    def table(self) -> Any:
        """A DataFrame: one row per run (index: its name), one column per measure; with a baseline also
        ``<measure>_p`` (corrected p-value) and ``<measure>_sig`` (``†`` better, ``↓`` worse); the test settings
        in ``attrs``."""
        import pandas as pd

        table = pd.DataFrame([r.means for r in self.runs], index=[r.name for r in self.runs], columns=self.names)
        table.index.name = "run"
        if self.tests is None:
            return table
        from lsr_eval.significance.compare import direction_marker

        for n in self.names:
            rows = self.tests[self.tests["measure"] == n].set_index("system")
            table[f"{n}_p"] = [None if r == self.baseline else rows.at[r, "p_corrected"] for r in table.index]
            table[f"{n}_sig"] = ["" if r == self.baseline else direction_marker(rows.at[r, "significant"],
                                                                                rows.at[r, "difference"])
                                 for r in table.index]
        table.attrs.update(self.tests.attrs, baseline=self.baseline)
        return table

    def significance(self) -> dict[str, Any] | None:
        """The tests as records (JSON values), per run and measure the corrected p-value and marker, the legend, and
        the settings each run's manifest records (None without a baseline)."""
        if self.tests is None:
            return None
        from lsr_eval.report.settings import row_settings, run_manifest, settings_notes
        from lsr_eval.significance.compare import direction_marker
        from lsr_eval.significance.correction import CONTROLS, NAMES

        df = self.tests
        records = [{k: _plain(v) for k, v in rec.items()} for rec in df.to_dict("records")]
        cells: dict[str, dict[str, Any]] = {}
        for rec in records:
            if rec["system"] != self.baseline:
                cells.setdefault(rec["system"], {})[rec["measure"]] = {
                    "p_corrected": rec["p_corrected"],
                    "marker": direction_marker(rec["significant"], rec["difference"])}
        legend = (f"†/↓: significantly better/worse than {self.baseline} ({df.attrs['test']}, paired over "
                  f"{records[0]['queries']} judged queries, {NAMES[df.attrs['correction']]} over "
                  f"{df.attrs['comparisons']} comparisons ({CONTROLS[df.attrs['correction']]}), "
                  f"alpha {df.attrs['alpha']}); p(...): corrected p-values")
        return {"baseline": self.baseline, "test": df.attrs["test"], "alpha": df.attrs["alpha"],
                "correction": df.attrs["correction"], "comparisons": df.attrs["comparisons"], "rows": records,
                "cells": cells, "legend": legend,
                "settings": settings_notes({r.name: row_settings(run_manifest(r.source)) for r in self.runs})}


def _plain(value: Any) -> Any:
    """A table cell as a JSON value (numpy scalars as Python ones, NaN as None), at full precision."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and value != value else value


def run_evaluation(data: QrelsLike, runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike],
                   measures: Iterable[str] | None = None, baseline: str | None = None, test: str = "t-test",
                   alpha: float = 0.05, correction: str = "bonferroni", split: str | None = None) -> Evaluation:
    """Evaluate ``runs`` (runs in memory, TREC files, or a mapping of names to either; files are named by their
    file names, or their paths when two are alike) on ``data`` (a dataset, qrels, a qrels file, or a dataset spec
    with ``split``), as ``lsr-eval evaluate``. ``measures``: default the dataset's official ones, else nDCG@10,
    RR@10, R@100, R@1000, MAP. ``baseline`` (a run's name, or a run file's path as given): every other run tested
    against it (``test``: t-test or
    randomisation; ``correction``: bonferroni, holm or bh over the compared runs x measures). Settings are checked
    before any run is read."""
    from lsr_eval.evaluation import count_queries, evaluate, mean_scores, parse_measures
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES

    if baseline is not None:
        from lsr_eval.significance.compare import check_settings

        check_settings(test, alpha)
    given = parse_measures(measures) if measures else None  # a bad name fails before anything is read
    qrels, _, official = judgments(data, split)
    parsed = given or parse_measures(official or DEFAULT_MEASURES)
    named = named_runs(runs)
    if baseline is not None and baseline not in named:  # a run file's path, as given, names it too
        baseline = next((n for n, r in named.items() if isinstance(r, (str, os.PathLike)) and str(r) == str(baseline)),
                        baseline)
    if baseline is not None and baseline not in named:
        raise ConfigError(f"baseline {baseline!r} is not one of the runs: {', '.join(named)}")
    scored = []
    for name, given in named.items():
        run = as_run(given)
        per_query = evaluate(qrels, run, parsed, per_query=True)
        scored.append(RunScores(name, str(given) if isinstance(given, (str, os.PathLike)) else name,
                                mean_scores(per_query), per_query, count_queries(qrels, run),
                                sorted(q for q, hits in run.items() if hits and q in qrels)))
    tests = None
    if baseline is not None:
        from lsr_eval.significance.compare import compare

        if len(named) < 2:
            raise ConfigError("a baseline needs at least one other run to compare with it")
        tests = compare({r.name: r.per_query for r in scored}, baseline, test=test, alpha=alpha,
                        correction=correction)
    return Evaluation(qrels, parsed, scored, baseline, tests, official)


def per_query_scores(qrels: Qrels, runs: Mapping[str, RunLike], measures: Iterable[str]
                     ) -> dict[str, dict[str, dict[str, float]]]:
    """name -> measure -> qid -> value of each run (trec_eval -c: every judged query, 0 without results)."""
    from lsr_eval.evaluation import evaluate as evaluate_run

    return {name: evaluate_run(qrels, as_run(run), measures, per_query=True) for name, run in runs.items()}


def evaluate(data: QrelsLike, runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike],
             measures: Iterable[str] | None = None, baseline: str | None = None, test: str = "t-test",
             alpha: float = 0.05, correction: str = "bonferroni") -> pd.DataFrame:
    """A DataFrame with one row per run (index: its name) and one column per measure, as ``lsr-eval evaluate``.

    ``data``: a dataset, qrels, a qrels file or a dataset spec; ``measures``: default the dataset's official
    ones (else nDCG@10, RR@10, R@100, R@1000, MAP). With ``baseline`` (a run name), each other run is tested against
    it as ``evaluate --baseline`` does: columns ``<measure>_p`` (p-value corrected by ``correction``: bonferroni,
    holm or bh, over the compared runs x measures) and
    ``<measure>_sig`` (``†`` better, ``↓`` worse, empty otherwise); the test settings are in ``df.attrs``. Per-query
    values and query counts: :func:`lsr_eval.api.evaluation.run_evaluation`, of which this is the table.
    """
    return run_evaluation(data, runs, measures, baseline, test, alpha, correction).table()
