"""What stage 2 needs from a model: a text encoder that turns a batch of texts into sparse vocabulary vectors.

The SPLADE model layer is adapted to :class:`TextEncoder`; tests use :class:`~lsr_eval.encode.hashing.HashingEncoder`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np
import scipy.sparse as sp

from lsr_eval.errors import LsrEvalError


@dataclass(frozen=True)
class EncodedBatch:
    """An encoder's output for ``n`` texts.

    ``weights``: ``n x V`` CSR matrix (float32), row ``i`` = vector of text ``i``, column = vocabulary id.
    ``n_tokens``: real (non-padding) tokens of each text after truncation. ``truncated``: text cut at the max length.
    """

    weights: sp.csr_matrix
    n_tokens: Sequence[int]
    truncated: Sequence[bool]

    def __post_init__(self) -> None:
        if not sp.issparse(self.weights) or self.weights.format != "csr":
            raise LsrEvalError(f"EncodedBatch.weights must be a scipy CSR matrix, got {type(self.weights).__name__}")
        n = self.weights.shape[0]
        if len(self.n_tokens) != n or len(self.truncated) != n:
            raise LsrEvalError(f"EncodedBatch has {n} rows but {len(self.n_tokens)} n_tokens and "
                               f"{len(self.truncated)} truncated flags")

    @classmethod
    def from_dense(cls, weights: np.ndarray, n_tokens: Sequence[int], truncated: Sequence[bool]) -> EncodedBatch:
        """From a dense ``n x V`` array (zeros are not stored)."""
        return cls(sp.csr_matrix(np.asarray(weights, dtype=np.float32)), n_tokens, truncated)

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[np.ndarray, np.ndarray]], vocab_size: int, n_tokens: Sequence[int],
                  truncated: Sequence[bool]) -> EncodedBatch:
        """From one ``(vocab ids, weights)`` pair of arrays per text."""
        lengths = [len(ids) for ids, _ in rows]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        indices = np.concatenate([np.asarray(ids, dtype=np.int32) for ids, _ in rows]) if rows else \
            np.zeros(0, np.int32)
        data = np.concatenate([np.asarray(w, dtype=np.float32) for _, w in rows]) if rows else \
            np.zeros(0, np.float32)
        return cls(sp.csr_matrix((data, indices, indptr), shape=(len(rows), vocab_size)), n_tokens, truncated)


@runtime_checkable
class TextEncoder(Protocol):
    """A sparse text encoder (e.g. SPLADE). Must be deterministic for a given text (whatever the batch) so that a
    resumed or distributed run gives the same vectors."""

    #: vocabulary id -> token string (the column names of ``EncodedBatch.weights``).
    vocab: Sequence[str]

    def encode_batch(self, texts: list[str]) -> EncodedBatch:
        """Vectors of ``texts``, in the same order."""
        ...

    def length_key(self, text: str) -> int:
        """A cheap proxy of the tokenised length (e.g. ``len(text)``), used to batch texts of similar length."""
        ...


@dataclass(frozen=True)
class SparseVectors:
    """Vectors held in memory: ``matrix`` row ``i`` (CSR, float32) is the vector of ``ids[i]``; columns are
    ``vocab`` ids. Used for queries and small corpora."""

    ids: list[str]
    matrix: sp.csr_matrix
    vocab: list[str]
    #: ``(folder, digest)``: the encoding folder the vectors were read from
    #: (:func:`lsr_eval.encode.reader.load_vectors`) and their :meth:`digest` then; None for vectors made in memory.
    source: tuple[str, str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.matrix.shape != (len(self.ids), len(self.vocab)):
            raise LsrEvalError(f"SparseVectors: matrix shape {self.matrix.shape} does not match "
                               f"{len(self.ids)} ids x {len(self.vocab)} vocabulary entries")

    def digest(self) -> str:
        """sha1 of the ids, the vocabulary and the CSR arrays (about 30 ms per million stored weights)."""
        h = hashlib.sha1()
        for strings in (self.ids, self.vocab):
            h.update("\n".join(strings).encode("utf-8") + b"\0")
        h.update(repr(self.matrix.shape).encode())
        for array in (self.matrix.indptr, self.matrix.indices, self.matrix.data):
            h.update(str(array.dtype).encode())
            h.update(np.ascontiguousarray(array).tobytes())
        return h.hexdigest()

    def source_folder(self) -> str | None:
        """The folder of :attr:`source` while the vectors are still what was read from it; None when they were
        made in memory or changed since."""
        if self.source is None:
            return None
        folder, digest = self.source
        return folder if self.digest() == digest else None
