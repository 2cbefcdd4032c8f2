"""Length-sorted batching: encode a window of texts in batches of similar length, return rows in input order.

Sorting a window of ``window_batches x batch_size`` texts by length (longest first, so an out-of-memory error shows
at once) cuts padding; the permutation is undone before anything is written. Only the window is sorted, so the
corpus is still streamed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from lsr_eval.encode.protocol import EncodedBatch, TextEncoder
from lsr_eval.errors import LsrEvalError
from lsr_eval.models.options import BATCH_SIZE
from lsr_eval.settings import Setting, check

#: Batches encoded between two writes of the window (what the memory holds at once).
WINDOW_BATCHES = Setting(help="batches encoded between two writes (the memory held at once)", ge=1)

@dataclass(frozen=True)
class EncodedWindow:
    """Vectors of a window in input order: ``weights`` (CSR float32, sorted indices, no stored zeros),
    real tokens per text, truncation flags."""

    weights: sp.csr_matrix
    n_tokens: np.ndarray
    truncated: np.ndarray


def check_batching(batch_size: int, window_batches: int) -> None:
    """Refuse sizes outside their declarations."""
    check("batch_size", batch_size, int, BATCH_SIZE)
    check("window_batches", window_batches, int, WINDOW_BATCHES)


def clean_rows(weights: sp.csr_matrix) -> sp.csr_matrix:
    """Canonical CSR: float32 weights, sorted ids, duplicates summed, explicit zeros dropped (the index dtype is
    scipy's choice; shards store int32 ids and int64 row pointers)."""
    w = sp.csr_matrix(weights, dtype=np.float32, copy=True)
    w.sum_duplicates()
    w.eliminate_zeros()
    return w


def _checked(batch: EncodedBatch, n: int, vocab_size: int) -> EncodedBatch:
    if not isinstance(batch, EncodedBatch):
        raise LsrEvalError(f"encode_batch must return an EncodedBatch, got {type(batch).__name__}")
    if batch.weights.shape != (n, vocab_size):
        raise LsrEvalError(f"encode_batch returned a {batch.weights.shape} matrix for {n} texts and a vocabulary "
                           f"of {vocab_size}")
    return batch


def encode_window(texts: Sequence[str], encoder: TextEncoder, batch_size: int,
                  on_batch: Callable[[int], object] | None = None) -> EncodedWindow:
    """Encode ``texts`` in length-sorted batches of ``batch_size``; rows come back in the order of ``texts``.
    ``on_batch(n)`` is called after each batch of ``n`` texts (progress bars)."""
    n = len(texts)
    vocab_size = len(encoder.vocab)
    keys = np.array([encoder.length_key(t) for t in texts], dtype=np.int64)
    order = np.argsort(-keys, kind="stable")  # longest first; ties keep input order
    parts, n_tokens, truncated = [], np.zeros(n, np.int64), np.zeros(n, bool)
    for start in range(0, n, batch_size):
        idx = order[start:start + batch_size]
        batch = _checked(encoder.encode_batch([texts[i] for i in idx]), len(idx), vocab_size)
        parts.append(sp.csr_matrix(batch.weights, dtype=np.float32))
        n_tokens[idx] = np.asarray(batch.n_tokens, dtype=np.int64)
        truncated[idx] = np.asarray(batch.truncated, dtype=bool)
        if on_batch is not None:
            on_batch(len(idx))
    stacked = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, vocab_size), dtype=np.float32)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.arange(n)
    return EncodedWindow(clean_rows(stacked[inverse]), n_tokens, truncated)


def check_finite(weights: sp.csr_matrix, ids: Sequence[str], what: str = "document") -> None:
    """Refuse NaN or infinite weights (e.g. a bf16 overflow), naming the text's id."""
    bad = np.flatnonzero(~np.isfinite(weights.data))
    if bad.size:
        row = int(np.searchsorted(weights.indptr, bad[0], side="right") - 1)
        raise LsrEvalError(f"the encoder gave a non-finite weight ({weights.data[bad[0]]}) to {what} {ids[row]!r} "
                           f"(vocabulary id {weights.indices[bad[0]]})")
