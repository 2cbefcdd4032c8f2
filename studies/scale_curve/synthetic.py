"""Synthetic sparse collections of any size for cost measurements: a Zipf vocabulary, SPLADE-like document
lengths and impacts, and queries planted on one document each (so evaluation measures something), reproducible
from a seed per chunk (a smaller collection is a prefix of a larger one)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from lsr_eval.errors import ConfigError


@dataclass(frozen=True)
class DataSpec:
    """What the synthetic collection and queries look like (all of it goes into the experiment record)."""

    vocab: int = 30_522
    zipf: float = 1.1
    doc_terms: float = 120.0
    doc_sigma: float = 0.5
    max_doc_terms: int = 512
    query_terms: float = 25.0
    query_sigma: float = 0.3
    max_query_terms: int = 64
    plant_terms: int = 10
    #: impacts: round(lognormal(log(impact_median), impact_sigma)) clipped to 1..255
    impact_median: float = 20.0
    impact_sigma: float = 0.8
    query_impact_median: float = 40.0
    queries: int = 1000
    seed: int = 13
    chunk: int = 50_000
    file_docs: int = 500_000

    def check(self) -> DataSpec:
        if self.vocab < 2 or self.vocab > 10 ** 5:
            raise ConfigError(f"vocab must be in 2..100000 (5-digit term names), got {self.vocab}")
        if self.zipf <= 0 or self.doc_terms < 1 or self.query_terms < 1 or self.queries < 1:
            raise ConfigError("zipf, doc_terms, query_terms and queries must be positive")
        if self.max_doc_terms > self.vocab or self.max_query_terms > self.vocab:
            raise ConfigError("max_doc_terms and max_query_terms cannot exceed the vocabulary")
        if self.chunk < 1 or self.file_docs < 1 or self.plant_terms < 0:
            raise ConfigError("chunk and file_docs must be >= 1, plant_terms >= 0")
        return self


def term_names(vocab: int) -> list[str]:
    return [f"t{i:05d}" for i in range(vocab)]


def doc_id(i: int) -> str:
    return f"d{i:08d}"


def query_id(i: int) -> str:
    return f"q{i:05d}"


class ZipfSampler:
    """Term ranks 0..vocab-1 with ``p(r) ~ (r + 1) ** -exponent``: inverse CDF through a lookup table of ``2**20``
    buckets (then a step or two of correction), several times faster than a binary search per draw."""

    BUCKETS = 1 << 20

    def __init__(self, vocab: int, exponent: float) -> None:
        p = np.arange(1, vocab + 1, dtype=np.float64) ** -exponent
        self.cdf = np.cumsum(p)
        self.cdf /= self.cdf[-1]
        self.cdf[-1] = np.inf  # every u < 1 falls in the vocabulary
        self.vocab = vocab
        self._table = np.searchsorted(self.cdf, np.arange(self.BUCKETS) / self.BUCKETS, side="right")

    def __call__(self, u: np.ndarray) -> np.ndarray:
        """The term of each uniform ``u`` in [0, 1): the first rank whose cumulative probability exceeds it."""
        ranks = self._table[(u * self.BUCKETS).astype(np.int64)]
        while True:
            low = self.cdf[ranks] <= u
            if not low.any():
                return ranks
            ranks[low] += 1

    def probabilities(self) -> np.ndarray:
        cdf = self.cdf.copy()
        cdf[-1] = 1.0
        return np.diff(cdf, prepend=0.0)


def lognormal_lengths(rng: np.random.Generator, n: int, median: float, sigma: float, cap: int) -> np.ndarray:
    """``n`` log-normal lengths around ``median``, rounded, in 1..``cap``."""
    return np.clip(np.rint(rng.lognormal(math.log(median), sigma, n)), 1, cap).astype(np.int64)


def lognormal_impacts(rng: np.random.Generator, n: int, median: float, sigma: float) -> np.ndarray:
    """``n`` log-normal integer impacts around ``median``, rounded, in 1..255."""
    return np.clip(np.rint(rng.lognormal(math.log(median), sigma, n)), 1, 255).astype(np.int64)


def draw_vectors(rng: np.random.Generator, lengths: np.ndarray, sampler: ZipfSampler, impact_median: float,
                 impact_sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sparse vectors as CSR ``(offsets, terms, impacts)``: row ``i`` holds ``lengths[i]`` distinct terms (at most the
    vocabulary) drawn from the Zipf ``sampler`` without replacement, each with a log-normal impact in 1..255.

    Vectorised: ``2 * length + 8`` draws with replacement per row, the first occurrences kept in draw order up to the
    row's length (two integer sorts of packed keys); a row still short is completed one draw at a time."""
    n = len(lengths)
    vocab = sampler.vocab
    need = np.minimum(np.asarray(lengths, dtype=np.int64), vocab)
    draws = 2 * need + 8
    bits = int(draws.max()).bit_length() if n else 1
    if n * vocab * (1 << bits) >= 1 << 62:
        raise ValueError(f"{n} rows of {vocab} terms: too many to pack; draw them in smaller chunks")
    first_draw = np.zeros(n, dtype=np.int64)
    np.cumsum(draws[:-1], out=first_draw[1:])
    rows = np.repeat(np.arange(n, dtype=np.int64), draws)
    pos = np.arange(len(rows), dtype=np.int64) - np.repeat(first_draw, draws)
    terms = sampler(rng.random(len(rows)))
    packed = np.sort(((rows * vocab + terms) << bits) | pos)  # by row, term, then draw position
    key = packed >> bits
    first = np.ones(len(packed), dtype=bool)
    first[1:] = key[1:] != key[:-1]  # the first draw of each (row, term)
    packed, key = packed[first], key[first]
    rows, terms, pos = key // vocab, key % vocab, packed & ((1 << bits) - 1)
    packed = np.sort(((rows << bits) | pos) * vocab + terms)  # by row, then draw position
    terms, rows = packed % vocab, (packed // vocab) >> bits
    counts = np.bincount(rows, minlength=n)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    keep = np.arange(len(rows), dtype=np.int64) - starts[rows] < need[rows]
    terms = terms[keep]
    counts = np.minimum(counts, need)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    short = np.flatnonzero(counts < need)
    if len(short):
        parts, start = [], 0
        for i in short.tolist():
            row = terms[offsets[i]:offsets[i + 1]].tolist()
            seen = set(row)
            while len(row) < need[i]:
                for t in sampler(rng.random(4 * (need[i] - len(row)) + 16)).tolist():
                    if t not in seen:
                        seen.add(t)
                        row.append(t)
                        if len(row) == need[i]:
                            break
            parts += [terms[start:offsets[i]], np.array(row, dtype=terms.dtype)]
            start = offsets[i + 1]
        parts.append(terms[start:])
        terms = np.concatenate(parts)
        np.cumsum(need, out=offsets[1:])
    impacts = lognormal_impacts(rng, len(terms), impact_median, impact_sigma)
    return offsets, terms, impacts



def make_queries(n_docs: int, spec: DataSpec, planted: np.ndarray, planted_terms: Mapping[int, np.ndarray],
                 sampler: ZipfSampler, names: Sequence[str]) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    """Query ``i``: ``plant_terms`` random terms of its planted document plus Zipf terms up to a log-normal length;
    qrels: the planted document, grade 1."""
    rng = np.random.default_rng([spec.seed, n_docs, 2])
    sizes = lognormal_lengths(rng, spec.queries, spec.query_terms, spec.query_sigma, spec.max_query_terms)
    zipf_offsets, zipf_terms, _ = draw_vectors(rng, sizes, sampler, 1.0, 0.0)
    queries: dict[str, dict[str, int]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for qi, d in enumerate(planted.tolist()):
        own = planted_terms[d]
        take = min(spec.plant_terms, len(own), int(sizes[qi]))
        chosen = list(rng.choice(own, take, replace=False).tolist()) if take else []
        seen = set(chosen)
        for t in zipf_terms[zipf_offsets[qi]:zipf_offsets[qi + 1]].tolist():
            if len(chosen) >= sizes[qi]:
                break
            if t not in seen:
                seen.add(t)
                chosen.append(t)
        weights = lognormal_impacts(rng, len(chosen), spec.query_impact_median, spec.impact_sigma).tolist()
        qid = query_id(qi)
        queries[qid] = {names[t]: w for t, w in zip(chosen, weights)}
        qrels[qid] = {doc_id(d): 1}
    return queries, qrels

