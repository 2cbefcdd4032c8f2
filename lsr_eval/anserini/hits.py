"""Lucene hits without per-hit JNI calls: a query's top-k comes back as one string, and the index's docids as one
string per block of documents.

Through pyjnius every Java object that crosses into Python costs a proxy and a JNI call per field: reading 1,000
hits that way (Anserini's ``ScoredDoc`` with its loaded stored document) costs ~10 ms, five times the search itself.
Here ``java.lang.invoke.MethodHandles`` compose, on the Java side, ``IndexSearcher.search`` -> ``TopDocs.scoreDocs``
-> ``Arrays.toString`` (``"[doc=12 score=3.5 shardIndex=-1, ...]"``), so a query is one JNI call returning one
string that Python parses with one regular expression. Lucene's internal doc numbers map to collection docids
through a table read once per open index, also in bulk (a ``MethodHandles.countedLoop`` appending each document's
``id`` to a ``StringBuilder``). No stored document is ever loaded while searching.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np

from lsr_eval.anserini.jvm import autoclass, cast, java_errors

#: Documents per JNI call when reading the docid table.
DOCID_BLOCK = 200_000
_HIT = re.compile(r"doc=(\d+) score=(\S+?) ")
_local = threading.local()


class _Handles:
    """Method handles and classes, built once per process (the JVM is shared)."""

    def __init__(self) -> None:
        with java_errors("composing method handles"):
            cls = autoclass("java.lang.Class").forName
            mh, mt = autoclass("java.lang.invoke.MethodHandles"), autoclass("java.lang.invoke.MethodType")
            lookup = mh.publicLookup()
            string, objs = cls("java.lang.String"), cls("[Ljava.lang.Object;")
            score_docs = cls("[Lorg.apache.lucene.search.ScoreDoc;")
            to_string = lookup.findStatic(cls("java.util.Arrays"), "toString", mt.methodType(string, objs))
            getter = lookup.findGetter(cls("org.apache.lucene.search.TopDocs"), "scoreDocs", score_docs)
            #: TopDocs -> "[doc=.. score=.. shardIndex=.., ...]"
            self.top_docs_string = mh.filterReturnValue(getter, to_string.asType(mt.methodType(string, score_docs)))
            self.mh, self.mt, self.lookup, self.cls = mh, mt, lookup, cls
            self.integer = autoclass("java.lang.Integer")
            self.array_list = autoclass("java.util.ArrayList")

    def call(self, handle, *args: Any) -> Any:
        """``handle(*args)`` through ``invokeWithArguments(List)`` (pyjnius cannot call signature-polymorphic
        ``invokeExact``)."""
        lst = self.array_list()
        for a in args:
            lst.add(a)
        arguments = cast("java.util.List", lst)
        # no Python between binding and calling: pyjnius shares a bound method among a class's objects, so another
        # thread's binding could otherwise win the gap
        return handle.invokeWithArguments(arguments)


_handles: _Handles | None = None
_handles_lock = threading.Lock()


def handles() -> _Handles:
    global _handles
    with _handles_lock:
        if _handles is None:
            _handles = _Handles()
        return _handles


def top_docs_string(top_docs) -> str:
    """``TopDocs`` as Lucene's ``"[doc=N score=S shardIndex=-1, ...]"`` in one JNI call."""
    h = handles()
    return h.call(h.top_docs_string, top_docs)


def parse_hits(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(Lucene doc numbers, float32 scores) from :func:`top_docs_string` output, in Lucene's rank order.

    Java prints a float with the fewest digits that identify it among floats, so parsing to float32 recovers the
    exact score."""
    found = _HIT.findall(text)
    if not found:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    docs, scores = zip(*found)
    return np.array(docs, dtype=np.int64), np.array(scores, dtype=np.float32)


def read_docid_table(reader, field: str = "id") -> np.ndarray:
    """The collection docid of every Lucene doc number of ``reader`` (an object array indexed by doc number),
    read in blocks of :data:`DOCID_BLOCK` documents per JNI call, loading the ``field`` stored field only."""
    h = handles()
    n = int(reader.maxDoc())
    with java_errors("reading the index's docids"):
        mh, mt, lookup, cls = h.mh, h.mt, h.lookup, h.cls
        string, sb = cls("java.lang.String"), cls("java.lang.StringBuilder")
        int_type = h.integer.TYPE
        stored = reader.storedFields()
        # document(i, {field}): only the docid field becomes a Java string; the other stored fields (an MS MARCO
        # BM25 index's passages) are skipped by the visitor, though their compressed block is still decompressed
        document = mh.insertArguments(
            lookup.findVirtual(cls("org.apache.lucene.index.StoredFields"), "document",
                               mt.methodType(cls("org.apache.lucene.document.Document"), int_type,
                                             cls("java.util.Set"))),
            2, autoclass("java.util.Collections").singleton(field))
        get = mh.insertArguments(lookup.findVirtual(cls("org.apache.lucene.document.Document"), "get",
                                                    mt.methodType(string, string)), 1, field)
        line = mh.insertArguments(lookup.findVirtual(string, "concat", mt.methodType(string, string)), 1, "\n")
        one = mh.filterReturnValue(mh.filterReturnValue(document.bindTo(stored), get), line)  # int -> "id\n"
        body = mh.filterArguments(lookup.findVirtual(sb, "append", mt.methodType(sb, string)), 1, one)
        init = lookup.findConstructor(sb, mt.methodType(autoclass("java.lang.Void").TYPE))
        finish = lookup.findVirtual(sb, "toString", mt.methodType(string))
        ids: list[str] = []
        for start in range(0, n, DOCID_BLOCK):
            end = min(n, start + DOCID_BLOCK)
            loop = mh.countedLoop(mh.constant(int_type, h.integer(start)), mh.constant(int_type, h.integer(end)),
                                  init, body)
            text = h.call(mh.filterReturnValue(loop, finish))
            ids += text.split("\n")[:-1]
    if len(ids) != n:
        raise RuntimeError(f"read {len(ids)} docids from an index of {n} documents (a docid with a newline?)")
    return np.array(ids, dtype=object)
