"""Seismic (Bruch, Nardini, Rulli, Venturini, SIGIR 2024) behind the engine seam: approximate by design.

Seismic prunes each term's posting list to its largest impacts, cuts it into blocks of similar documents and keeps a
summary vector per block; a query scans only its ``query_cut`` largest terms and skips a block whose summary score is
below ``heap_factor`` times the current k-th best score. Documents that survive are scored exactly from the forward
index, so the scores returned are exact dot products, but documents of the exact top k can be missing: measure how
many with :func:`lsr_eval.evaluation.exact_recall.exact_recall` against an exact engine (Anserini, PISA).

Design notes: docs/design.md."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

from lsr_eval.data.chunks import chunks
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
from lsr_eval.search.params import check_k, check_threads
from lsr_eval.settings import Setting, check_option

log = logging.getLogger(__name__)

ENGINE = "seismic"
PACKAGE = "pyseismic-lsr"
#: ``SeismicIndex.save(folder / INDEX_STEM)`` writes ``folder / INDEX_FILE``.
INDEX_STEM = "index"
INDEX_FILE = f"{INDEX_STEM}.index.seismic"
#: The index's vocabulary (JSON list): query terms outside it are dropped before Seismic sees them (Seismic 0.5.4
#: panics on a query term when the index has no term at all).
TERMS_FILE = "terms.json"
#: Queries handed to one ``SeismicIndex.batch_search`` call (bounds the memory of a batch search).
BATCH = 512
#: Integers up to this one are float16s (the largest finite float16, 65504, bounds the weights the registry
#: declares for Seismic: larger ones are refused by the collection check).
F16_EXACT = 2048
#: Distinct terms the standard ``SeismicIndex`` holds (16-bit term ids).
MAX_TERMS = 1 << 16

#: Default search knobs, chosen for evaluation (accuracy first): measured on SciFact / splade-tiny they find 99.9% of
#: the exact top 10 and 99.8% of the exact top 1000 (nDCG@10 equal to Anserini's to 4 decimals), where the engines'
#: quick-start values (query_cut 3, heap_factor 0.8) find 88% of the top 10 and 53% of the top 1000.
QUERY_CUT = 20
HEAP_FACTOR = 0.7


# -- knob validation ---------------------------------------------------------------------------------------------

#: Seismic's build settings and search knobs, each declared once: (type, constraint and help).
KNOBS: dict[str, tuple[type, Setting]] = {
    "n_postings": (int, Setting(help="postings kept per term's list", ge=1)),
    "centroid_fraction": (float, Setting(help="blocks per list, a fraction of its length", gt=0, le=1)),
    "min_cluster_size": (int, Setting(help="documents per block at least", ge=1)),
    "summary_energy": (float, Setting(help="the share of a block's mass its summary keeps", gt=0, le=1)),
    "max_fraction": (float, Setting(help="a list's length kept, a multiple of n_postings", ge=1)),
    "doc_cut": (int, Setting(help="a document's largest terms that cluster it", ge=1)),
    "batched_indexing": (int, Setting(help="documents per indexing batch (lowers the peak memory)", ge=1)),
    "query_cut": (int, Setting(help="a query's largest terms searched", ge=1)),
    "heap_factor": (float, Setting(help="a block is scored when its bound beats heap_factor x the k-th score",
                                   gt=0, le=1)),
}


def check_search_knobs(query_cut: Any, heap_factor: Any) -> dict[str, Any]:
    """The search knobs, each checked against its allowed range."""
    return {name: check_option(KNOBS, name, value, ENGINE)
            for name, value in (("query_cut", query_cut), ("heap_factor", heap_factor))}


# -- package access ----------------------------------------------------------------------------------------------

def _seismic() -> Any:
    """The ``seismic`` module, or a ConfigError naming the pip package."""
    return require("seismic", ENGINE)


def package_version() -> str:
    return installed_version(PACKAGE) or "unknown"


def _token_width(seismic: Any) -> int:
    """Longest token the package's fixed-width NumPy string type holds (``'U100'`` -> 100)."""
    return int(str(seismic.get_seismic_string()).lstrip("<>=|").lstrip("U"))


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what the Rust library prints (progress lines) to stderr, so stdout stays clean for data."""
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdout (captured, closed): leave it alone
        yield
        return
    saved = os.dup(fd)
    try:
        os.dup2(sys.stderr.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def _survey(collection: Path, width: int) -> dict[str, Any]:
    """First pass: counts, and every vector checked against what Seismic can store (errors name the document);
    the weights themselves are the collection check's (registry: finite numbers up to the largest float16)."""
    import numpy as np

    vocabulary: set[str] = set()
    documents = empty = rounded = postings = 0
    for docid, vector in iter_collection(collection, ENGINES[ENGINE].weights):
        documents += 1
        postings += len(vector)
        if not vector:
            empty += 1
            continue
        long = next((t for t in vector if len(t) > width), None)
        if long is not None:
            raise InputError(f"{collection}: document {docid}: term {long[:40]!r}... is longer than the {width} "
                             "characters Seismic stores")
        if max(vector.values()) > F16_EXACT or any(type(w) is float for w in vector.values()):
            rounded += sum(1 for w in vector.values() if float(np.float16(w)) != w)
        vocabulary.update(vector)
        if len(vocabulary) > MAX_TERMS:
            raise InputError(f"{collection}: document {docid}: more than {MAX_TERMS} distinct terms, the most "
                             "Seismic's standard index holds (16-bit term ids)")
    if documents == 0:
        raise InputError(f"{collection} holds no documents")
    if rounded:
        log.warning("seismic: %d impacts of %s are stored rounded (float16: integers above %d, most fractions)",
                    rounded, collection, F16_EXACT)
    return {"documents": documents, "empty": empty, "rounded": rounded, "postings": postings,
            "vocabulary": vocabulary}


