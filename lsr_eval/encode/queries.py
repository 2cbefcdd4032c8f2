"""Encode queries (or any small set of texts) in memory, with the same length-sorted batching as the corpus."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import scipy.sparse as sp

from lsr_eval.data.chunks import chunks
from lsr_eval.data.types import Query
from lsr_eval.encode.batching import check_batching, check_finite, encode_window
from lsr_eval.encode.protocol import SparseVectors, TextEncoder
from lsr_eval.errors import InputError

DEFAULT_QUERY_BATCH_SIZE = 64
DEFAULT_QUERY_WINDOW_BATCHES = 100


@dataclass(frozen=True)
class EncodedQueries:
    """Query vectors with per-query real token counts and truncation flags."""

    vectors: SparseVectors
    n_tokens: np.ndarray
    truncated: np.ndarray
    seconds: float

    def counts(self) -> dict[str, Any]:
        """For manifests."""
        n = len(self.vectors.ids)
        dims = np.diff(self.vectors.matrix.indptr)
        return {"queries": n, "empty_vectors": int((dims == 0).sum()), "truncated_queries": int(self.truncated.sum()),
                "avg_active_dims": float(dims.mean()) if n else 0.0, "max_active_dims": int(dims.max(initial=0)),
                "real_tokens": int(self.n_tokens.sum()), "seconds": self.seconds}


def encode_queries(queries: Iterable[Query], encoder: TextEncoder, batch_size: int = DEFAULT_QUERY_BATCH_SIZE,
                   window_batches: int = DEFAULT_QUERY_WINDOW_BATCHES) -> EncodedQueries:
    """Vectors of ``query.text`` for each query, in input order; refuses duplicate or non-finite output."""
    check_batching(batch_size, window_batches)
    start = time.perf_counter()
    ids: list[str] = []
    seen: set[str] = set()
    parts, n_tokens, truncated = [], [], []
    for window in chunks(queries, batch_size * window_batches):
        for q in window:
            if q.id in seen:
                raise InputError(f"duplicate query id {q.id!r}")
            seen.add(q.id)
        enc = encode_window([q.text for q in window], encoder, batch_size)
        check_finite(enc.weights, [q.id for q in window], "query")
        ids += [q.id for q in window]
        parts.append(enc.weights)
        n_tokens.append(enc.n_tokens)
        truncated.append(enc.truncated)
    vocab = list(encoder.vocab)
    matrix = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, len(vocab)), dtype=np.float32)
    return EncodedQueries(SparseVectors(ids, matrix, vocab),
                          np.concatenate(n_tokens) if n_tokens else np.zeros(0, np.int64),
                          np.concatenate(truncated) if truncated else np.zeros(0, bool),
                          time.perf_counter() - start)
