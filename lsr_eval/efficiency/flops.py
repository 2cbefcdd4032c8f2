"""Expected FLOPs of retrieval with an inverted index (Paria et al., "Minimizing FLOPs to Learn Efficient Sparse
Representations", ICLR 2020; as computed by naver/splade ``splade/flops.py``):

    FLOPs = sum_j p_q(j) * p_d(j)

Design notes: docs/design.md."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence, get_args

import numpy as np
import scipy.sparse as sp

from lsr_eval.encode.reader import read_encoding_manifest, read_vocab
from lsr_eval.encode.store import read_shard
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export.prune import Prune
from lsr_eval.export.quantize import DEFAULT_SCALE, check_scale, quantize
from lsr_eval.models.options import VOCAB_SIZE
from lsr_eval.settings import check

Active = Literal["impact", "weight"]
ACTIVE_RULES: tuple[str, ...] = get_args(Active)


@dataclass(frozen=True)
class TermCounts:
    """``df[j]``: vectors in which term ``j`` is active, over ``n`` vectors (``empty`` of them with no active term).

    ``active`` and ``scale`` record the rule (``scale`` is None for the ``weight`` rule).
    """

    df: np.ndarray
    n: int
    empty: int
    active: str
    scale: float | None

    @property
    def vocab_size(self) -> int:
        return len(self.df)

    @property
    def probabilities(self) -> np.ndarray:
        """``p(j) = df[j] / n`` (all zeros when ``n == 0``)."""
        return self.df / self.n if self.n else np.zeros(len(self.df))

    @property
    def total_active(self) -> int:
        """Active entries over all vectors (= postings, for documents)."""
        return int(self.df.sum())

    @property
    def mean_active(self) -> float:
        """Average active dimensions per vector."""
        return self.total_active / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"vectors": self.n, "empty_vectors": self.empty, "active_entries": self.total_active,
                "avg_active_dims": self.mean_active, "terms_used": int((self.df > 0).sum()),
                "vocab_size": self.vocab_size, "active_rule": self.active, "scale": self.scale}


def _check_rule(active: str, scale: float) -> float | None:
    if active not in ACTIVE_RULES:
        raise ConfigError(f"active={active!r}: expected one of {', '.join(ACTIVE_RULES)}")
    return check_scale(scale) if active == "impact" else None


class TermCounter:
    """Accumulates :class:`TermCounts` over CSR blocks (``n x vocab_size``, rows with unique column ids)."""

    def __init__(self, vocab_size: int, active: Active = "impact", scale: float = DEFAULT_SCALE) -> None:
        check("vocab_size", vocab_size, int, VOCAB_SIZE)
        self.scale = _check_rule(active, scale)
        self.active = active
        self.df = np.zeros(vocab_size, dtype=np.int64)
        self.n = 0
        self.empty = 0

    def add(self, weights: sp.spmatrix, where: str = "block") -> None:
        """Count the rows of ``weights``; ``where`` names the block in error messages (a shard path, ...)."""
        w = sp.csr_matrix(weights)
        if w.shape[1] != len(self.df):
            raise InputError(f"{where}: {w.shape[1]} columns, the vocabulary has {len(self.df)} terms")
        bad = np.flatnonzero(~np.isfinite(w.data))
        if bad.size:
            row = int(np.searchsorted(w.indptr, bad[0], side="right") - 1)
            raise InputError(f"{where}: row {row} has a non-finite weight")
        w.sum_duplicates()
        keep = quantize(w.data, self.scale) > 0 if self.active == "impact" else w.data > 0
        self.df += np.bincount(w.indices[keep], minlength=len(self.df))
        kept_before = np.zeros(len(keep) + 1, dtype=np.int64)  # kept_before[p]: active among the first p entries
        np.cumsum(keep, out=kept_before[1:])
        per_row = np.diff(kept_before[w.indptr])
        self.n += w.shape[0]
        self.empty += int((per_row == 0).sum())

    def result(self) -> TermCounts:
        return TermCounts(self.df.copy(), self.n, self.empty, self.active, self.scale)


def count_matrix(weights: sp.spmatrix, active: Active = "impact", scale: float = DEFAULT_SCALE) -> TermCounts:
    """Counts of the rows of one CSR matrix (query vectors, a small corpus)."""
    counter = TermCounter(int(weights.shape[1]), active, scale)
    counter.add(weights, "matrix")
    return counter.result()


def count_encoding(folder: str | os.PathLike, active: Active = "impact", scale: float = DEFAULT_SCALE,
                   prune: Prune | None = None) -> TermCounts:
    """Counts of every document of a finalised encoding folder (:mod:`lsr_eval.encode.store`), one shard at a time.
    ``scale`` and ``prune`` must be the export's (the impacts that were indexed)."""
    path = Path(folder)
    manifest = read_encoding_manifest(path)
    counter = TermCounter(len(read_vocab(path)), active, scale)
    for name in manifest["outputs"]["shards"]:
        shard_path = path / name
        if not shard_path.exists():
            raise InputError(f"{shard_path} is missing (listed in {path / 'manifest.json'})")
        weights = read_shard(shard_path).weights
        counter.add(weights if prune is None else prune.apply(weights), str(shard_path))
    expected = manifest.get("counts", {}).get("documents_out")
    if expected is not None and expected != counter.n:
        raise InputError(f"{path}: the manifest counts {expected} documents, its shards hold {counter.n}")
    return counter.result()


def count_weight_maps(maps: Mapping[str, Mapping[str, int]], vocab: Sequence[str],
                      scale: float | None = None) -> TermCounts:
    """Counts of integer query weight maps ``{qid: {term: impact}}`` (what :class:`ImpactSearcher` searches: terms
    with impact > 0), with ``vocab`` giving the column of each term (the documents' vocabulary); ``scale``, the one
    the maps were quantised with, is only recorded."""
    column = {t: i for i, t in enumerate(vocab)}
    df = np.zeros(len(column), dtype=np.int64)
    empty = 0
    for qid, weights in maps.items():
        active = 0
        for term, w in weights.items():
            if w <= 0:
                continue
            j = column.get(term)
            if j is None:
                raise InputError(f"query {qid}: term {term!r} is not in the vocabulary")
            df[j] += 1
            active += 1
        empty += active == 0
    return TermCounts(df, len(maps), empty, "impact", None if scale is None else check_scale(scale))


def expected_flops(documents: TermCounts, queries: TermCounts) -> float:
    """``sum_j p_q(j) p_d(j)`` (see module doc)."""
    if documents.vocab_size != queries.vocab_size:
        raise ConfigError(f"documents are counted over {documents.vocab_size} terms, queries over "
                          f"{queries.vocab_size}: not the same vocabulary")
    if documents.n == 0 or queries.n == 0:
        raise InputError(f"expected FLOPs need documents and queries (got {documents.n} and {queries.n})")
    return float(np.dot(documents.probabilities, queries.probabilities))


@dataclass(frozen=True)
class FlopsReport:
    """Expected FLOPs with the counts behind it."""

    flops: float
    documents: TermCounts
    queries: TermCounts

    def to_dict(self) -> dict[str, Any]:
        return {"expected_flops": self.flops, "definition": "sum_j p_q(j) * p_d(j) (Paria et al. 2020)",
                "documents": self.documents.to_dict(), "queries": self.queries.to_dict()}


def flops_report(documents: TermCounts, queries: TermCounts) -> FlopsReport:
    return FlopsReport(expected_flops(documents, queries), documents, queries)

