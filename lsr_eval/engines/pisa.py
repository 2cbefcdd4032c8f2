"""PISA behind the engine seam: a quantized (dot-product) index over lsr-eval's integer impacts, searched with the
exact top k under Anserini's tie contract (score desc, docid asc, the cut included; Anserini's adjusted scores), so its
runs equal Anserini's bit for bit. Design notes: docs/design.md."""

from __future__ import annotations

import json
import string
import time
from array import array
from itertools import repeat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from lsr_eval.data.chunks import chunks
from lsr_eval.data.types import Run
from lsr_eval.engines.base import (
    BuildCounts,
    ClosingSearcher,
    QueryWeights,
    check_index_engine,
    write_marker,
)
from lsr_eval.engines.registry import ENGINES, require
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export.collection import iter_collection
from lsr_eval.search.counts import SearchCounts
from lsr_eval.search.params import BM25_B, BM25_K1, check_k, check_threads
from lsr_eval.search.ties import complete_top_k
from lsr_eval.settings import Setting, check_option

NAME = "pisa"
PACKAGE = "pyterrier-pisa"
#: Queries per ``retrieve`` call in a batch search, and the most result rows (queries x hits) one call may hold.
CHUNK = 1000
MAX_ROWS = 2_000_000
#: Conjunctive algorithms: a document must hold every query term, so they do not compute the exact top k.
CONJUNCTIVE = ("ranked_and", "block_max_ranked_and")
#: Upper-case ASCII letters and the escape character itself, escaped (docs/design.md, engines.pisa).
ESCAPES = str.maketrans({"^": "^^", **{c: "^" + c.lower() for c in string.ascii_uppercase}})
DEFAULTS = {"index_encoding": "block_simdbp", "query_algorithm": "maxscore", "batch_size": 100_000}
#: Settings with a default that earlier indexes were built with implicitly (recorded only when given, so that an
#: index key and marker made before they existed stay the same): the block size of the block-max (WAND) data,
#: PISA's fixed blocks (``FixedBlock``; pyterrier-pisa's default 64, naver's efficiency paper 40), and the scorer:
#: ``quantized`` (the integer impacts as they are: learned sparse vectors) or ``bm25`` (the collection holds term
#: frequencies; PISA scores them with ``bm25_k1``/``bm25_b``).
OPTIONAL = {"block_size": 64, "scorer": "quantized", "bm25_k1": 0.9, "bm25_b": 0.4}
SCORERS = ("quantized", "bm25")
BUILD_KEYS = (*DEFAULTS, *OPTIONAL)
SEARCH_KEYS = ("query_algorithm", "index_encoding", "block_size")
Hits = list[tuple[str, float]]
#: The tie contract, for the manifest.
TIES = "score desc, docid asc (cut included); scores as Anserini's ScoreTiesAdjusterReranker"


def _pisa() -> Any:
    """pyterrier_pisa, imported on first use (it imports pyterrier and pandas: about a second; no JVM)."""
    return require("pyterrier_pisa", NAME)


#: PISA's declared options: (type, constraint and help); k1 and b are lsr_eval.search.params', shared with
#: Anserini's BM25.
OPTIONS: dict[str, tuple[type, Setting]] = {
    "batch_size": (int, Setting(help="documents inverted per batch", ge=1)),
    "block_size": (int, Setting(help="postings per block of the block-max data", ge=1)),
    "scorer": (str, Setting(help="how postings are scored", choices=SCORERS)),
    "bm25_k1": (float, BM25_K1),
    "bm25_b": (float, BM25_B),
}


def _check_settings(settings: Mapping[str, Any], allowed_keys: tuple[str, ...]) -> dict[str, Any]:
    """``settings`` when every key is allowed and every value one of pyterrier_pisa's enums (named if not)."""
    unknown = sorted(set(settings) - set(allowed_keys))
    if unknown:
        raise ConfigError(f"unknown pisa setting(s) {', '.join(unknown)}; allowed: {', '.join(allowed_keys)}")
    pp = _pisa()
    allowed = {"index_encoding": [e.value for e in pp.PisaIndexEncoding],
               "query_algorithm": [a.value for a in pp.PisaQueryAlgorithm if a.value not in CONJUNCTIVE]}
    for name, values in allowed.items():
        value = settings.get(name, values[0])
        if value not in values:
            why = " (conjunctive: not the exact top k)" if value in CONJUNCTIVE else ""
            raise ConfigError(f"pisa {name} {value!r} is not allowed{why}; allowed values: {', '.join(values)}")
    for name in OPTIONS:   # the defaults are valid: the values given
        if name in settings:
            check_option(OPTIONS, name, settings[name], NAME)
    bm25 = [k for k in ("bm25_k1", "bm25_b") if k in settings]
    scorer = settings.get("scorer", OPTIONAL["scorer"])
    if bm25 and scorer != "bm25":
        raise ConfigError(f"pisa {', '.join(bm25)} only apply with scorer: bm25")
    return dict(settings)


