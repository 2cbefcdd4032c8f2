"""In-process Anserini search: BM25 over a flat or multifield index, integer-weighted queries over an impact index.

Ranking and scores are Anserini's: ties by docid, then its ``ScoreTiesAdjusterReranker``; hits come back in bulk
(docids and scores only, no per-hit JNI call).

Design notes: docs/design.md."""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from lsr_eval.anserini.collections import CONTENTS, MULTIFIELD, check_fields, lucene_fields
from lsr_eval.anserini.hits import parse_hits, read_docid_table, top_docs_string
from lsr_eval.anserini.jvm import autoclass, cast, java_errors
from lsr_eval.data.chunks import chunks
from lsr_eval.data.types import Query, Run
from lsr_eval.defaults import LUCENE_MAX_CLAUSES
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.search.counts import SearchCounts
from lsr_eval.search.params import MAX_CLAUSES, check_bm25, check_k, check_threads
from lsr_eval.search.ties import adjust_ties
from lsr_eval.settings import check

log = logging.getLogger(__name__)

#: Queries per chunk of a batch search (bounds what is in flight, whatever the number of queries).
CHUNK = 256

__all__ = ["Bm25Searcher", "ImpactSearcher", "SearchCounts", "CHUNK"]


_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool per thread count: its threads attach to the JVM once and live as long as the process
    (a pool per batch would attach new threads each time and never detach them)."""
    with _pools_lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"lsr-search{threads}")
        return _pools[threads]


class _Searcher:
    """An Anserini ``Simple*Searcher`` (the reference configuration) and our own ``IndexSearcher`` on the same
    index, with the same similarity."""

    _java_class = ""
    engine = "anserini"

    def __init__(self, index_dir: str | os.PathLike) -> None:
        index_dir = str(index_dir)
        with java_errors(f"opening index {index_dir}"):
            self._s = autoclass(self._java_class)(index_dir)
            directory = autoclass("org.apache.lucene.store.FSDirectory").open(
                autoclass("java.io.File")(index_dir).toPath())
            self._reader = autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
            self._searcher = autoclass("org.apache.lucene.search.IndexSearcher")(
                cast("org.apache.lucene.index.IndexReader", self._reader))
            self._generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
            self._sort = autoclass("io.anserini.search.SearchCollection").BREAK_SCORE_TIES_BY_DOCID
        self.index_dir = index_dir
        self._docids = read_docid_table(self._reader)

    def _configure(self) -> None:
        """Take the analyzer and similarity from the Anserini searcher (after its settings are applied)."""
        self._analyzer = self._s.get_analyzer()
        self._searcher.setSimilarity(self._s.get_similarity())

    @property
    def num_docs(self) -> int:
        return int(self._s.get_total_num_docs())

    def _top(self, query, k: int) -> list[tuple[str, float]]:
        """Top ``k`` of a Java ``Query``: (docid, score) best first, ties by docid."""
        td = self._searcher.search(query, k + 1)
        docs, scores = parse_hits(top_docs_string(td))
        if len(docs) > k and scores[k] == scores[k - 1]:  # a tie straddles the cut: Anserini's sort decides
            docs, scores = parse_hits(top_docs_string(self._searcher.search(query, k, self._sort, True)))
        docs, scores = docs[:k], scores[:k]
        ids = self._docids[docs]
        if len(scores) > 1 and bool(np.any(scores[1:] == scores[:-1])):
            order = np.lexsort((ids.astype(str), -scores))
            ids, scores = ids[order], scores[order]
        return list(zip(ids.tolist(), adjust_ties(scores).astype(np.float64).tolist()))

    def _search_one(self, query_input: Any, k: int, what: str) -> list[tuple[str, float]]:
        with java_errors(what):
            return self._top(self._build(query_input), k)

    def _build(self, text: str):
        """The Java query of a text, as Anserini builds it (its analyzer's tokens, counted into term weights)."""
        return self._generator.buildQuery(CONTENTS, self._analyzer, text)

    def _batch(self, items: Iterable[tuple[str, Any]], k: int, threads: int, remove_query: bool, what: str
               ) -> tuple[Run, SearchCounts]:
        check_k(k)
        check_threads(threads)
        run: Run = {}
        counts = SearchCounts()
        pool = _pool(threads)
        for chunk in chunks(items, CHUNK):
            hits = pool.map(lambda item: self._search_one(item[1], k, f"{what} for query {item[0]}"), chunk)
            for (qid, _), ranked in zip(chunk, hits):
                counts.add(qid, ranked, remove_query, run)
        return run, counts

    def describe(self) -> dict[str, Any]:
        return {"engine": self.engine, "index": self.index_dir, "similarity": self._s.get_similarity().toString(),
                "hits_path": "Lucene IndexSearcher, bulk docids+scores (lsr_eval.anserini.hits)",
                "tie_break": "score desc, docid asc"}

    def close(self) -> None:
        self._reader.close()
        self._s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Bm25Searcher(_Searcher):
    """BM25 over a ``bm25-flat`` index (Anserini ``SimpleSearcher``, English analyzer), or with ``fields`` over the
    named document fields of a ``bm25-multifield`` index, each weighted 1.0: the query's terms are searched in each
    field (its own BM25 statistics) and the field scores summed, as Anserini's ``SearchCollection -fields
    contents=1.0 title=1.0`` (``BagOfWordsQueryGenerator.buildQuery(Map, Analyzer, String)``)."""

    _java_class = "io.anserini.search.SimpleSearcher"

    def __init__(self, index_dir: str | os.PathLike, k1: float = 0.9, b: float = 0.4,
                 fields: Sequence[str] | None = None) -> None:
        check_bm25(k1, b)
        self.fields = check_fields(fields)
        #: Lucene field: weight, of a multifield search (Pyserini's BEIR multifield weighs each field 1.0).
        self.field_weights = {f: 1.0 for f in lucene_fields(self.fields)} if self.fields else {}
        super().__init__(index_dir)
        self.k1, self.b = k1, b
        try:
            self._check_index_fields()
        except ConfigError:
            self.close()
            raise
        self._s.set_bm25(float(k1), float(b))
        self._configure()
        self._weights = autoclass("java.util.HashMap")()
        for f, w in self.field_weights.items():
            self._weights.put(f, autoclass("java.lang.Float")(w))

    def _check_index_fields(self) -> None:
        """A multifield search needs the index's fields; a flat search on a multifield index would silently search
        the text alone."""
        with java_errors(f"reading the fields of {self.index_dir}"):
            infos = autoclass("org.apache.lucene.index.FieldInfos").getMergedFieldInfos(self._reader)
            present = {f for f in set(MULTIFIELD.values()) if infos.fieldInfo(f) is not None}
        extra = sorted(present - {CONTENTS})
        if self.fields is None and extra:
            raise ConfigError(f"{self.index_dir} is a bm25-multifield index (fields {', '.join(extra)} beside "
                              f"{CONTENTS}): name the fields to search ({', '.join(MULTIFIELD)})")
        if self.fields and not extra:
            raise ConfigError(f"{self.index_dir} has no {', '.join(sorted(set(MULTIFIELD.values()) - present))} "
                              f"field: a bm25-multifield index is needed to search fields {', '.join(self.fields)}")

    def _build(self, text: str):
        if not self.fields:
            return super()._build(text)
        return self._generator.buildQuery(self._weights, self._analyzer, text)

    def search(self, text: str, k: int = 1000) -> list[tuple[str, float]]:
        return self._search_one(text, check_k(k), "BM25 search")

    def batch_search(self, queries: Sequence[Query], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Every query's top ``k`` (chunks of :data:`CHUNK`, ``threads`` threads)."""
        return self._batch(((q.id, q.text) for q in queries), k, threads, remove_query, "BM25 search")

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if self.fields:
            out["fields"] = self.field_weights
        return out


def check_max_clauses(max_clauses: Any) -> int:
    """``max_clauses`` when it is an integer >= 1 (the terms a query may have), else the settings' error."""
    return check("max_clauses", max_clauses, int, MAX_CLAUSES)


class ImpactSearcher(_Searcher):
    """Integer-weighted queries over an ``impact`` index (Anserini ``SimpleImpactSearcher``'s configuration).

    The score of a document is the dot product of the query's integer weights with the document's (the impacts).
    A query goes to Java as one pre-tokenised string, each term repeated by its weight (Anserini's own impact
    topics): its analyzer and ``BagOfWordsQueryGenerator`` turn the counts back into ``term^weight`` clauses.
    Lucene refuses a query with more than ``max_clauses`` terms; ``max_clauses`` above 1024 raises Lucene's global
    limit (an untrained head can give ~30k terms per query).
    """

    _java_class = "io.anserini.search.SimpleImpactSearcher"

    def __init__(self, index_dir: str | os.PathLike, max_clauses: int = LUCENE_MAX_CLAUSES) -> None:
        self.max_clauses = check_max_clauses(max_clauses)
        super().__init__(index_dir)
        index_searcher = autoclass("org.apache.lucene.search.IndexSearcher")
        if max_clauses > index_searcher.getMaxClauseCount():
            index_searcher.setMaxClauseCount(int(max_clauses))
        self._configure()

    def _text(self, qid: str, weights: Mapping[str, int]) -> str:
        if len(weights) > self.max_clauses:
            raise InputError(f"query {qid} has {len(weights)} terms, more than the {self.max_clauses} Lucene allows "
                             "(sparsify queries with a top-k, or raise max_clauses)")
        parts = []
        for term, w in weights.items():
            if w > 0:
                if not term or any(c.isspace() for c in term):
                    raise InputError(f"query {qid}: term {term!r} is empty or holds whitespace (not a token)")
                parts.append((term + " ") * int(w))
        return "".join(parts)

    def search(self, weights: Mapping[str, int], k: int = 1000, qid: str = "query") -> list[tuple[str, float]]:
        text = self._text(qid, weights)
        return self._search_one(text, check_k(k), f"impact search for query {qid}")

    def search_per_hit(self, weights: Mapping[str, int], k: int = 1000, qid: str = "query"
                       ) -> list[tuple[str, float]]:
        """The same hits through Anserini's own ``SimpleImpactSearcher.search(Map, k)``, read one JNI call per hit
        field (each hit's stored document loaded): lsr-eval's path before bulk hits, kept as the benchmarks'
        reference."""
        self._text(qid, weights)  # same validation
        integer = autoclass("java.lang.Integer")
        m = autoclass("java.util.HashMap")()
        for term, w in weights.items():
            if w > 0:
                m.put(term, integer(int(w)))
        with java_errors(f"impact search for query {qid}"):
            return [(h.docid, float(h.score)) for h in self._s.search(m, int(check_k(k)))]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "max_clauses": self.max_clauses}

    def batch_search(self, queries: Mapping[str, Mapping[str, int]], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Every query's top ``k``; a query without a positive weight is counted without hits."""
        items = ((qid, self._text(qid, w)) for qid, w in queries.items())
        return self._batch(items, k, threads, remove_query, "impact search")

    def _search_one(self, query_input: Any, k: int, what: str) -> list[tuple[str, float]]:
        return super()._search_one(query_input, k, what) if query_input else []
