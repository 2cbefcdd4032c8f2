"""Vocabulary ids -> term strings, and SPLADE vectors -> ``{term: weight}`` dicts (the JSON-vector format).

Term strings are unique and whitespace-free, as an inverted index needs: whitespace becomes ``<U+XXXX>``, and an
id with no string, or with an earlier id's string, gets ``[id:N]``.

Design notes: docs/design.md."""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import torch

from lsr_eval.errors import ConfigError
from lsr_eval.models.sparsify import Sparsify

_WHITESPACE = re.compile(r"\s")


def vocab_terms(tokenizer, vocab_size: int) -> list[str]:
    """One unique, whitespace-free term string per vocabulary id ``0 .. vocab_size-1`` (rules above)."""
    n = min(len(tokenizer), vocab_size)
    raw = tokenizer.convert_ids_to_tokens(list(range(n)))
    terms: list[str] = []
    seen: set[str] = set()
    for i in range(vocab_size):
        s = raw[i] if i < n else None
        if not s:
            s = f"[id:{i}]"
        elif _WHITESPACE.search(s):
            s = _WHITESPACE.sub(lambda m: f"<U+{ord(m.group()):04X}>", s)
        if s in seen:
            s = f"{s}[id:{i}]"
        seen.add(s)
        terms.append(s)
    return terms


class VocabularyTerms:
    """The vocabulary side of an encoder with a ``tokenizer`` and a ``vocab_size``: its special ids and the term
    string of each id (computed once, into ``_terms``)."""

    _terms: list[str] | None = None

    @property
    def special_ids(self) -> list[int]:
        return sorted(set(self.tokenizer.all_special_ids))

    @property
    def terms(self) -> list[str]:
        """Term string of each vocabulary id (:func:`vocab_terms`)."""
        if self._terms is None:
            self._terms = vocab_terms(self.tokenizer, self.vocab_size)
        return self._terms


def to_term_weights(weights, terms: Sequence[str], *, sparsify: Sparsify | None = None,
                    special_ids: Sequence[int] = ()) -> list[dict[str, float]]:
    """``{term: weight}`` per row of ``weights`` (N x V tensor, array or scipy sparse matrix), zeros left out,
    terms in decreasing weight. ``terms`` is :func:`vocab_terms`' list; ``sparsify`` is applied first."""
    if hasattr(weights, "tocsr"):
        if sparsify is not None:
            weights = torch.from_numpy(weights.toarray())
        else:
            csr = weights.tocsr()
            _check_width(csr.shape[1], terms)
            return [_row_dict(csr.indices[csr.indptr[i]:csr.indptr[i + 1]],
                              csr.data[csr.indptr[i]:csr.indptr[i + 1]], terms) for i in range(csr.shape[0])]
    w = torch.as_tensor(weights, dtype=torch.float32)
    if w.dim() != 2:
        raise ConfigError(f"weights: expected a 2-d (texts x vocabulary) matrix, got shape {tuple(w.shape)}")
    _check_width(w.shape[1], terms)
    if sparsify is not None:
        w = sparsify.apply(w, special_ids)
    out = []
    for row in w:
        idx = torch.nonzero(row, as_tuple=True)[0]
        out.append(_row_dict(idx.numpy(), row[idx].numpy(), terms))
    return out


def _check_width(width: int, terms: Sequence[str]) -> None:
    if width != len(terms):
        raise ConfigError(f"weights have {width} columns but the vocabulary has {len(terms)} terms")


def _row_dict(idx: np.ndarray, values: np.ndarray, terms: Sequence[str]) -> dict[str, float]:
    keep = values != 0
    idx, values = idx[keep], values[keep]
    order = np.argsort(-values, kind="stable")
    return {terms[int(j)]: float(values[o]) for o, j in zip(order, idx[order])}
