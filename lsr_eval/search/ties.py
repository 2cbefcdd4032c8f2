"""Anserini's score-tie rule, the one every exact engine reports, so that their runs are bit-identical.

Anserini (``SearchCollection``, ``SimpleImpactSearcher``) ranks by score descending, ties by collection docid
ascending (``BREAK_SCORE_TIES_BY_DOCID``), and passes the ranked list through its ``ScoreTiesAdjusterReranker``
(``io.anserini.rerank.lib``, Anserini 1.7.1), which rewrites score ``s_i`` at rank ``i`` as

    r_i   = (float) (Math.round((double) s_i * 1e4) / 1e4)                      (rounded to 1e-4, half up, in double)
    dup_i = 0 if i == 0 or out_{i-1} - r_i > 1e-4f  else  dup_{i-1} + 1       (float32 difference)
    out_i = r_i - 1e-6f * dup_i                                                 (float32 arithmetic)

so that the scores alone give the rank order whatever tie rule the evaluation tool applies (trec_eval breaks ties
by docid *descending*). With small scores the 1e-6 steps survive float32 rounding (e.g. ``51 - 2e-6`` is
``50.999996``), so a tied run's scores depend on each document's position in it. lsr-eval's contract is that every
exact engine (Anserini, PISA) returns the same ranked list with these same float32 scores, bit for bit: an engine
ranks its exact dot products by score, then docid (code-point order, which is Lucene's UTF-8 byte order), cuts at
rank k in that order, then applies :func:`adjust_ties`. Approximate engines (Seismic) report their dot products
unadjusted: their lists differ from the exact ones, and so would the positions the adjustment depends on.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

_GAP = np.float32(1e-4)
_DELTA = np.float32(1e-6)


def adjust_ties(scores: np.ndarray) -> np.ndarray:
    """Anserini's ``ScoreTiesAdjusterReranker`` on a ranked list of float32 scores (score desc, docid asc), as a
    new float32 array (the formula is in the module docstring).

    Vectorised: the walk over ranks is only needed where the outcome depends on the perturbed score before. A
    rounded gap ``r_{i-1} - r_i <= 1e-4`` always continues a run (``out_{i-1} <= r_{i-1}`` and float32 subtraction
    is monotone); a gap above ``1e-4 + n * 1e-6`` plus two float32 spacings always restarts it (above ~64 a 1e-6
    step rounds to a larger one). Only gaps in between (none for integer impacts) are walked one by one."""
    s = np.asarray(scores, dtype=np.float32)
    rounded = (np.floor(s.astype(np.float64) * 1e4 + 0.5) / 1e4).astype(np.float32)
    n = len(rounded)
    if n < 2:
        return rounded
    gaps = rounded[:-1] - rounded[1:]
    positions = np.arange(n)
    restart = np.ones(n, dtype=bool)  # restart[i]: dup_i = 0
    restart[1:] = gaps > _GAP + _DELTA * np.float32(n) + 2 * np.spacing(rounded[:-1])
    ambiguous = (np.nonzero((gaps > _GAP) & ~restart[1:])[0] + 1).tolist()
    if ambiguous:
        last_sure = np.maximum.accumulate(np.where(restart, positions, 0))  # last sure restart at or before i
        last = 0  # last restart decided among the ambiguous positions
        for i in ambiguous:
            dup = (i - 1) - max(int(last_sure[i - 1]), last)
            before = rounded[i - 1] - _DELTA * np.float32(dup)
            if before - rounded[i] > _GAP:  # else the run goes on (restart[i] stays False)
                restart[i], last = True, i
    dup = positions - np.maximum.accumulate(np.where(restart, positions, 0))
    return rounded - _DELTA * dup.astype(np.float32)


def adjusted_hits(docids: Sequence[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    """``(docid, adjusted score)`` pairs for a list already ranked by score desc, docid asc and cut at rank k: the
    scores through :func:`adjust_ties`, as Python floats (each the exact value of its float32)."""
    if not len(docids):
        return []
    adjusted = adjust_ties(np.asarray(scores, dtype=np.float32))
    return list(zip(docids, adjusted.astype(np.float64).tolist()))


def ranked_hits(scores: np.ndarray, docids: list[str], k: int) -> list[tuple[str, float]]:
    """The top ``k`` of an engine's list ordered by float32 score descending, ties in any order (PISA's top-k heap):
    each run of equal scores put in docid order, the list cut at ``k``, and the scores through
    :func:`adjust_ties`. The caller makes sure every document tied with the one at rank ``k`` is in the list. Only
    the tied runs are sorted (a few per list): the score sequence itself does not change."""
    scores = np.asarray(scores, dtype=np.float32)
    if len(scores) != len(docids):
        raise ValueError(f"{len(scores)} scores for {len(docids)} docids")
    if len(scores) > 1 and bool((scores[1:] > scores[:-1]).any()):  # not ranked: one full sort
        pairs = sorted(zip((-scores).tolist(), docids))
        docids, scores = [d for _, d in pairs], -np.asarray([s for s, _ in pairs], dtype=np.float32)
    elif len(scores) > 1:
        same = scores[1:] == scores[:-1]
        if same.any():
            docids = list(docids)
            edges = np.flatnonzero(np.diff(np.concatenate(([0], same.view(np.int8), [0])))).tolist()
            for a, b in zip(edges[::2], edges[1::2]):  # docids[a:b + 1] share one score
                docids[a:b + 1] = sorted(docids[a:b + 1])
    return adjusted_hits(docids[:k], scores[:k])


#: ``fetch(positions, limit)``: an engine's top ``limit`` of each query at ``positions``, in that order, as (float32
#: scores best first, docids).
Fetch = Callable[[list[int], int], Iterable[tuple[np.ndarray, list[str]]]]


def complete_top_k(fetch: Fetch, positions: Iterable[int], k: int) -> dict[int, list[tuple[str, float]]]:
    """The exact top ``k`` of each query (by position) from an engine whose top-``limit`` keeps an arbitrary part of
    a run of scores tied at its cut (PISA's heap, Qdrant): asked for ``k + 1`` hits, then for twice as many while a
    query's last hit still ties with its ``k``-th, every document tied at the cut is known; then :func:`ranked_hits`.
    A query that reaches ``k + 1`` hits only by ties costs a second call; one with fewer hits than asked, none."""
    top: dict[int, list[tuple[str, float]]] = {}
    pending, limit = list(positions), k + 1
    while pending:
        for i, (scores, docids) in zip(pending, fetch(pending, limit)):
            if len(docids) < limit or scores[-1] != scores[k - 1]:
                top[i] = ranked_hits(scores, docids, k)
        pending, limit = [i for i in pending if i not in top], limit * 2
    return top
