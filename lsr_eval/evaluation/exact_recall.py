"""How much of the exact top k an approximate engine finds (the accuracy measure of the Seismic paper).

An approximate engine (Seismic) is judged against an exact one (Anserini, PISA) on the same index contents, not
against relevance judgments: for each query q,

    recall_k(q) = |top_k(approx, q) ∩ top_k(exact, q)| / |top_k(exact, q)|

and the reported value is the mean over the queries of the exact run. This separates the loss due to approximation
from the quality of the model itself (which nDCG against qrels measures).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from lsr_eval.data.types import Run
from lsr_eval.errors import InputError
from lsr_eval.search.params import check_k


def top_k(hits: Mapping[str, float], k: int) -> list[str]:
    """The ``k`` best docids of one query: score descending, ties by docid ascending (deterministic at the cut)."""
    return [d for d, _ in sorted(hits.items(), key=lambda h: (-h[1], h[0]))[:k]]


def exact_recall(approx: Run, exact: Run, k: int, per_query: bool = False) -> dict[str, Any]:
    """Recall of the exact top ``k``: the mean over ``exact``'s queries of
    |top-k(approx) ∩ top-k(exact)| / |top-k(exact)|.

    Both top-k lists are cut by score with ties broken by docid, so a tie at the k-th place is resolved the same way
    in both runs. A query of ``exact`` missing from ``approx`` (or empty there) counts 0; a query of ``exact`` with no
    hits has no exact top k and is left out of the mean (counted in ``queries_without_exact_hits``); queries only in
    ``approx`` are ignored. When ``k`` exceeds a list's length the whole list is its top k.

    Returns ``{"k", "recall", "queries" (in the mean), "queries_missing_from_approx", "queries_without_exact_hits"}``
    and, with ``per_query``, ``"per_query": {qid: recall}``.
    """
    check_k(k)
    values: dict[str, float] = {}
    missing = without_hits = 0
    for qid, hits in exact.items():
        truth = top_k(hits, k)
        if not truth:
            without_hits += 1
            continue
        found = approx.get(qid)
        if not found:
            missing += 1
            values[qid] = 0.0
            continue
        values[qid] = len(set(top_k(found, k)).intersection(truth)) / len(truth)
    if not values:
        raise InputError("the exact run has no query with hits: exact recall is undefined")
    out: dict[str, Any] = {"k": k, "recall": math.fsum(values.values()) / len(values), "queries": len(values),
                           "queries_missing_from_approx": missing, "queries_without_exact_hits": without_hits}
    if per_query:
        out["per_query"] = values
    return out
