"""Expected FLOPs of a term-matching system over its own index (BM25), by the definition of
:mod:`lsr_eval.efficiency.flops` (Paria et al., ICLR 2020) with analysed terms as the dimensions:

    FLOPs = sum_t p_q(t) * p_d(t),    p_d(t) = df(t) / N,    p_q(t) = |{q in Q : t in q}| / |Q|

Design notes: docs/design.md."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

from lsr_eval.errors import InputError
from lsr_eval.settings import Setting, check

DEFINITION = "sum_t p_q(t) * df(t) / N over the index's analysed terms (Paria et al. 2020)"


@dataclass(frozen=True)
class TermFlops:
    """Expected FLOPs with the counts behind it."""

    flops: float
    postings_per_query: float
    queries: int
    empty_queries: int
    documents: int
    distinct_query_terms: int
    mean_query_terms: float

    def to_dict(self) -> dict[str, Any]:
        return {"expected_flops": self.flops, "definition": DEFINITION, **asdict(self)}


#: The index's documents (expected FLOPs divide by them).
DOCUMENTS = Setting(help="documents in the index (expected FLOPs need some)", ge=1)


def term_flops(query_terms: Sequence[Iterable[str]], df: Mapping[str, int], documents: int) -> TermFlops:
    """FLOPs of queries given as analysed terms (repeats allowed) over an index with ``documents`` documents and
    document frequencies ``df`` (every query term must have an entry, 0 for terms not in the index)."""
    check("documents", documents, int, DOCUMENTS)
    if not query_terms:
        raise InputError("expected FLOPs need queries (got none)")
    touched = 0
    terms_total = 0
    empty = 0
    seen: set[str] = set()
    for i, terms in enumerate(query_terms):
        unique = set(terms)
        missing = [t for t in unique if t not in df]
        if missing:
            raise InputError(f"query {i}: no document frequency for term {sorted(missing)[0]!r}")
        bad = [t for t in unique if df[t] < 0 or df[t] > documents]
        if bad:
            raise InputError(f"query {i}: df({bad[0]!r}) = {df[bad[0]]} is outside [0, {documents}]")
        touched += sum(int(df[t]) for t in unique)
        terms_total += len(unique)
        empty += not unique
        seen |= unique
    n = len(query_terms)
    return TermFlops(touched / n / documents, touched / n, n, empty, documents, len(seen), terms_total / n)