# -- engine ------------------------------------------------------------------------------------------------------

class SeismicEngine:
    """Builds Seismic indexes from a ``JsonVectorCollection`` folder and opens :class:`SeismicSearcher` over them.

    The build knobs and their defaults are the package's (``SeismicIndex.build_from_dataset``, pyseismic-lsr 0.5.4),
    kept for small collections: pruning keeps the ``n_postings`` x vocabulary largest postings, at most
    ``max_fraction`` x ``n_postings`` per list, so on a collection of fewer than 5,250 documents (SciFact: 5,183)
    nothing is pruned and only the blocks (``centroid_fraction`` of a list's length, at least ``min_cluster_size``
    documents each, clustered on each document's ``doc_cut`` largest terms) and their summaries (keeping
    ``summary_energy`` of the block's mass) approximate. ``batched_indexing`` builds in batches of that many
    documents to lower the peak memory. The paper tunes these for MS MARCO (8.8M documents)."""

    name = ENGINE

    def __init__(self, n_postings: int = 3500, centroid_fraction: float = 0.1, min_cluster_size: int = 2,
                 summary_energy: float = 0.4, max_fraction: float = 1.5, doc_cut: int = 15,
                 batched_indexing: int | None = None) -> None:
        self.knobs: dict[str, Any] = {
            name: check_option(KNOBS, name, value, ENGINE) for name, value in (
                ("n_postings", n_postings), ("centroid_fraction", centroid_fraction),
                ("min_cluster_size", min_cluster_size), ("summary_energy", summary_energy),
                ("max_fraction", max_fraction), ("doc_cut", doc_cut))
        }
        self.knobs["batched_indexing"] = (None if batched_indexing is None
                                          else check_option(KNOBS, "batched_indexing", batched_indexing, ENGINE))
        _seismic()  # fail now, naming the pip package, rather than after encoding a corpus

    def describe(self) -> dict[str, Any]:
        return {"engine": ENGINE, "package": PACKAGE, "version": package_version(), "build": dict(self.knobs)}

    def build(self, collection: Path, index: Path, threads: int = 2) -> BuildCounts:
        """Index every document of ``collection`` into the new folder ``index`` (marker written last).

        Two passes over the collection: the first checks every vector and counts the vocabulary (Seismic's dataset
        is ~15x faster to fill when its vocabulary size is known), the second loads the whole collection into a
        ``SeismicDataset`` in memory (Seismic's design) and builds the index with ``threads`` threads.

        A document with an empty vector is added too (``documents_indexed`` counts it) but no query reaches it, as in
        a Lucene impact index; their number is ``documents_without_terms`` in the details. Weights may be
        fractions; those float16 does not hold (integers above 2048, most fractions) are stored rounded (counted in
        ``impacts_rounded``); above 65504, or more than 65536 distinct terms, the collection is refused."""
        import numpy as np

        threads = check_threads(threads)
        seismic = _seismic()
        collection, index = Path(collection), Path(index)
        start = time.perf_counter()
        survey = _survey(collection, _token_width(seismic))
        string_type = seismic.get_seismic_string()
        dataset = seismic.SeismicDataset(dim=len(survey["vocabulary"]))
        read = 0
        for docid, vector in iter_collection(collection, ENGINES[ENGINE].weights):
            read += 1
            try:
                dataset.add_document(docid, np.fromiter(vector.keys(), dtype=string_type, count=len(vector)),
                                     np.fromiter(vector.values(), dtype=np.float32, count=len(vector)))
            except ValueError as e:
                raise InputError(f"{collection}: document {docid}: Seismic refused it ({e})") from e
        if read != survey["documents"] or int(dataset.len) != read:
            raise InputError(f"{collection} changed while it was indexed ({survey['documents']} documents, then "
                             f"{read}; the dataset holds {dataset.len})")
        index.mkdir(parents=True, exist_ok=True)
        with _stdout_to_stderr(), rust_panics("Seismic", f"building {index}"):
            built = seismic.SeismicIndex.build_from_dataset(dataset, num_threads=threads, **self.knobs)
            del dataset
            built.save(str(index / INDEX_STEM))
        indexed = int(built.len)
        if indexed != read:
            raise InputError(f"Seismic indexed {indexed} of the {read} documents read from {collection}")
        if not (index / INDEX_FILE).is_file():
            raise InputError(f"Seismic did not write {index / INDEX_FILE}")
        (index / TERMS_FILE).write_text(json.dumps(sorted(survey["vocabulary"]), ensure_ascii=False) + "\n",
                                        encoding="utf-8")
        write_marker(index, ENGINE, package=PACKAGE, version=package_version(), build=self.knobs,
                     documents=indexed, index_file=INDEX_FILE)
        details = {"documents_without_terms": survey["empty"], "postings": survey["postings"],
                   "terms": len(survey["vocabulary"]), "impacts_rounded": survey["rounded"], "threads": threads}
        return BuildCounts(ENGINE, read, indexed, time.perf_counter() - start, details)

    def check_search(self, query_cut: int = QUERY_CUT, heap_factor: float = HEAP_FACTOR) -> dict[str, Any]:
        return check_search_knobs(query_cut, heap_factor)

    def open(self, index: Path, query_cut: int = QUERY_CUT, heap_factor: float = HEAP_FACTOR) -> SeismicSearcher:
        """A searcher over ``index`` (built by this engine) with the search knobs of :class:`SeismicSearcher`."""
        return SeismicSearcher(index, query_cut=query_cut, heap_factor=heap_factor)


