"""In-process Anserini search: BM25 over a flat index, integer-weighted queries over an impact index.

Results come back as plain runs (``{qid: {docid: score}}``); writing TREC files and evaluating are later stages.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from lsr_eval.anserini.jvm import autoclass, java_errors
from lsr_eval.data.types import Query, Run
from lsr_eval.errors import ConfigError, InputError

log = logging.getLogger(__name__)

#: Lucene's default limit on clauses in one query (``IndexSearcher.getMaxClauseCount``).
LUCENE_MAX_CLAUSES = 1024
#: Queries sent to Java per batch call (bounds the memory held by one result map).
BATCH = 1000


@dataclass
class SearchCounts:
    """What went into a search and what came out, so nothing is lost silently."""

    queries: int = 0
    queries_with_hits: int = 0
    queries_without_hits: list[str] = field(default_factory=list)
    hits: int = 0
    removed_self_hits: int = 0

    def to_dict(self) -> dict:
        return {"queries": self.queries, "queries_with_hits": self.queries_with_hits,
                "queries_without_hits": len(self.queries_without_hits),
                "queries_without_hits_ids": self.queries_without_hits[:100], "hits": self.hits,
                "removed_self_hits": self.removed_self_hits}


def _java_list(items: Iterable):
    lst = autoclass("java.util.ArrayList")()
    for x in items:
        lst.add(x)
    return lst


def _collect(result_map, qids: Sequence[str], run: Run, counts: SearchCounts, remove_query: bool, k: int) -> None:
    """Copy a Java ``Map<String, ScoredDoc[]>`` into ``run``; ``remove_query`` drops hits whose docid is the qid."""
    for qid in qids:
        hits = result_map.get(qid) or []
        ranked: dict[str, float] = {}
        for h in hits:
            docid = h.docid
            if remove_query and docid == qid:
                counts.removed_self_hits += 1
                continue
            ranked[docid] = float(h.score)
        counts.queries += 1
        counts.hits += len(ranked)
        if ranked:
            counts.queries_with_hits += 1
        else:
            counts.queries_without_hits.append(qid)
        run[qid] = ranked


class _Searcher:
    _java_class = ""

    def __init__(self, index_dir: str) -> None:
        with java_errors(f"opening index {index_dir}"):
            self._s = autoclass(self._java_class)(str(index_dir))
        self.index_dir = str(index_dir)

    @property
    def num_docs(self) -> int:
        return int(self._s.get_total_num_docs())

    def close(self) -> None:
        self._s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Bm25Searcher(_Searcher):
    """BM25 over a ``bm25-flat`` index (Anserini ``SimpleSearcher``, English analyzer)."""

    _java_class = "io.anserini.search.SimpleSearcher"

    def __init__(self, index_dir: str, k1: float = 0.9, b: float = 0.4) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ConfigError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        super().__init__(index_dir)
        self.k1, self.b = k1, b
        self._s.set_bm25(float(k1), float(b))

    def search(self, text: str, k: int = 1000) -> list[tuple[str, float]]:
        with java_errors("BM25 search"):
            return [(h.docid, float(h.score)) for h in self._s.search(text, int(k))]

    def batch_search(self, queries: Sequence[Query], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Search every query (in batches of :data:`BATCH`, ``threads`` Java threads)."""
        run: Run = {}
        counts = SearchCounts()
        for start in range(0, len(queries), BATCH):
            chunk = queries[start:start + BATCH]
            qids = [q.id for q in chunk]
            with java_errors("BM25 batch search"):
                result = self._s.batch_search(_java_list(q.text for q in chunk), _java_list(qids), int(k),
                                              int(threads))
            _collect(result, qids, run, counts, remove_query, k)
        return run, counts


class ImpactSearcher(_Searcher):
    """Integer-weighted queries over an ``impact`` index (Anserini ``SimpleImpactSearcher``).

    The score of a document is the dot product of the query's integer weights with the document's (the impacts).
    Lucene refuses a query with more than ``max_clauses`` terms; ``max_clauses`` above 1024 raises Lucene's global
    limit (an untrained head can give ~30k terms per query).
    """

    _java_class = "io.anserini.search.SimpleImpactSearcher"

    def __init__(self, index_dir: str, max_clauses: int = LUCENE_MAX_CLAUSES) -> None:
        super().__init__(index_dir)
        if max_clauses < 1:
            raise ConfigError(f"max_clauses must be >= 1, got {max_clauses}")
        self.max_clauses = max_clauses
        index_searcher = autoclass("org.apache.lucene.search.IndexSearcher")
        if max_clauses > index_searcher.getMaxClauseCount():
            index_searcher.setMaxClauseCount(int(max_clauses))

    def _weights_map(self, qid: str, weights: Mapping[str, int]):
        if len(weights) > self.max_clauses:
            raise InputError(f"query {qid} has {len(weights)} terms, more than the {self.max_clauses} Lucene allows "
                             "(sparsify queries with a top-k, or raise max_clauses)")
        integer = autoclass("java.lang.Integer")
        m = autoclass("java.util.HashMap")()
        for term, w in weights.items():
            if w <= 0:
                continue
            m.put(term, integer(int(w)))
        return m

    def search(self, weights: Mapping[str, int], k: int = 1000, qid: str = "query") -> list[tuple[str, float]]:
        m = self._weights_map(qid, weights)
        with java_errors(f"impact search for query {qid}"):
            return [(h.docid, float(h.score)) for h in self._s.search(m, int(k))]

    def batch_search(self, queries: Mapping[str, Mapping[str, int]], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        run: Run = {}
        counts = SearchCounts()
        items = list(queries.items())
        for start in range(0, len(items), BATCH):
            chunk = items[start:start + BATCH]
            qids = [qid for qid, _ in chunk]
            maps = _java_list(self._weights_map(qid, w) for qid, w in chunk)
            with java_errors("impact batch search"):
                result = self._s.batch_search(maps, _java_list(qids), int(k), int(threads))
            _collect(result, qids, run, counts, remove_query, k)
        return run, counts
