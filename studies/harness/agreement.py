"""How far two runs, or two encodings of the same texts, agree: top-k identity and overlap per query, identical
hits within a score tolerance, integer weight maps term for term, and weight matrices row for row."""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from lsr_eval.data.types import Run
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.errors import InputError
from lsr_eval.evaluation.exact_recall import top_k as top_docs  # by score, then docid (the engines' order)
from lsr_eval.export.quantize import quantize

TOP_K = 10
#: differing queries / query vectors listed in full in a comparison
LISTED = 20


def top_agreement(reference: Run, other: Run, k: int = TOP_K, listed: int = LISTED) -> dict[str, Any]:
    """Queries of ``reference`` whose top ``k`` in ``other`` is identical in order and as a set; a query missing
    from ``other`` counts as differing (overlap 0)."""
    ordered = as_set = 0
    differ = []
    for qid in sorted(reference):
        a, b = top_docs(reference[qid], k), top_docs(other.get(qid, {}), k)
        ordered += a == b
        as_set += set(a) == set(b)
        if a != b:
            differ.append({"query": qid, "overlap": len(set(a) & set(b)), "same_set": set(a) == set(b)})
    n = len(reference)
    return {"queries": n, "k": k, "identical_ordered": ordered, "identical_set": as_set,
            "share_ordered": ordered / n if n else None, "share_set": as_set / n if n else None,
            "missing_in_other": sorted(set(reference) - set(other))[:listed],
            "differing": differ[:listed], "differing_count": len(differ)}


def run_agreement(a: Run, b: Run, qids: Sequence[str], depth: int = TOP_K) -> dict[str, Any]:
    """Same top-``depth`` set / list per query (hits in the runs' own order), and identical runs (docids and scores,
    all depths; and counting only positive-score hits)."""
    same_set = [qid for qid in qids if set(list(a[qid])[:depth]) == set(list(b[qid])[:depth])]
    same_list = sum(list(a[qid])[:depth] == list(b[qid])[:depth] for qid in qids)
    same_run = sum(dict(a[qid]) == dict(b[qid]) for qid in qids)
    same_positive = sum({d: x for d, x in a[qid].items() if x > 0} == {d: x for d, x in b[qid].items() if x > 0}
                        for qid in qids)
    return {"queries": len(qids), "same_top10_set": len(same_set), "same_top10_list": same_list,
            "identical_runs": same_run, "identical_positive_score_hits": same_positive,
            "differing_top10_set": [q for q in qids if q not in set(same_set)]}


def hit_lists_agreement(a: Sequence[Sequence[tuple[str, float]]], b: Sequence[Sequence[tuple[str, float]]],
                        depth: int = TOP_K) -> dict[str, Any]:
    """Two paths' hit lists for the same queries, in the same order: per query the same top-``depth`` list (order
    included), the same set, and the overlap; summarised over the queries."""
    same_list = same_set = 0
    overlaps = []
    for ha, hb in zip(a, b):
        da, db = [d for d, _ in ha[:depth]], [d for d, _ in hb[:depth]]
        same_list += da == db
        same_set += set(da) == set(db)
        overlaps.append(len(set(da) & set(db)) / max(1, min(depth, max(len(da), len(db)))))
    n = len(overlaps)
    return {"queries": n, "depth": depth, "same_ranked_list": same_list, "same_set": same_set,
            "same_ranked_list_fraction": same_list / n, "same_set_fraction": same_set / n,
            "mean_overlap": sum(overlaps) / n, "overlaps": overlaps}


def ranked_hits_agreement(ours: Run, theirs: Run, qids: Sequence[str], tolerance: float, examples: int = 5,
                          names: tuple[str, str] = ("ours", "theirs")) -> dict[str, Any]:
    """Query by query, in rank order: same docids (order included) and, where so, scores within ``tolerance``;
    ``names`` label the two sides in the output. Both runs hold each query's hits in rank order. A query absent
    from a run counts as one without hits there."""
    first, second = names
    identical = same_docids = 0
    max_diff = 0.0
    differing: list[dict[str, Any]] = []
    for qid in qids:
        a, b = list(ours.get(qid, {}).items()), list(theirs.get(qid, {}).items())
        if [d for d, _ in a] == [d for d, _ in b]:
            same_docids += 1
            worst = max((abs(x - y) for (_, x), (_, y) in zip(a, b)), default=0.0)
            max_diff = max(max_diff, worst)
            if worst <= tolerance:
                identical += 1
                continue
        if len(differing) < examples:
            rank = next((i for i, (x, y) in enumerate(zip(a, b)) if x[0] != y[0] or abs(x[1] - y[1]) > tolerance),
                        min(len(a), len(b)))
            differing.append({"qid": qid, f"hits_{first}": len(a), f"hits_{second}": len(b), "first_rank": rank + 1,
                              first: a[rank:rank + 2], second: b[rank:rank + 2]})
    known = set(qids)
    return {"queries": len(qids), "identical_queries": identical, "same_docids_queries": same_docids,
            "max_abs_score_diff_same_docids": max_diff, "tolerance": tolerance,
            f"hits_{first}": sum(len(ours.get(q, {})) for q in qids),
            f"hits_{second}": sum(len(theirs.get(q, {})) for q in qids),
            f"unknown_queries_{first}": sorted(set(ours) - known)[:examples],
            f"unknown_queries_{second}": sorted(set(theirs) - known)[:examples],
            "differing_examples": differing}


