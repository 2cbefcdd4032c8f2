"""Documents drawn as perturbed real term sets (studies/msmarco_scale/README.md): each generated document starts from a
real one, keeps each term with probability ``keep`` (its impact times a log-normal factor), and replaces the others by
terms drawn in proportion to their document frequency, with impacts drawn from that term's observed ones. Terms that
co-occur in real documents therefore co-occur in generated ones, which marginal (independent-term) generators lose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import numpy as np

Vector = dict[str, int]


@dataclass(frozen=True)
class Fitted:
    """What the generator holds after :func:`fit`: the real documents (templates, as term-id and impact arrays),
    the vocabulary, each term's document frequency and its observed impacts."""

    vocab: list[str]
    templates: list[tuple[np.ndarray, np.ndarray]]
    df: np.ndarray
    impacts: list[np.ndarray]

    @property
    def documents(self) -> int:
        return len(self.templates)


def fit(documents: Sequence[Mapping[str, int]]) -> Fitted:
    """The generator's state from real quantised document vectors (``{term: impact}``, impacts >= 1)."""
    index: dict[str, int] = {}
    templates = []
    observed: list[list[int]] = []
    for vector in documents:
        ids = np.array([index.setdefault(t, len(index)) for t in vector], dtype=np.int64)
        weights = np.array(list(vector.values()), dtype=np.int64)
        while len(observed) < len(index):
            observed.append([])
        for i, w in zip(ids.tolist(), weights.tolist()):
            observed[i].append(w)
        templates.append((ids, weights))
    if not templates or not index:
        raise ValueError("the generator needs at least one document with a term")
    df = np.array([len(o) for o in observed], dtype=np.int64)
    return Fitted(list(index), templates, df, [np.array(o, dtype=np.int64) for o in observed])


def draw(state: Fitted, n: int, *, keep: float = 0.8, sigma: float = 0.25, seed: int = 0,
         prefix: str = "g") -> Iterator[tuple[str, Vector]]:
    """``n`` generated documents ``(id, {term: impact})``, one at a time (memory does not grow with ``n``)."""
    if not 0 <= keep <= 1 or sigma < 0 or n < 0:
        raise ValueError(f"keep={keep} must be in [0, 1], sigma={sigma} >= 0, n={n} >= 0")
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(state.df / state.df.sum())
    for d in range(n):
        ids, weights = state.templates[int(rng.integers(state.documents))]
        kept = rng.random(len(ids)) < keep
        out: dict[int, int] = {}
        scaled = np.rint(weights[kept] * rng.lognormal(0.0, sigma, int(kept.sum()))).astype(np.int64)
        for t, w in zip(ids[kept].tolist(), np.maximum(scaled, 1).tolist()):
            out[t] = w
        for _ in range(int((~kept).sum())):
            t = int(np.searchsorted(cumulative, rng.random(), side="right"))
            t = min(t, len(cumulative) - 1)
            if t not in out:
                pool = state.impacts[t]
                out[t] = int(pool[int(rng.integers(len(pool)))])
        yield f"{prefix}{d}", {state.vocab[t]: w for t, w in out.items()}