# -- searcher ----------------------------------------------------------------------------------------------------

class SeismicSearcher(ClosingSearcher):
    """An open Seismic index (loaded whole into memory) answering integer-weighted queries approximately.

    Knobs (defaults :data:`QUERY_CUT`, :data:`HEAP_FACTOR`): ``query_cut`` (integer >= 1), the number of a query's
    largest terms whose posting lists are scanned (more: closer to exact, slower); ``heap_factor`` in (0, 1]: a
    block is scored only when its summary's score reaches ``heap_factor`` times the current k-th best score, so
    smaller values score more blocks (closer to exact, slower) and 1 skips the most. Query terms the index does not
    know and weights <= 0 are ignored (as the Anserini engine does); a query left with no term gets no hits."""

    engine = ENGINE

    def __init__(self, index: Path, query_cut: int = QUERY_CUT, heap_factor: float = HEAP_FACTOR) -> None:
        self.knobs = check_search_knobs(query_cut, heap_factor)
        index = Path(index)
        marker = check_index_engine(index, ENGINE)
        seismic = _seismic()
        path = index / marker.get("index_file", INDEX_FILE)
        if not path.is_file():
            raise InputError(f"Seismic index {index} has no {path.name} (rebuild it with `lsr-eval index --engine "
                             f"{ENGINE}`)")
        self.index_dir = index
        self._marker = marker
        self._string_type = seismic.get_seismic_string()
        terms = index / TERMS_FILE
        if not terms.is_file():
            raise InputError(f"Seismic index {index} has no {TERMS_FILE} (rebuild it with `lsr-eval index --engine "
                             f"{ENGINE}`)")
        self._vocabulary = frozenset(json.loads(terms.read_text(encoding="utf-8")))
        with _stdout_to_stderr():
            self._index = seismic.SeismicIndex.load(str(path))

    # numpy arrays of one query's usable terms; None when none is left
    def _arrays(self, qid: str, weights: QueryWeights) -> tuple[Any, Any] | None:
        import numpy as np

        terms, values = [], []
        for term, w in weights.items():
            if query_weight(qid, term, w) > 0 and term in self._vocabulary:
                terms.append(term)
                values.append(w)
        if not terms:
            return None
        return np.array(terms, dtype=self._string_type), np.array(values, dtype=np.float32)

    def _live(self) -> Any:
        if self._index is None:
            raise RuntimeError(f"Seismic searcher over {self.index_dir} is closed")
        return self._index

    @staticmethod
    def _ranked(results: list) -> list[tuple[str, float]]:
        """Seismic's ``(qid, score, docid)`` triples as ``(docid, score)``, best first, ties by docid."""
        return sorted(((str(d), float(s)) for _, s, d in results), key=lambda h: (-h[1], h[0]))

    def search(self, weights: QueryWeights, k: int = 1000, qid: str = "query") -> list[tuple[str, float]]:
        """One query's top ``k`` hits (approximate), best first, ties by docid."""
        k = check_k(k)
        index = self._live()
        arrays = self._arrays(qid, weights)
        if arrays is None:
            return []
        with rust_panics("Seismic", f"searching query {qid}"):
            return self._ranked(index.search(str(qid), arrays[0], arrays[1], k=k, **self.knobs))

    def batch_search(self, queries: Mapping[str, QueryWeights], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Every query's top ``k`` into a run, :data:`BATCH` queries per Seismic call on ``threads`` threads.

        Every query is counted; one without usable terms gets an empty ranking (``queries_without_hits``).
        ``remove_query`` drops a hit whose docid is the query's id (a corpus searched with its own documents); the
        query then has up to ``k - 1`` hits, as with the other engines."""
        import numpy as np

        k, threads = check_k(k), check_threads(threads)
        index = self._live()
        run: Run = {}
        counts = SearchCounts()
        for chunk in chunks(queries.items(), BATCH):
            # Seismic's query ids are fixed-width strings, and its batch answers come back in no fixed order: pass
            # positions as ids, and map each answer back by the id it carries (an answer without hits carries none)
            positions, terms, values = [], [], []
            for i, (qid, weights) in enumerate(chunk):
                arrays = self._arrays(qid, weights)
                if arrays is not None:
                    positions.append(str(i))
                    terms.append(arrays[0])
                    values.append(arrays[1])
            results = []
            if positions:
                with rust_panics("Seismic", f"searching {len(positions)} queries"):
                    results = index.batch_search(np.array(positions, dtype=self._string_type), terms, values, k=k,
                                                 num_threads=threads, **self.knobs)
            answers = {int(r[0][0]): r for r in results if r}
            if len(results) != len(positions) or len(answers) != sum(1 for r in results if r) or \
                    not set(answers) <= set(map(int, positions)):
                raise RuntimeError(f"Seismic's batch answers do not match its {len(positions)} queries")
            for i, (qid, _) in enumerate(chunk):
                counts.add(str(qid), self._ranked(answers.get(i, [])), remove_query, run)
        return run, counts

    def describe(self) -> dict[str, Any]:
        return {"engine": ENGINE, "package": PACKAGE, "version": package_version(), "search": dict(self.knobs),
                "build": self._marker.get("build", {})}

    def close(self) -> None:
        self._index = None
