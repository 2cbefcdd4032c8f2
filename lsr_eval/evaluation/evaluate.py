"""Evaluate a run against qrels, giving the values ``trec_eval -c -m ...`` prints (numpy, no compilation).

Ties by docid descending and the mean over every query of the qrels, as trec_eval; each measure as ranx
computes it (nDCG: Järvelin & Kekäläinen, gain = grade, discount log2(rank + 1)).

Design notes: docs/design.md."""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Callable, Iterable, Literal, Mapping, overload

import numpy as np

from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import InputError, on_disk_full
from lsr_eval.evaluation.measures import DEFAULT_MEASURES, Measure, parse_measures
from lsr_eval.runs.trec import hits_arrays, trec_order

log = logging.getLogger(__name__)

#: Queries evaluated together (one matrix of grades each): bounds memory on large query sets.
BLOCK_QUERIES = 2048


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


def _grades(judgments: Mapping[str, int], qid: str, hits: Mapping[str, float]) -> np.ndarray:
    """The grade of each retrieved document in trec_eval order (0 when unjudged)."""
    docids, scores = hits_arrays(qid, hits)
    retrieved = np.fromiter(map(judgments.get, docids, repeat(0)), dtype=np.float64, count=len(docids))
    return retrieved[trec_order(docids, scores)]


def _ideal(judgments: Mapping[str, int]) -> np.ndarray:
    """The query's grades sorted descending (the ideal ranking)."""
    return np.sort(np.fromiter(judgments.values(), dtype=np.float64, count=len(judgments)))[::-1]


def _padded(rows: list[np.ndarray]) -> np.ndarray:
    """``rows`` as one matrix, right-padded with zeros (a padded rank holds no relevant document)."""
    out = np.zeros((len(rows), max((len(r) for r in rows), default=0)), dtype=np.float64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def _upto(matrix: np.ndarray, k: int | None) -> np.ndarray:
    """Running sums along each row (sequential, as ranx and trec_eval add), read at rank ``k`` (None: the end)."""
    if matrix.shape[1] == 0:
        return np.zeros(matrix.shape[0])
    width = matrix.shape[1] if k is None else min(k, matrix.shape[1])
    return np.cumsum(matrix[:, :width], axis=1)[:, -1]


def _per_query(grades: np.ndarray, ideal: np.ndarray, lengths: np.ndarray, m: Measure) -> np.ndarray:
    """Values of measure ``m`` for each query (row). ``grades``: retrieved documents' grades in trec_eval order;
    ``ideal``: judged grades sorted descending; ``lengths``: retrieved documents per query. The formulas are
    ranx's (see :data:`~lsr_eval.evaluation.measures.FAMILIES`): the same operations in the same order."""
    if m.family == "nDCG":  # gain = grade (>= 1), discount log2(rank + 1)
        def dcg(g: np.ndarray) -> np.ndarray:
            return _upto(np.where(g >= 1, g, 0.0) / np.log2(np.arange(2, g.shape[1] + 2)), m.cutoff)
        best = dcg(ideal)
        return dcg(grades) / np.where(best == 0.0, 1.0, best)
    rel = grades >= m.rel
    relevant = (ideal >= m.rel).sum(axis=1)
    if m.family == "RR":
        window = rel[:, :m.cutoff] if m.cutoff is not None else rel
        if window.shape[1] == 0:
            return np.zeros(len(lengths))
        first = window.argmax(axis=1)
        return np.where(window.any(axis=1), 1.0 / (first + 1), 0.0)
    hits = _upto(rel.astype(np.float64), m.cutoff)
    if m.family == "R":
        return np.where(relevant > 0, hits / np.maximum(relevant, 1), 0.0)
    if m.family == "P":
        depth = np.full(len(lengths), m.cutoff, dtype=np.float64) if m.cutoff is not None else lengths
        return np.where(depth > 0, hits / np.maximum(depth, 1), 0.0)
    # MAP: precision at each relevant retrieved rank, summed, over the relevant documents
    ranks = np.arange(1, rel.shape[1] + 1)
    precisions = np.where(rel, np.cumsum(rel, axis=1) / ranks, 0.0)
    return np.where(relevant > 0, _upto(precisions, m.cutoff) / np.maximum(relevant, 1), 0.0)


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
    parsed = _checked(qrels, measures)
    counts = count_queries(qrels, run)
    if counts.run_not_judged:
        log.info("%d of %d run queries are not in the qrels: ignored", counts.run_not_judged, counts.in_run)
    if counts.judged_without_results:
        log.info("%d of %d judged queries have no results: they count 0", counts.judged_without_results,
                 counts.judged)
    table = _table(qrels, lambda qid: _grades(qrels[qid], qid, run.get(qid) or {}), parsed)
    return table if per_query else mean_scores(table)


def evaluate_graded(qrels: Qrels, graded: Mapping[str, np.ndarray],
                    measures: Iterable[str | Measure] = DEFAULT_MEASURES) -> dict[str, float]:
    """:func:`evaluate` of a run given by its grades: ``graded[qid]`` holds the grade of each retrieved document of
    the query, in trec_eval order (0 where unjudged; a query absent has no results). Scores many rankings of the
    same documents (fusion tuning) without building a run for each."""
    parsed = _checked(qrels, measures)
    none = np.zeros(0)
    return mean_scores(_table(qrels, lambda qid: graded.get(qid, none), parsed))


def _checked(qrels: Qrels, measures: Iterable[str | Measure]) -> list[Measure]:
    """The parsed ``measures``; qrels without queries are refused."""
    parsed = parse_measures(measures)
    if not qrels:
        raise InputError("the qrels hold no queries: nothing to evaluate")
    return parsed


def _table(qrels: Qrels, graded: Callable[[str], np.ndarray], parsed: list[Measure]) -> dict[str, dict[str, float]]:
    """``{measure: {qid: value}}`` over every query of ``qrels``, ``graded(qid)`` giving its retrieved documents'
    grades in trec_eval order."""
    qids = list(qrels)
    blocks: dict[str, list[np.ndarray]] = {m.name: [] for m in parsed}
    for start in range(0, len(qids), BLOCK_QUERIES):  # memory bounded by a block's matrices
        block = qids[start:start + BLOCK_QUERIES]
        rows = [graded(qid) for qid in block]
        grades, ideal = _padded(rows), _padded([_ideal(qrels[qid]) for qid in block])
        lengths = np.array([len(r) for r in rows], dtype=np.float64)
        for m in parsed:
            blocks[m.name].append(_per_query(grades, ideal, lengths, m))
    values = {name: np.concatenate(parts) for name, parts in blocks.items()}
    return {m.name: dict(zip(qids, values[m.name].tolist())) for m in parsed}


#: The file a stage writes its metrics to, beside its run.
METRICS_FILE = "metrics.json"


def write_metrics(folder: str | os.PathLike, metrics: Mapping[str, float]) -> None:
    """``folder/metrics.json``: the metrics, keyed by canonical measure name, indented."""
    path = Path(folder) / METRICS_FILE
    text = json.dumps(dict(metrics), indent=2) + "\n"
    with on_disk_full(folder, f"writing {METRICS_FILE}", len(text), cleanup=lambda: path.unlink(missing_ok=True)):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
