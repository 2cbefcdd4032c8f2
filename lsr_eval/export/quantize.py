"""Integer impacts for Anserini: ``q = round_half_to_even(w * scale)``; weights with ``q == 0`` are dropped.

Anserini's ``JsonVectorCollection`` reads each weight with ``JsonNode.asInt()`` and indexes the token repeated that
many times (``-impact -pretokenized``), so weights must be integers, and token strings must not contain whitespace
(the pretokenized analyzer splits on it). The rounding follows the reference SPLADE exports: naver/splade's
``EncodeAnserini`` writes ``np.rint(w * quantization_factor)`` with factor 100 (Anserini/Pyserini SPLADE docs:
"converted to integer by taking the round of weight*100"), and Pyserini's ``SpladeDocumentEncoder`` uses Python's
``round`` -- both round half to even. ``w`` is widened to float64 before the product, so the float32 value stored
is what is scaled: e.g. float32(0.005) = 0.0049999999 -> 0 (dropped), float32(1.234) -> 123, 0.125 -> 12 (a true
half, rounded to even), 0.375 -> 38.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import scipy.sparse as sp

from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.errors import InputError
from lsr_eval.models.options import SCALE
from lsr_eval.settings import check

__all__ = ["DEFAULT_SCALE", "ROUNDING", "VocabCheck", "check_scale", "quantize", "quantize_rows"]
ROUNDING = "half-to-even (numpy.rint), as naver/splade EncodeAnserini and Pyserini's SPLADE encoder"
#: Anserini parses impacts as Java ints.
JAVA_INT_MAX = 2**31 - 1
_WHITESPACE = re.compile(r"\s")


def check_scale(scale: float) -> float:
    """A positive, finite scale."""
    return float(check("scale", scale, float, SCALE))


def quantize(weights: np.ndarray, scale: float) -> np.ndarray:
    """``rint(float64(w) * scale)`` as int64 (round half to even)."""
    return np.rint(np.asarray(weights, dtype=np.float64) * scale).astype(np.int64)


class VocabCheck:
    """Token strings of a vocabulary, with the ids Anserini cannot take: empty, containing whitespace, or equal to
    another id's string (their weights would collide in the JSON object). Only ids actually used are refused."""

    def __init__(self, vocab: Sequence[str]) -> None:
        self.tokens = np.array(list(vocab), dtype=object)
        self.problems: dict[int, str] = {}
        first: dict[str, int] = {}
        for i, tok in enumerate(vocab):
            if not tok:
                self.problems[i] = "is empty"
            elif _WHITESPACE.search(tok):
                self.problems[i] = "contains whitespace (Anserini's pretokenized analyzer would split it)"
            elif tok in first:
                self.problems[i] = f"is also the token of vocabulary id {first[tok]}"
            else:
                first[tok] = i
        self.bad = np.zeros(len(self.tokens), dtype=bool)
        self.bad[list(self.problems)] = True

    def check(self, weights: sp.csr_matrix, ids: Sequence[str], what: str) -> None:
        """Refuse rows that use a bad token, naming token, vocabulary id and row id."""
        hit = np.flatnonzero(self.bad[weights.indices])
        if hit.size:
            pos = hit[0]
            vid = int(weights.indices[pos])
            row = int(np.searchsorted(weights.indptr, pos, side="right") - 1)
            raise InputError(f"token {self.tokens[vid]!r} (vocabulary id {vid}) {self.problems[vid]}; used by "
                             f"{what} {ids[row]!r}")


@dataclass(frozen=True)
class QuantizedRows:
    """Integer vectors: row ``i`` (of ``ids[i]``) = ``indices[indptr[i]:indptr[i+1]]`` with ``values`` (all > 0)."""

    ids: Sequence[str]
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    dropped_zero_weights: int
    empty_before: int

    @property
    def empty_after(self) -> int:
        return int((np.diff(self.indptr) == 0).sum())


def _row_of(weights: sp.csr_matrix, pos: int) -> int:
    return int(np.searchsorted(weights.indptr, pos, side="right") - 1)


def quantize_rows(weights: sp.csr_matrix, ids: Sequence[str], vocab: VocabCheck, scale: float,
                  what: str = "document") -> QuantizedRows:
    """Quantise every row of ``weights`` (see module doc); refuse non-finite, negative or too large weights and bad
    tokens, naming the ``what`` id; drop weights that round to 0 (counted)."""
    data = weights.data
    for test, problem in ((~np.isfinite(data), "is not finite"), (data < 0, "is negative")):
        bad = np.flatnonzero(test)
        if bad.size:
            pos = bad[0]
            vid = int(weights.indices[pos])
            raise InputError(f"{what} {ids[_row_of(weights, pos)]!r}: weight {data[pos]} of token "
                             f"{vocab.tokens[vid]!r} (vocabulary id {vid}) {problem}")
    vocab.check(weights, ids, what)
    q = quantize(data, scale)
    big = np.flatnonzero(q > JAVA_INT_MAX)
    if big.size:
        pos = big[0]
        raise InputError(f"{what} {ids[_row_of(weights, pos)]!r}: weight {data[pos]} x scale {scale} = {q[pos]} "
                         f"exceeds Anserini's integer range ({JAVA_INT_MAX})")
    keep = q > 0
    kept_before = np.zeros(len(q) + 1, dtype=np.int64)  # kept_before[p]: entries kept among the first p
    np.cumsum(keep, out=kept_before[1:])
    indptr = kept_before[weights.indptr]
    return QuantizedRows(ids, indptr, weights.indices[keep].astype(np.int32, copy=False), q[keep],
                         int((~keep).sum()), int((np.diff(weights.indptr) == 0).sum()))


def row_weight_map(indices: np.ndarray, values: np.ndarray, vocab: VocabCheck, scale: float, row_id: str,
                   what: str = "query") -> dict[str, int]:
    """One sparse row (vocabulary ``indices``, float ``values``) as ``{token: rint(w * scale)}`` with zeros dropped:
    :func:`quantize_rows` on a single row without building a matrix (the per-query path). A row that fails one of
    its checks goes through :func:`quantize_rows`, which names the problem."""
    q = quantize(values, scale)
    if not (np.isfinite(values).all() and (values >= 0).all() and not vocab.bad[indices].any()
            and (len(q) == 0 or q.max() <= JAVA_INT_MAX)):
        rows = quantize_rows(_OneRow(values, indices, np.array([0, len(values)])), [row_id], vocab, scale, what)
        return dict(zip(vocab.tokens[rows.indices].tolist(), rows.values.tolist()))
    keep = q > 0
    return dict(zip(vocab.tokens[indices[keep]].tolist(), q[keep].tolist()))


class _OneRow(NamedTuple):
    """The CSR fields :func:`quantize_rows` reads, for one row (no scipy matrix built)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
