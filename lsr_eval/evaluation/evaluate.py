"""Evaluate a run against qrels with ranx, giving the values ``trec_eval -c -m ...`` prints.

ranx alone differs from trec_eval in three ways, fixed here before its metrics are called:

1. Ranking. trec_eval sorts a query's documents by score descending and breaks ties by docid descending
   (``comp_sim_docno`` in ``form_res_rels.c``); ranx sorts by score only. Each query is ranked here in trec_eval order
   (:func:`lsr_eval.runs.trec.trec_order`) and ranx gets the strictly decreasing synthetic scores n, n-1, ..., 1.
2. Query set (``-c``). The mean is over every query of the qrels (``num_q_rels`` in ``meas_avg.c``), including
   queries whose judgments are all <= 0 (they score 0 on every measure, in trec_eval as here); a judged query
   without results scores 0; run queries absent from the qrels are ignored (and counted, see :func:`count_queries`).
3. Document ids. ranx hashes string ids; here they become per-query integers: the judged documents 0..m-1 in
   grade-descending order (ranx computes the ideal DCG from the qrels array in its given order), every retrieved
   document without a judgment -1.

Gains: ranx's ``ndcg`` is Järvelin & Kekäläinen's (gain = grade, discount log2(rank + 1)) and drops grades < 1, as
trec_eval's ``ndcg_cut`` counts only gains > 0 (negative grades are judged non-relevant in both).
"""

from __future__ import annotations

import json
import logging
import math
import os
import warnings
from itertools import repeat
from pathlib import Path
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping, overload

import numpy as np

from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import InputError, on_disk_full
from lsr_eval.evaluation.measures import DEFAULT_MEASURES, FAMILIES, Measure, parse_measures
from lsr_eval.runs.trec import hits_arrays, trec_order

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class QueryCounts:
    """How the queries of a run and of the qrels meet (the mean is over ``judged``, as ``trec_eval -c``)."""

    judged: int  #: queries in the qrels: the denominator of every mean
    in_run: int  #: run queries with at least one result
    judged_without_results: int  #: judged queries the run has no result for: they count 0
    run_not_judged: int  #: run queries (with results) absent from the qrels: ignored


def count_queries(qrels: Qrels, run: Run) -> QueryCounts:
    """Count judged / retrieved queries; ``in_run == judged - judged_without_results + run_not_judged``."""
    answered = {q for q, hits in run.items() if hits}
    return QueryCounts(
        judged=len(qrels),
        in_run=len(answered),
        judged_without_results=sum(1 for q in qrels if q not in answered),
        run_not_judged=len(answered.difference(qrels)),
    )


def _qrels_array(judgments: Mapping[str, int]) -> tuple[np.ndarray, dict[str, int]]:
    """ranx qrels array ``[[doc index, grade], ...]`` in grade-descending order, and docid -> doc index."""
    ordered = sorted(judgments.items(), key=lambda kv: kv[1], reverse=True)
    arr = np.empty((len(ordered), 2), dtype=np.float64)
    arr[:, 0] = np.arange(len(ordered))
    arr[:, 1] = [grade for _, grade in ordered]
    return arr, {docid: i for i, (docid, _) in enumerate(ordered)}


def _run_array(qid: str, hits: Mapping[str, float], index: Mapping[str, int]) -> np.ndarray:
    """ranx run array ``[[doc index or -1, n - rank + 1], ...]`` in trec_eval order (see module doc)."""
    n = len(hits)
    docids, scores = hits_arrays(qid, hits)
    arr = np.empty((n, 2), dtype=np.float64)
    ids = np.fromiter(map(index.get, docids, repeat(-1)), dtype=np.float64, count=n)  # index.get(docid, -1)
    arr[:, 0] = ids[trec_order(docids, scores)]
    arr[:, 1] = np.arange(n, 0, -1)
    return arr


def _ranx_per_query(qrels_arrays: list[np.ndarray], run_arrays: list[np.ndarray],
                    measures: list[Measure]) -> dict[str, np.ndarray]:
    """Per-query values of each measure from its ``ranx.metrics`` function (numba: compiled once, then cached)."""
    import ranx.metrics
    from numba.core.errors import NumbaTypeSafetyWarning
    from numba.typed import List

    qrels_list, run_list = List(qrels_arrays), List(run_arrays)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaTypeSafetyWarning)  # ranx's own uint64 -> int64 index cast
        for m in measures:
            metric = getattr(ranx.metrics, FAMILIES[m.family].ranx)
            out[m.name] = metric(qrels_list, run_list, m.cutoff or 0, m.rel)  # ranx: k = 0 is the whole ranking
    return out


def mean_scores(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Mean of each measure over its queries (``math.fsum``: exact sum, then one rounding)."""
    return {name: math.fsum(values.values()) / len(values) for name, values in per_query.items()}


@overload
def evaluate(qrels: Qrels, run: Run, measures: Iterable[str | Measure] = ...,
             per_query: Literal[False] = ...) -> dict[str, float]: ...
@overload
def evaluate(qrels: Qrels, run: Run, measures: Iterable[str | Measure] = ...,
             per_query: Literal[True] = ...) -> dict[str, dict[str, float]]: ...


def evaluate(qrels: Qrels, run: Run, measures: Iterable[str | Measure] = DEFAULT_MEASURES,
             per_query: bool = False) -> dict[str, float] | dict[str, dict[str, float]]:
    """Evaluate ``run`` as ``trec_eval -c`` would, keyed by canonical measure name (see the module doc).

    Returns ``{measure: mean over the judged queries}``, or with ``per_query`` ``{measure: {qid: value}}`` over every
    judged query in qrels order (zero for those without results), e.g. for paired significance tests. Query counts
    (logged here) come from :func:`count_queries`.
    """
    parsed = parse_measures(measures)
    if not qrels:
        raise InputError("the qrels hold no queries: nothing to evaluate")
    counts = count_queries(qrels, run)
    if counts.run_not_judged:
        log.info("%d of %d run queries are not in the qrels: ignored", counts.run_not_judged, counts.in_run)
    if counts.judged_without_results:
        log.info("%d of %d judged queries have no results: they count 0", counts.judged_without_results,
                 counts.judged)
    qids = list(qrels)
    qrels_arrays, run_arrays = [], []
    for qid in qids:
        q_arr, index = _qrels_array(qrels[qid])
        qrels_arrays.append(q_arr)
        run_arrays.append(_run_array(qid, run.get(qid) or {}, index))
    values = _ranx_per_query(qrels_arrays, run_arrays, parsed)
    table = {m.name: dict(zip(qids, values[m.name].tolist())) for m in parsed}
    return table if per_query else mean_scores(table)


#: The file a stage writes its metrics to, beside its run.
METRICS_FILE = "metrics.json"


def write_metrics(folder: str | os.PathLike, metrics: Mapping[str, float]) -> None:
    """``folder/metrics.json``: the metrics, keyed by canonical measure name, indented."""
    path = Path(folder) / METRICS_FILE
    text = json.dumps(dict(metrics), indent=2) + "\n"
    with on_disk_full(folder, f"writing {METRICS_FILE}", len(text), cleanup=lambda: path.unlink(missing_ok=True)):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
