"""BMP, block-max pruning (Mallia, Suel, Tonellotto, SIGIR 2024), behind the engine seam.

BMP cuts the document ids into blocks of ``bsize`` and keeps, per term, the largest impact in each block. A query
sums its terms' block maxima into an upper bound per block, scores the blocks best bound first from a blocked
forward index, and stops when the k-th best score exceeds ``alpha`` times the next bound; ``beta`` keeps only that
fraction of the query's terms (largest weights first). ``alpha = beta = 1`` is BMP's safe setting.

Design notes: docs/design.md."""

from __future__ import annotations

import json
import os
import time
from array import array
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from lsr_eval.data.types import Run
from lsr_eval.engines.base import (
    BuildCounts,
    ClosingSearcher,
    QueryWeights,
    check_index_engine,
    query_weight,
    rust_panics,
    write_marker,
)
from lsr_eval.engines.registry import ENGINES, require
from lsr_eval.errors import InputError
from lsr_eval.export.collection import iter_collection
from lsr_eval.manifest import installed_version
from lsr_eval.search.counts import SearchCounts
from lsr_eval.search.params import check_k
from lsr_eval.search.ties import adjusted_hits
from lsr_eval.settings import Setting, check_option

NAME = "bmp"
PACKAGE = "bmp"
INDEX_FILE = "index.bmp"
TERMS_FILE = "terms.json"
DOCIDS_FILE = "docids.txt"
#: the forward store of exact impacts: document offsets (int64), term ids (uint32), impacts (uint32)
FWD_OFFSETS, FWD_TERMS, FWD_IMPACTS = "fwd.offsets", "fwd.terms", "fwd.impacts"
#: the package's limits: 8-bit impacts, query weights up to 32, 16-bit scores and term ids, block offsets in a byte
MAX_IMPACT = 255
MAX_QUERY_WEIGHT = 32
MAX_SCORE = 65535
MAX_TERMS = 1 << 16
MAX_BLOCK = 256
#: hits asked for at the safe setting at least: above 1000, BMP starts from threshold 0
SAFE_FETCH = 1001
#: documents written to the forward store at a time
FLUSH = 10_000
DEFAULTS = {"bsize": 32, "compress_range": False}
TIES = "score desc, docid asc (cut included); scores as Anserini's ScoreTiesAdjusterReranker"


def _bmp() -> Any:
    """The ``bmp`` module, or a one-line error naming the pip package."""
    return require("bmp", NAME)


def package_version() -> str:
    return installed_version(PACKAGE) or "unknown"


#: BMP's build settings and search knobs, each declared once: (type, constraint and help).
OPTIONS: dict[str, tuple[type, Setting]] = {
    "bsize": (int, Setting(help="documents per block", ge=1, le=MAX_BLOCK)),
    "compress_range": (bool, Setting(help="the package's compressed block maxima")),
    "threads": (int, Setting(help="BMP's thread pool (RAYON_NUM_THREADS)", ge=1, le=1 << 16)),
    "alpha": (float, Setting(help="block pruning: stop when the k-th score beats alpha x the next bound (1: safe)",
                             gt=0, le=1)),
    "beta": (float, Setting(help="query-term pruning: the fraction of a query's terms kept (1: safe)", gt=0, le=1)),
}


def check_search_knobs(alpha: Any = 1.0, beta: Any = 1.0) -> dict[str, float]:
    """``alpha`` (block pruning) and ``beta`` (query-term pruning), each in (0, 1]; both 1 is the safe setting."""
    return {name: check_option(OPTIONS, name, value, NAME) for name, value in (("alpha", alpha), ("beta", beta))}


def _panics(what: str):
    """A panic inside BMP as one :class:`InputError` (:func:`~lsr_eval.engines.base.rust_panics`)."""
    return rust_panics("BMP", what, InputError)


def _fresh_name(base: str, vocabulary: Mapping[str, int]) -> str:
    """``base``, suffixed until it is no term of ``vocabulary``."""
    name, n = base, 0
    while name in vocabulary:
        n += 1
        name = f"{base}{n}"
    return name


