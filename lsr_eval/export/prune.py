"""Prune encoded vectors at export time, so that one encoding serves a whole sparsity sweep (no re-encoding).

A row keeps its weights strictly above ``threshold`` (zeros are never kept), then the ``top_k`` largest of those:
the rule of the encoder's :class:`lsr_eval.models.sparsify.Sparsify` (threshold, then top-k), applied to the
stored float vectors before quantisation. Pruning an encoding made with top-``K`` to top-``k`` (``k <= K``) keeps
the same terms as encoding with top-``k`` directly, except where weights tie at the k-th place: here ties go to
the lower vocabulary id (deterministic), where ``torch.topk`` picks either.

Cost: one ``lexsort`` over the stored entries of a block (rows x vocabulary CSR), O(nnz log nnz).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from lsr_eval.models.options import THRESHOLD, TOP_K
from lsr_eval.settings import Validated, setting


@dataclass(frozen=True)
class Prune(Validated):
    """Keep weights ``> threshold``, then the ``top_k`` largest per row (None: all)."""

    top_k: int | None = setting(None, like=TOP_K)
    threshold: float = setting(0.0, like=THRESHOLD)

    @property
    def active(self) -> bool:
        """Whether this prunes anything (a top-k or a positive threshold)."""
        return self.top_k is not None or self.threshold > 0

    def apply(self, weights: sp.spmatrix) -> sp.csr_matrix:
        """A pruned copy of ``weights`` (CSR, one row per vector, unique column ids per row)."""
        w = sp.csr_matrix(weights, copy=True)
        keep = w.data > self.threshold
        if self.top_k is not None:
            rows = np.repeat(np.arange(w.shape[0]), np.diff(w.indptr))
            data = np.where(keep, w.data, -np.inf)  # dropped entries sort last in their row
            order = np.lexsort((w.indices, -data, rows))  # by row, weight descending, column ascending
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order)) - w.indptr[rows[order]]
            keep &= rank < self.top_k
        kept_before = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(keep, out=kept_before[1:])
        return sp.csr_matrix((w.data[keep], w.indices[keep], kept_before[w.indptr]), shape=w.shape)

    def to_dict(self) -> dict[str, Any]:
        return {"top_k": self.top_k, "threshold": self.threshold,
                "rule": "weights > threshold, then the top_k largest per vector (ties: lower vocabulary id)"}