def differing_queries(run: Run, reference: Run) -> list[str]:
    """Query ids whose ranked ``(docid, score)`` lists differ between two runs (a missing query is an empty list)."""
    return sorted(q for q in reference.keys() | run.keys()
                  if list(run.get(q, {}).items()) != list(reference.get(q, {}).items()))


def weight_map_agreement(reference: Mapping[str, Mapping[str, int]], other: Mapping[str, Mapping[str, int]],
                         listed: int = LISTED) -> dict[str, Any]:
    """Queries whose integer weight maps are identical; for the first ``listed`` others, the terms that differ as
    ``[reference, other]`` (0: absent)."""
    same = 0
    shown = []
    for qid in reference:
        a, b = reference[qid], other.get(qid, {})
        if a == b:
            same += 1
        elif len(shown) < listed:
            shown.append({"query": qid, "terms": {t: [a.get(t, 0), b.get(t, 0)]
                                                  for t in sorted(set(a) | set(b)) if a.get(t, 0) != b.get(t, 0)}})
    return {"queries": len(reference), "identical": same, "share": same / len(reference) if reference else None,
            "differing": shown}


def _top(indices: np.ndarray, data: np.ndarray, k: int) -> set[int]:
    order = np.lexsort((indices, -data))[:k]     # weight descending, then vocabulary id
    return set(indices[order].tolist())


def vector_agreement(reference: sp.csr_matrix, other: sp.csr_matrix, scale: float = DEFAULT_SCALE,
              top_k: int = TOP_K) -> dict[str, Any]:
    """How far two encodings of the same texts agree (``n x V`` CSR weight matrices, rows in the same order):
    rows whose integer impacts (``rint(w * scale)``, zeros dropped: what is indexed) are equal term for term; the
    largest absolute difference of a float weight (an absent term weighs 0) and of an impact; and per row the
    overlap ``|top_k(a) & top_k(b)| / |top_k(a)|`` of the ``top_k`` largest weights (ties by vocabulary id), its mean
    and minimum over the rows with a weight, and the rows whose top-k sets are equal."""
    if reference.shape != other.shape:
        raise InputError(f"shapes differ: {reference.shape} vs {other.shape}")
    a, b = sp.csr_matrix(reference, dtype=np.float64), sp.csr_matrix(other, dtype=np.float64)
    a.sort_indices()
    b.sort_indices()
    diff = (a - b).tocsr()
    max_weight = float(np.abs(diff.data).max()) if diff.nnz else 0.0
    ia, ib = a.copy(), b.copy()
    ia.data, ib.data = quantize(a.data, scale).astype(np.float64), quantize(b.data, scale).astype(np.float64)
    ia.eliminate_zeros()
    ib.eliminate_zeros()
    idiff = (ia - ib).tocsr()
    idiff.eliminate_zeros()
    differing_rows = np.diff(idiff.indptr) > 0
    overlaps, same_top = [], 0
    for i in range(a.shape[0]):
        sa, ea, sb, eb = a.indptr[i], a.indptr[i + 1], b.indptr[i], b.indptr[i + 1]
        ta = _top(a.indices[sa:ea], a.data[sa:ea], top_k)
        tb = _top(b.indices[sb:eb], b.data[sb:eb], top_k)
        same_top += ta == tb
        if ta:
            overlaps.append(len(ta & tb) / len(ta))
    n = a.shape[0]
    return {"rows": n, "scale": scale,
            "identical_integer_rows": int(n - differing_rows.sum()),
            "identical_integer_share": float(1 - differing_rows.mean()) if n else None,
            "max_abs_weight_difference": max_weight,
            "max_abs_impact_difference": int(np.abs(idiff.data).max()) if idiff.nnz else 0,
            "impact_entries_differing": int(idiff.nnz), "impact_entries": int(ia.nnz),
            "top_k": top_k, "rows_with_same_top_k": int(same_top),
            "mean_top_k_overlap": float(np.mean(overlaps)) if overlaps else None,
            "min_top_k_overlap": float(np.min(overlaps)) if overlaps else None}


def vector_agreement_text(a: dict[str, Any]) -> str:
    """One line for a summary."""
    share = "" if a["identical_integer_share"] is None else f" ({100 * a['identical_integer_share']:.1f}%)"
    overlap = "n/a" if a["mean_top_k_overlap"] is None else (f"{a['mean_top_k_overlap']:.4f} (min "
                                                               f"{a['min_top_k_overlap']:.2f})")
    return (f"identical integer impacts (scale {a['scale']:g}) on {a['identical_integer_rows']}/{a['rows']} "
            f"documents{share}, {a['impact_entries_differing']} of {a['impact_entries']} impacts differ, by at most "
            f"{a['max_abs_impact_difference']}; max |weight difference| {a['max_abs_weight_difference']:.2e}; "
            f"top-{a['top_k']} terms: same set on {a['rows_with_same_top_k']}/{a['rows']}, mean overlap {overlap}")


def run_digests(run: Mapping[str, Mapping[str, float]]) -> tuple[str, dict[str, list[str]]]:
    """The run's sha256, and per query the sha256 of its hits (docid and ``repr`` of the score, in rank order:
    score descending, then docid) and of its set of docids: what the scale study's exactness comparison
    compares across engines that ran in other processes (the runs themselves are not kept)."""
    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    per_query = {}
    for qid in sorted(run):
        hits = sorted(run[qid].items(), key=lambda h: (-h[1], h[0]))
        per_query[qid] = [sha("\n".join(f"{d} {x!r}" for d, x in hits)), sha("\n".join(sorted(run[qid])))]
    return sha("\n".join(f"{q} {h}" for q, (h, _) in per_query.items())), per_query

