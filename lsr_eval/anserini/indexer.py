"""Lucene indexes built by Anserini's ``IndexCollection``, in process.

Pyserini's three kinds: ``bm25-flat``, ``bm25-multifield`` (the title in a field of its own) and ``impact``
(integer weights, ``-impact -pretokenized``). A blank document is indexed as :data:`EMPTY_PLACEHOLDER`, so that
every document read is in the index, without a posting.

Design notes: docs/design.md."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Literal, get_args

from lsr_eval.anserini.collections import CONTENTS, MULTIFIELD, empty_documents
from lsr_eval.anserini.jvm import autoclass, java_errors, java_exception, java_list
from lsr_eval.errors import ConfigError, JavaError, format_bytes, free_bytes
from lsr_eval.search.params import check_threads
from lsr_eval.workdir import folder_bytes

log = logging.getLogger(__name__)

IndexKind = Literal["bm25-flat", "bm25-multifield", "impact"]
#: Contents given to documents with nothing to index: non-blank, but analysed to zero tokens.
EMPTY_PLACEHOLDER = "."

#: Lucene fields indexed beside ``contents`` in a ``bm25-multifield`` index.
_EXTRA_FIELDS = [f for f in MULTIFIELD.values() if f != CONTENTS]
_BM25_ARGS = ["-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator",
              "-storePositions", "-storeDocvectors", "-storeRaw"]
_KIND_ARGS: dict[str, list[str]] = {
    "bm25-flat": _BM25_ARGS,
    "bm25-multifield": [*_BM25_ARGS, "-fields", *_EXTRA_FIELDS],
    "impact": ["-collection", "JsonVectorCollection", "-generator", "DefaultLuceneDocumentGenerator",
               "-impact", "-pretokenized"],
}


@dataclass
class IndexCounts:
    """Anserini's ``Counters`` after a run, plus the empty documents appended by lsr-eval."""

    indexed: int = 0
    empty: int = 0
    unindexable: int = 0
    skipped: int = 0
    errors: int = 0
    empty_appended: int = 0
    argv: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total_indexed(self) -> int:
        return self.indexed + self.empty_appended

    def to_dict(self) -> dict:
        return {**asdict(self), "total_indexed": self.total_indexed}


def run_index_collection(argv: list[str]) -> IndexCounts:
    """Run ``IndexCollection`` with command-line ``argv`` in this process; return its counters."""
    args = autoclass("io.anserini.index.IndexCollection$Args")()
    parser = autoclass("org.kohsuke.args4j.CmdLineParser")(args)
    t0 = time.perf_counter()
    with java_errors(f"IndexCollection {' '.join(argv)}"):
        parser.parseArgument(java_list(argv))
        indexer = autoclass("io.anserini.index.IndexCollection")(args)
        indexer.run()
        c = indexer.getCounters()
    return IndexCounts(indexed=c.indexed.get(), empty=c.empty.get(), unindexable=c.unindexable.get(),
                       skipped=c.skipped.get(), errors=c.errors.get(), argv=list(argv),
                       seconds=time.perf_counter() - t0)


def build_index(collection_dir: str | os.PathLike, index_dir: str | os.PathLike, kind: IndexKind,
                threads: int = 2, memory_buffer_mb: int | None = None) -> IndexCounts:
    """Index every file of ``collection_dir`` into ``index_dir`` (created anew).

    Documents Anserini skipped as empty (blank contents, or a vector without a positive weight) are found in the
    collection and appended with :data:`EMPTY_PLACEHOLDER` contents, so that indexed == documents given.
    """
    if kind not in _KIND_ARGS:
        raise ConfigError(f"unknown index kind {kind!r}; allowed: {', '.join(get_args(IndexKind))}")
    check_threads(threads)
    argv = ["-input", str(collection_dir), "-index", str(index_dir), *_KIND_ARGS[kind], "-threads", str(threads),
            "-quiet"]
    if memory_buffer_mb:
        argv += ["-memoryBuffer", str(memory_buffer_mb)]
    counts = run_index_collection(argv)
    _check_committed(index_dir, counts.indexed)
    if counts.empty:
        empty = list(empty_documents(collection_dir))
        if len(empty) != counts.empty:
            raise JavaError(f"Anserini skipped {counts.empty} empty documents of {collection_dir}, but lsr-eval "
                            f"finds {len(empty)} there")
        counts.empty_appended = _append_empty(index_dir, kind, empty)
        log.warning("%d documents had nothing to index (first: %s); appended without postings", counts.empty,
                    ", ".join(str(d["id"]) for d in empty[:5]))
    for name in ("unindexable", "skipped", "errors"):
        if getattr(counts, name):
            log.warning("Anserini counted %d %s documents in %s", getattr(counts, name), name, collection_dir)
    log.info("indexed %d documents (%d empty appended) into %s in %.1fs", counts.total_indexed,
             counts.empty_appended, index_dir, counts.seconds)
    return counts


def _check_committed(index_dir: str | os.PathLike, indexed: int) -> None:
    """Refuse an index whose last commit does not hold the ``indexed`` documents Anserini counted: ``IndexCollection``
    logs an ``IOException`` at its commit (a full disk) and still returns its counters."""
    directory = None
    try:
        directory = autoclass("org.apache.lucene.store.FSDirectory").open(autoclass("java.io.File")(
            str(index_dir)).toPath())
        reader = autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
    except java_exception() as e:
        held, why = None, f"{getattr(e, 'classname', None) or 'java exception'}: {getattr(e, 'innermessage', e)}"
    else:
        held, why = int(reader.numDocs()), ""
        reader.close()
    finally:
        if directory is not None:
            directory.close()
    if held != indexed:
        free = free_bytes(index_dir)
        written = folder_bytes(index_dir) if os.path.isdir(index_dir) else 0
        found = f"holds {held}" if held is not None else f"cannot be read ({why[:120]})"
        raise JavaError(f"{index_dir}: Anserini counted {indexed} documents indexed, but the index {found}: writing it "
                        f"failed after {format_bytes(written)} (see Anserini's ERROR line above; "
                        f"{format_bytes(free) if free is not None else 'unknown space'} free on its disk); free space "
                        "or fix the cause, and rerun")


def _append_empty(index_dir: str | os.PathLike, kind: IndexKind, docs: list[dict]) -> int:
    """Append documents (collection objects) without postings in ``contents`` (see docs/design.md) with Anserini's
    ``SimpleIndexer``; returns how many it indexed. (``IndexCollection -append`` recreates the index in Anserini
    1.7.1, so it cannot be used here.)"""
    # Same field type as the main pass, but the English analyzer (not -pretokenized), which drops the placeholder.
    # (-input and -collection are required by the parser, unused by SimpleIndexer.)
    extra = _EXTRA_FIELDS if kind == "bm25-multifield" else []
    argv = ["-index", str(index_dir), "-input", "", "-collection", "JsonCollection", "-append", "-threads", "1",
            *(["-impact"] if kind == "impact" else ["-storePositions", "-storeDocvectors", "-storeRaw"]),
            *(["-fields", *extra] if extra else [])]
    added = 0
    with java_errors(f"appending {len(docs)} empty documents to {index_dir}"):
        indexer = autoclass("io.anserini.index.SimpleIndexer")(argv)
        try:
            for doc in docs:
                line = {"id": str(doc["id"]), "contents": EMPTY_PLACEHOLDER, **{f: doc.get(f, "") for f in extra}}
                added += bool(indexer.addRawDocument(json.dumps(line)))
        finally:
            indexer.close()
    return added