def scoring(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The scorer, its parameters and the block size of the block-max data that ``settings`` (build settings or a
    marker; defaults where absent) ask for, as :func:`_prepare` takes them."""
    out = {k: settings.get(k, OPTIONAL[k]) for k in ("scorer", "block_size")}
    if out["scorer"] == "bm25":
        out.update({k: float(settings.get(k, OPTIONAL[k])) for k in ("bm25_k1", "bm25_b")})
    return out


def _prepare(index: Path, encoding: str, scorer: str = "quantized", block_size: int = 64, **bm25: float) -> Any:
    """A ``_pisathon`` retrieval context over ``index`` (compresses ``encoding`` and writes its block-max data,
    fixed blocks of ``block_size`` postings, ``<scorer>.q0.bmw.<block_size>``, if absent)."""
    missing = [f for f in ("inv.docs", "inv.freqs", "fwd.termlex", "fwd.doclex") if not (index / f).is_file()]
    if missing:  # PISA would abort the process
        raise InputError(f"{index} is not a complete PISA index (missing {', '.join(missing)}); rebuild it")
    pisathon = _pisa()._pisathon
    ctx = pisathon.RetrievalContext()
    pisathon.prepare_index(ctx, str(index), encoding, scorer, "", block_size=block_size, quantize=0, stop_fname="",
                           **bm25)
    return ctx


def block_max_file(index: Path, scorer: str = "quantized", block_size: int = 64, **bm25: float) -> Path:
    """The block-max data file of ``index`` for this scorer and block size, as pyterrier-pisa names it (the check
    that an index holds the block-max data a protocol states)."""
    if scorer == "bm25":
        name = f"bm25.k1-{bm25['bm25_k1']:g}.b-{bm25['bm25_b']:g}"
    else:
        name = scorer
    return Path(index) / f"{name}.q0.bmw.{block_size}"


class PisaEngine:
    """Builds PISA indexes of integer impacts and opens :class:`PisaSearcher` over them."""

    name = NAME
    #: option names for :func:`lsr_eval.engines.registry.split_options` (the constructor takes ``**settings``)
    build_options = BUILD_KEYS
    search_options = SEARCH_KEYS

    def __init__(self, **settings: Any) -> None:
        self.settings = DEFAULTS | _check_settings(settings, BUILD_KEYS)

    def describe(self) -> dict[str, Any]:
        return {"engine": NAME, "package": PACKAGE, "version": _pisa().__version__, "settings": dict(self.settings)}

    def build(self, collection: Path, index: Path, threads: int = 2) -> BuildCounts:
        """Index every document of ``collection`` (empty vectors too) into the new folder ``index``.

        ``threads`` is unused: inverting is Python, merging and compressing are single-threaded in _pisathon."""
        pp = _pisa()
        collection, index = Path(collection), Path(index)
        start = time.perf_counter()
        index.mkdir(parents=True, exist_ok=True)
        docs = iter_collection(collection, ENGINES[NAME].weights)
        read, terms = _invert(docs, index, self.settings["batch_size"], collection)
        (index / "pt_meta.json").write_text(json.dumps({"type": "sparse_index", "format": "pisa",
                                                        "package_hint": PACKAGE, "stemmer": "none"}))
        _prepare(index, self.settings["index_encoding"], **scoring(self.settings))
        indexed = int(pp._pisathon.num_docs(str(index)))
        if indexed != read:
            raise InputError(f"PISA indexed {indexed} documents of the {read} read from {collection}")
        seconds = time.perf_counter() - start
        write_marker(index, NAME, package=PACKAGE, version=pp.__version__, documents=indexed, terms=terms,
                     scale=1.0, stemmer="none", term_escapes="ASCII A-Z as ^a-^z, ^ as ^^", **self.settings)
        return BuildCounts(NAME, read, indexed, seconds, {"terms": terms, **self.settings})

    def check_search(self, **knobs: Any) -> dict[str, Any]:
        return _check_settings(knobs, SEARCH_KEYS)

    def open(self, index: Path, **knobs: Any) -> PisaSearcher:
        """A searcher over a PISA index (an unmarked pyterrier-pisa one too). Knobs: ``query_algorithm`` (default:
        this engine's), ``index_encoding`` and ``block_size`` (default: the ones built; others are written into the
        index). The scorer is the one the index was built for (its marker)."""
        index = Path(index)
        marker = check_index_engine(index, NAME, detected=NAME if (index / "pt_meta.json").is_file() else None)
        built = scoring(marker)
        knobs = {"query_algorithm": self.settings["query_algorithm"],
                 "index_encoding": marker.get("index_encoding", self.settings["index_encoding"])} | \
            _check_settings(knobs, SEARCH_KEYS)
        built["block_size"] = knobs.pop("block_size", built["block_size"])
        meta = json.loads((index / "pt_meta.json").read_text()) if (index / "pt_meta.json").is_file() else {}
        if meta.get("stemmer", "none") != "none":
            raise InputError(f"PISA index {index} was built with stemmer {meta['stemmer']!r}; lsr-eval searches "
                             "impact indexes of pretokenised terms (stemmer none)")
        return PisaSearcher(index, knobs["query_algorithm"], knobs["index_encoding"], "term_escapes" in marker,
                            built)


def _invert(docs: Iterable[tuple[str, dict[str, int]]], index: Path, batch_size: int, source: Path) -> tuple[int, int]:
    """Write PISA's binary collection (``inv.docs/.freqs/.sizes``, lists in sorted-term order) and its lexicons for
    ``docs``, holding one batch of postings in memory; returns (documents, terms).

    Not pyterrier-pisa 0.4.9's ``PisaToksIndexer``: its batch files hold a list per term known so far, but PISA's
    merge reads as many lists from every batch as there are terms in the end, so a term first seen after the first
    batch corrupts the index. Here earlier batches are padded with empty lists before the merge."""

    lexicon: dict[str, int] = {}
    lookup = lexicon.get
    known: list[int] = []  # terms known when each batch was written
    read, base = 0, f"{index}/inv"
    with open(index / "fwd.documents", "w", encoding="utf-8") as f_docs:
        for b, batch in enumerate(chunks(docs, batch_size)):
            tids, owners, weights = array("I"), array("I"), array("I")  # one batch's postings, in document order
            sizes = array("I", [len(batch)])
            for docid, vector in batch:  # ids and terms without line breaks (PISA's lexicons are line-based)
                f_docs.write(docid + "\n")
                vector = _escape(vector)
                ids = list(map(lookup, vector))
                if None in ids:
                    ids = [lexicon.setdefault(t, len(lexicon)) for t in vector]
                tids.extend(ids)
                owners.extend(repeat(read, len(ids)))
                try:
                    weights.extend(vector.values())
                    sizes.append(sum(vector.values()))
                except OverflowError as e:
                    raise InputError(f"{source}: document {docid!r} has an impact or a sum of impacts >= 2**32 "
                                     "(PISA stores 32-bit integers)") from e
                read += 1
            _write_batch(f"{base}.batch.{b}", tids, owners, weights, len(lexicon), sizes)
            known.append(len(lexicon))
    if not lexicon:  # PISA aborts the whole process on a collection without a term
        raise InputError(f"{source}: none of its {read} documents has a term with a weight > 0: nothing to index")
    for b, count in enumerate(known):
        for ext in ("docs", "freqs"):
            with open(f"{base}.batch.{b}.{ext}", "ab") as f:
                array("I", [0] * (len(lexicon) - count)).tofile(f)
    pisathon = _pisa()._pisathon
    pisathon.merge_inv(base, len(known), len(lexicon))
    for b in range(len(known)):
        for ext in ("docs", "freqs", "sizes"):
            Path(f"{base}.batch.{b}.{ext}").unlink()
    # PISA's term lexicon is sorted (term id = rank): rewrite the lists in that order
    for ext in ("docs", "freqs"):
        Path(f"{base}.{ext}").rename(f"{base}.{ext}.unsorted")
    in_docs = np.memmap(f"{base}.docs.unsorted", dtype=np.uint32, mode="r").view(np.ndarray)
    in_freqs = np.memmap(f"{base}.freqs.unsorted", dtype=np.uint32, mode="r").view(np.ndarray)
    starts, pos = [0] * len(lexicon), 2
    for tid in range(len(lexicon)):
        starts[tid], pos = pos, pos + int(in_docs[pos]) + 1
    with open(f"{base}.docs", "wb") as fd, open(f"{base}.freqs", "wb") as ff, \
            open(index / "fwd.terms", "w", encoding="utf-8") as ft:
        fd.write(in_docs[:2].tobytes())
        for term in sorted(lexicon):
            s = starts[lexicon[term]]
            e = s + int(in_docs[s]) + 1
            fd.write(in_docs[s:e].tobytes())
            ff.write(in_freqs[s - 2:e - 2].tobytes())
            ft.write(term + "\n")
    del in_docs, in_freqs
    for ext in ("docs", "freqs"):
        Path(f"{base}.{ext}.unsorted").unlink()
    pisathon.build_binlex(str(index / "fwd.documents"), str(index / "fwd.doclex"))
    pisathon.build_binlex(str(index / "fwd.terms"), str(index / "fwd.termlex"))
    return read, len(lexicon)


def _write_batch(name: str, tids: Any, owners: Any, weights: Any, terms: int, sizes: Any) -> None:
    """One batch of postings as PISA's inverter writes it: ``.docs`` (header, then a ``[length, docids...]`` list per
    term id), ``.freqs`` (the same lists of impacts), ``.sizes`` (document lengths)."""
    t = np.frombuffer(tids, dtype=np.uint32)
    order = np.argsort(t, kind="stable")  # by term, documents in order within a term
    counts = np.bincount(t, minlength=terms).astype(np.uint32)
    heads = np.cumsum(counts.astype(np.int64) + 1) - (counts + 1)  # where each list's length goes
    body = np.ones(terms + len(t), dtype=bool)
    body[heads] = False
    for ext, values, header in (("docs", owners, [1, len(sizes) - 1]), ("freqs", weights, [])):
        out = np.empty(terms + len(t), dtype=np.uint32)
        out[heads] = counts
        out[body] = np.frombuffer(values, dtype=np.uint32)[order]
        with open(f"{name}.{ext}", "wb") as f:
            f.write(np.array(header, dtype=np.uint32).tobytes())
            f.write(out.tobytes())
    with open(f"{name}.sizes", "wb") as f:
        f.write(sizes.tobytes())


class PisaSearcher(ClosingSearcher):
    """Integer-weighted queries over a PISA index, one at a time or a whole set on PISA's threads."""

    engine = NAME

    def __init__(self, index: Path, query_algorithm: str, index_encoding: str, escaped: bool = True,
                 built: Mapping[str, Any] | None = None) -> None:
        pp = _pisa()
        self._retrieve_fn, self.version = pp._pisathon.retrieve, pp.__version__
        self.index, self.query_algorithm, self.index_encoding = Path(index), query_algorithm, index_encoding
        self.k: int | None = None
        self._query = _query if escaped else _plain_query  # unmarked pyterrier-pisa indexes: terms as they are
        self.scoring = dict(built) if built else scoring({})  # the scorer and block size the index was built with
        self._ctx = _prepare(self.index, index_encoding, **self.scoring)

    def _context(self) -> Any:
        """The open retrieval context (one line if the searcher is closed)."""
        if self._ctx is None:
            raise InputError(f"the PISA searcher over {self.index} is closed")
        return self._ctx

    def _retrieve(self, queries: list[dict[str, float]], k: int, threads: int) -> list[tuple[Any, list[str]]]:
        """PISA's top ``k`` of each query as ``(float32 scores, docids)``, best first (ties in PISA's order), from
        one ``retrieve`` call into preallocated arrays; a query's rows are contiguous in PISA's output."""
        ctx = self._context()
        rows = len(queries) * k
        qidxs, ranks = np.empty(rows, dtype=np.int32), np.empty(rows, dtype=np.int32)
        docnos, scores = np.empty(rows, dtype=object), np.empty(rows, dtype=np.float32)
        size = self._retrieve_fn(ctx, self.query_algorithm, list(enumerate(queries)), k=k, threads=threads,
                                 pretokenised=1, query_weighted=1, result_qidxs=qidxs, result_docnos=docnos,
                                 result_ranks=ranks, result_scores=scores)
        scores, docids = scores[:size], docnos[:size].tolist()
        if len(queries) == 1:
            return [(scores, docids)]
        out: list[tuple[Any, list[str]]] = [(scores[:0], [])] * len(queries)
        q = qidxs[:size]
        cuts = (np.flatnonzero(q[1:] != q[:-1]) + 1).tolist()
        for a, b in zip([0] + cuts, cuts + [size]) if size else ():
            out[int(q[a])] = (scores[a:b], docids[a:b])
        return out

    def _top(self, queries: list[dict[str, float]], k: int, threads: int) -> list[Hits]:
        """Each query's top ``k`` by score then docid, the cut included, with Anserini's adjusted scores (see the
        docs/design.md on ties)."""
        self.k = k

        def fetch(positions: list[int], limit: int) -> Iterator[tuple[Any, list[str]]]:
            for part in chunks(positions, max(1, MAX_ROWS // limit)):   # bounded result arrays per call
                yield from self._retrieve([queries[i] for i in part], limit, threads)

        top = complete_top_k(fetch, range(len(queries)), k)
        return [top[i] for i in range(len(queries))]

    def search(self, weights: QueryWeights, k: int = 1000, qid: str = "query") -> Hits:
        """One query's top ``k`` hits, best first, ties by docid, Anserini's scores (the latency path: one call, no
        pandas)."""
        return self._top([self._query(weights)], check_k(k), 1)[0]

    def batch_search(self, queries: Mapping[str, QueryWeights], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Every query's top ``k`` into a run, ``threads`` PISA threads per chunk of queries (bounded memory)."""
        check_k(k)
        check_threads(threads)
        run: Run = {}
        counts = SearchCounts()
        for chunk in chunks(queries.items(), max(1, min(CHUNK, MAX_ROWS // (k + 1)))):
            for (qid, _), hits in zip(chunk, self._top([self._query(w) for _, w in chunk], k, threads)):
                counts.add(qid, hits, remove_query, run)
        return run, counts

    def engine_call(self, weights: QueryWeights, k: int = 1000) -> Callable[[], int]:
        """One query's top ``k`` as PISA computes it, ready to time (:mod:`lsr_eval.efficiency.passes`): a call of
        the binding's ``retrieve`` with the query converted and the numeric output arrays made beforehand, without
        the tie check and re-query of :meth:`search`. What it times is what PISA's ``queries`` tool times (cursor
        setup, the algorithm, the final sort) plus the binding's own per-call work (argument parsing, term lookup,
        its stabilising sort, the docid strings and their array). Returns the number of hits."""
        ctx, retrieve, algorithm = self._context(), self._retrieve_fn, self.query_algorithm
        check_k(k)
        query = [(0, self._query(weights))]
        qidxs, ranks, scores = np.empty(k, np.int32), np.empty(k, np.int32), np.empty(k, np.float32)

        def call() -> int:  # a fresh docid array each call: the binding stores new strings without releasing old ones
            return retrieve(ctx, algorithm, query, k=k, threads=1, pretokenised=1, query_weighted=1,
                            result_qidxs=qidxs, result_docnos=np.empty(k, dtype=object), result_ranks=ranks,
                            result_scores=scores)

        return call

    def describe(self) -> dict[str, Any]:
        return {"engine": NAME, "package": PACKAGE, "version": self.version, "index": str(self.index),
                "query_algorithm": self.query_algorithm, "index_encoding": self.index_encoding,
                **self.scoring, "block_max_data": block_max_file(self.index, **self.scoring).name,
                "query_weighted": True, "ties": TIES,
                "k": self.k}

    def close(self) -> None:
        self._ctx = None


def _escape(vector: dict[str, Any]) -> dict[str, Any]:
    """``vector`` with its terms escaped for PISA (the same dict when no term needs it: the usual, fast case)."""
    joined = "".join(vector)
    if "^" not in joined and joined == joined.lower():
        return vector
    return {t.translate(ESCAPES): w for t, w in vector.items()}


def _plain_query(weights: QueryWeights) -> dict[str, float]:
    """PISA's pretokenised query: positive weights as floats (its C code reads them with ``PyFloat_AS_DOUBLE`` and
    repeats a term ``weight`` times; ``query_weighted`` turns the repeats into the term's weight)."""
    return {str(t): float(int(w)) for t, w in weights.items() if w > 0}


def _query(weights: QueryWeights) -> dict[str, float]:
    """:func:`_plain_query` with escaped terms (the indexes lsr-eval builds)."""
    return _escape(_plain_query(weights))
