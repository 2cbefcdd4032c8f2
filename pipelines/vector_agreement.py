"""How far two encodings of the same texts agree: the same model in another precision or on another device
(pipelines/bench_encode.py, pipelines/gpu_check.py).

For two CSR weight matrices whose rows are the same texts in the same order:

* identical integer impacts: rows whose ``rint(w * scale)`` (:func:`lsr_eval.export.quantize.quantize`, zeros
  dropped: what is exported and indexed) are equal term for term;
* the largest absolute difference of a float weight (a term absent from a row weighs 0) and of an integer impact;
* top-k term overlap: per row, ``|top_k(a) & top_k(b)| / |top_k(a)|`` where ``top_k`` is the ``k`` largest weights
  (ties by vocabulary id), its mean and minimum over the rows with a weight, and the rows whose top-k sets are equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.export.quantize import quantize

TOP_K = 10


def _top(indices: np.ndarray, data: np.ndarray, k: int) -> set[int]:
    order = np.lexsort((indices, -data))[:k]     # weight descending, then vocabulary id
    return set(indices[order].tolist())


def agreement(reference: sp.csr_matrix, other: sp.csr_matrix, scale: float = DEFAULT_SCALE,
              top_k: int = TOP_K) -> dict[str, Any]:
    """The agreement of ``other`` with ``reference`` (module docstring); both ``n x V``, rows in the same order."""
    if reference.shape != other.shape:
        raise ValueError(f"shapes differ: {reference.shape} vs {other.shape}")
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


def agreement_text(a: dict[str, Any]) -> str:
    """One line for a summary."""
    share = "" if a["identical_integer_share"] is None else f" ({100 * a['identical_integer_share']:.1f}%)"
    overlap = "n/a" if a["mean_top_k_overlap"] is None else (f"{a['mean_top_k_overlap']:.4f} (min "
                                                               f"{a['min_top_k_overlap']:.2f})")
    return (f"identical integer impacts (scale {a['scale']:g}) on {a['identical_integer_rows']}/{a['rows']} "
            f"documents{share}, {a['impact_entries_differing']} of {a['impact_entries']} impacts differ, by at most "
            f"{a['max_abs_impact_difference']}; max |weight difference| {a['max_abs_weight_difference']:.2e}; "
            f"top-{a['top_k']} terms: same set on {a['rows_with_same_top_k']}/{a['rows']}, mean overlap {overlap}")