def _survey(collection: Path) -> dict[str, Any]:
    """First pass: documents, postings, the vocabulary (term -> id, first-seen order), each term's largest impact."""
    vocabulary: dict[str, int] = {}
    term_max: list[int] = []
    documents = empty = postings = 0
    for docid, vector in iter_collection(collection, ENGINES[NAME].weights):
        documents += 1
        postings += len(vector)
        empty += not vector
        for term, w in vector.items():
            tid = vocabulary.get(term)
            if tid is None:
                tid = vocabulary[term] = len(term_max)
                term_max.append(0)
                if len(vocabulary) > MAX_TERMS - 2:  # two names are kept for the sentinel and the scale term
                    raise InputError(f"{collection}: document {docid}: more than {MAX_TERMS - 2} distinct terms, "
                                     "the most BMP holds (16-bit term ids)")
            if w > term_max[tid]:
                term_max[tid] = w
    if documents == 0:
        raise InputError(f"{collection} holds no documents")
    return {"documents": documents, "empty": empty, "postings": postings, "vocabulary": vocabulary,
            "term_max": term_max}


class BmpEngine:
    """Builds BMP indexes of integer impacts and opens :class:`BmpSearcher` over them.

    Build options: ``bsize`` (documents per block, 1..256: smaller blocks bound tighter, cost more bounds) and
    ``compress_range`` (the package's compressed block maxima). Search knobs: ``alpha`` and ``beta`` in (0, 1]."""

    name = NAME
    build_options = tuple(DEFAULTS)
    search_options = ("alpha", "beta")

    def __init__(self, bsize: int = DEFAULTS["bsize"], compress_range: bool = DEFAULTS["compress_range"]) -> None:
        self.settings = {name: check_option(OPTIONS, name, value, NAME)
                         for name, value in (("bsize", bsize), ("compress_range", compress_range))}
        _bmp()  # fail now, naming the pip package, rather than after encoding a corpus

    def describe(self) -> dict[str, Any]:
        return {"engine": NAME, "package": PACKAGE, "version": package_version(), "settings": dict(self.settings)}

    def build(self, collection: Path, index: Path, threads: int = 2) -> BuildCounts:
        """Index every document of ``collection`` (empty vectors too) into the new folder ``index``.

        ``threads`` sizes BMP's thread pool (``RAYON_NUM_THREADS``, read once per process by the package) unless
        the environment already sets it."""
        check_option(OPTIONS, "threads", threads, NAME)
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
        bmp = _bmp()
        collection, index = Path(collection), Path(index)
        start = time.perf_counter()
        survey = _survey(collection)
        vocabulary, term_max = survey["vocabulary"], survey["term_max"]
        top = max(term_max, default=0)
        num, den = (MAX_IMPACT, top) if top > MAX_IMPACT else (1, 1)  # impacts as stored: ceil(w * num / den)
        sentinel = _fresh_name("\x00bmp-sentinel", vocabulary)
        scale_term = _fresh_name("\x00bmp-scale", vocabulary | {sentinel: -1})
        index.mkdir(parents=True, exist_ok=True)
        read = self._write(collection, index, bmp, vocabulary, num, den, sentinel)
        if read != survey["documents"]:
            raise InputError(f"{collection} changed while it was indexed ({survey['documents']} documents, "
                             f"then {read})")
        with open(index / INDEX_FILE, "rb") as f:  # bincode: the index's document count comes first (u64)
            stored = int.from_bytes(f.read(8), "little")
        extra = -(-read // self.settings["bsize"]) * self.settings["bsize"] + 1 - read  # padding, sentinel
        indexed = stored - extra
        if indexed != read:
            raise InputError(f"BMP indexed {indexed} documents of the {read} read from {collection} "
                             f"({stored} with the {extra} padding and sentinel documents)")
        quantized = [-(-w * num // den) for w in term_max]
        terms = {"terms": list(vocabulary), "max": quantized}
        (index / TERMS_FILE).write_text(json.dumps(terms, ensure_ascii=False) + "\n", encoding="utf-8")
        write_marker(index, NAME, package=PACKAGE, version=package_version(), documents=read,
                     terms=len(vocabulary), impact_scale=[num, den], sentinel=sentinel, scale_term=scale_term,
                     **self.settings)
        details = {"terms": len(vocabulary), "postings": survey["postings"], "documents_without_terms": survey["empty"],
                   "impact_scale": f"{num}/{den}", "threads": int(os.environ["RAYON_NUM_THREADS"]), **self.settings}
        return BuildCounts(NAME, read, indexed, time.perf_counter() - start, details)

    def _write(self, collection: Path, index: Path, bmp: Any, vocabulary: dict[str, int], num: int, den: int,
               sentinel: str) -> int:
        """Second pass: each document into BMP (named by its row, impacts quantized) and into the forward store
        (exact impacts); then the padding and the sentinel block. Returns the documents read."""
        bsize = self.settings["bsize"]
        indexer = bmp.Indexer(str(index / INDEX_FILE), bsize, self.settings["compress_range"])
        offsets, tids, impacts = array("q", [0]), array("I"), array("I")
        read = 0
        with open(index / DOCIDS_FILE, "w", encoding="utf-8") as f_ids, open(index / FWD_OFFSETS, "wb") as f_off, \
                open(index / FWD_TERMS, "wb") as f_t, open(index / FWD_IMPACTS, "wb") as f_w:
            for docid, vector in iter_collection(collection, ENGINES[NAME].weights):
                f_ids.write(docid + "\n")
                with _panics(f"indexing document {docid} of {collection}"):
                    indexer.add_document(str(read), vector if num == den else
                                         {t: -(-w * num // den) for t, w in vector.items()})
                tids.extend(vocabulary[t] for t in vector)
                impacts.extend(vector.values())
                offsets.append(offsets[-1] + len(vector))
                read += 1
                if read % FLUSH == 0:
                    offsets[:-1].tofile(f_off)
                    tids.tofile(f_t)
                    impacts.tofile(f_w)
                    offsets, tids, impacts = array("q", [offsets[-1]]), array("I"), array("I")
            offsets.tofile(f_off)
            tids.tofile(f_t)
            impacts.tofile(f_w)
        for row in range(read, -(-read // bsize) * bsize):  # the last real block filled up with empty documents
            indexer.add_document(str(row), {})
        indexer.add_document("sentinel", {sentinel: 1})  # a block of its own, visited last, never scored
        with _panics(f"writing {index / INDEX_FILE}"):
            indexer.finish()
        return read

    def check_search(self, alpha: float = 1.0, beta: float = 1.0) -> dict[str, Any]:
        return check_search_knobs(alpha, beta)

    def open(self, index: Path, alpha: float = 1.0, beta: float = 1.0) -> BmpSearcher:
        """A searcher over an index this engine built, with the knobs of :class:`BmpSearcher`."""
        return BmpSearcher(index, alpha=alpha, beta=beta)


class BmpSearcher(ClosingSearcher):
    """An open BMP index (loaded whole into memory) with its forward store of exact impacts (memory-mapped).

    Query terms the index does not know and weights <= 0 are ignored, as Anserini does; a query left with no term
    gets no hits. Search runs on one thread (the package's ``Searcher`` holds the GIL)."""

    engine = NAME

    def __init__(self, index: Path, alpha: float = 1.0, beta: float = 1.0) -> None:
        self.knobs = check_search_knobs(alpha, beta)
        self.safe = self.knobs["alpha"] == 1.0 and self.knobs["beta"] == 1.0
        index = Path(index)
        marker = check_index_engine(index, NAME)
        bmp = _bmp()
        missing = [n for n in (INDEX_FILE, TERMS_FILE, DOCIDS_FILE, FWD_OFFSETS, FWD_TERMS, FWD_IMPACTS)
                   if not (index / n).is_file()]
        if missing:
            raise InputError(f"BMP index {index} lacks {', '.join(missing)}; rebuild it with "
                             f"`lsr-eval index --engine {NAME}`")
        self.index, self._marker = index, marker
        terms = json.loads((index / TERMS_FILE).read_text(encoding="utf-8"))
        self._names: list[str] = terms["terms"]
        self._tid = {t: i for i, t in enumerate(self._names)}
        self._max = terms["max"]
        self._docids = (index / DOCIDS_FILE).read_text(encoding="utf-8").split("\n")[:-1]
        self._offsets = np.fromfile(index / FWD_OFFSETS, dtype=np.int64)
        if len(self._docids) != marker["documents"] or len(self._offsets) != marker["documents"] + 1:
            raise InputError(f"BMP index {index} is incomplete ({len(self._docids)} document ids, "
                             f"{len(self._offsets) - 1} forward rows, {marker['documents']} documents); rebuild it")
        # memory-mapped (viewed as plain arrays: a memmap slice costs a Python object each)
        self._terms = np.memmap(index / FWD_TERMS, dtype=np.uint32, mode="r").view(np.ndarray)
        self._impacts = np.memmap(index / FWD_IMPACTS, dtype=np.uint32, mode="r").view(np.ndarray)
        #: each document's position in docid order, the tie-break
        self._rank = np.empty(len(self._docids), dtype=np.int64)
        self._rank[sorted(range(len(self._docids)), key=self._docids.__getitem__)] = np.arange(len(self._docids))
        self._num, self._den = marker["impact_scale"]
        self._sentinel, self._scale_term = marker["sentinel"], marker["scale_term"]
        with _panics(f"loading {index / INDEX_FILE}"):
            self._searcher = bmp.Searcher(str(index / INDEX_FILE))
        self.k: int | None = None

    def _query(self, qid: str, weights: QueryWeights) -> tuple[dict[str, float], dict[int, int], Fraction] | None:
        """BMP's query (integer weights <= 32, the sentinel, the scale term), the exact query (term id -> weight)
        and the factor ``c`` of ``q' = ceil(q * c)``; None without a known term."""
        exact: dict[int, int] = {}
        for term, w in weights.items():
            query_weight(qid, term, w)
            tid = self._tid.get(term)
            if w >= 1 and tid is not None:  # integer weights, as every engine takes them
                exact[tid] = int(w)
        if not exact:
            return None
        bound = sum(self._max[t] for t in exact) + 1  # each rounding up adds at most one weight per term
        if bound >= MAX_SCORE:
            raise InputError(f"query {qid} has {len(exact)} terms: too many for BMP's 16-bit scores "
                             "(prune queries to fewer terms)")
        c = min(Fraction(1), Fraction(MAX_QUERY_WEIGHT, max(exact.values())),
                Fraction(MAX_SCORE - bound, sum(w * self._max[t] for t, w in exact.items())))
        query = {self._names[t]: float(-(-w * c.numerator // c.denominator)) for t, w in exact.items()}
        query[self._sentinel] = 1.0
        query[self._scale_term] = float(MAX_QUERY_WEIGHT)  # BMP rescales by 32 / the largest weight: here 1
        return query, exact, c

    def _exact(self, rows: Any, exact: dict[int, int]) -> Any:
        """The exact integer dot products of documents ``rows`` with the query ``exact`` (int64)."""
        starts = self._offsets[rows]
        lengths = self._offsets[rows + 1] - starts
        total = int(lengths.sum())
        sums = np.zeros(len(rows), dtype=np.int64)
        if not total:
            return sums
        ends = np.cumsum(lengths)
        idx = np.arange(total) + np.repeat(starts - (ends - lengths), lengths)  # each row's span, one after another
        qvec = np.zeros(len(self._names), dtype=np.int64)
        qvec[list(exact)] = list(exact.values())
        products = qvec[self._terms[idx]] * self._impacts[idx]
        filled = lengths > 0
        sums[filled] = np.add.reduceat(products, (ends - lengths)[filled])
        return sums

    def _candidates(self, qid: str, query: dict[str, float], fetch: int) -> tuple[Any, int, int]:
        """BMP's top ``fetch`` as forward-store rows, how many it returned and its smallest (quantized) score."""
        if self._searcher is None:
            raise InputError(f"the BMP searcher over {self.index} is closed")
        alpha, beta = self.knobs["alpha"], self.knobs["beta"]
        try:
            names, scores = self._searcher.search(query, fetch, alpha, beta)
        except BaseException as e:
            if type(e).__name__ != "PanicException":
                raise
            if fetch >= SAFE_FETCH:
                raise InputError(f"BMP failed while searching query {qid}: {e}") from e
            # no block above BMP's starting threshold (a term whose largest impacts tie): start from 0 instead
            with _panics(f"searching query {qid}"):
                names, scores = self._searcher.search(query, SAFE_FETCH, alpha, beta)
            names, scores = names[:fetch], scores[:fetch]
        rows = np.array([int(n) for n in names if n != "sentinel"], dtype=np.int64)
        return rows[rows < len(self._docids)], len(names), int(min(scores, default=0))

    def _top(self, qid: str, weights: QueryWeights, k: int) -> list[tuple[str, float]]:
        """One query's top ``k``: certified exact at the safe setting, BMP's candidates otherwise (docs/design.md)."""
        self.k = k
        prepared = self._query(qid, weights)
        if prepared is None:
            return []
        query, exact, c = prepared
        fetch = max(k, SAFE_FETCH) if self.safe else k
        while True:
            rows, returned, last = self._candidates(qid, query, fetch)
            sums = self._exact(rows, exact)
            keep = sums > 0
            rows, sums = rows[keep], sums[keep]
            order = np.lexsort((self._rank[rows], -sums))[:k]  # score desc, then docid (code-point order)
            ranked = list(zip((-sums[order]).tolist(), (self._docids[r] for r in rows[order].tolist())))
            if not self.safe or returned < fetch:  # not full: every document with a quantized score came back
                break
            # a document BMP did not return scores at most ``last`` quantized, so at most last / (c * num / den)
            # exactly: below the k-th exact score, the top k (its ties included) is certain
            if len(ranked) == k and last * self._den < -ranked[-1][0] * c * self._num:
                break
            fetch *= 2
        if not self.safe:  # another list than the exact one: its dot products as they are (as Seismic's)
            return [(d, float(-s)) for s, d in ranked]
        return adjusted_hits([d for _, d in ranked], [float(-s) for s, _ in ranked])

    def search(self, weights: QueryWeights, k: int = 1000, qid: str = "query") -> list[tuple[str, float]]:
        """One query's top ``k`` hits, best first, ties by docid, Anserini's scores at the safe setting."""
        return self._top(str(qid), weights, check_k(k))

    def batch_search(self, queries: Mapping[str, QueryWeights], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Every query's top ``k`` into a run, one query at a time (``threads`` is checked, not used: the package's
        search holds the GIL)."""
        k = check_k(k)
        check_option(OPTIONS, "threads", threads, NAME)
        run: Run = {}
        counts = SearchCounts()
        for qid, weights in queries.items():
            counts.add(str(qid), self._top(str(qid), weights, k), remove_query, run)
        return run, counts

    def describe(self) -> dict[str, Any]:
        return {"engine": NAME, "package": PACKAGE, "version": package_version(), "index": str(self.index),
                "search": dict(self.knobs), "safe": self.safe, "k": self.k,
                "build": {key: self._marker.get(key) for key in (*DEFAULTS, "impact_scale")},
                "ties": TIES if self.safe else "score desc, docid asc; exact dot products of BMP's candidates"}

    def close(self) -> None:
        self._searcher = None
