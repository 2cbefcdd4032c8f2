"""Anserini's English analysis of a text, the analyzer of its BM25 indexes and searches (``DefaultEnglishAnalyzer``:
Lucene's standard tokenizer, lower case, Lucene's English stop words, Porter stemming), and the term-frequency
collection that carries a corpus's BM25 statistics to another engine.

Anserini's ``AnalyzerUtils.analyze(text)`` uses ``DefaultEnglishAnalyzer.newDefaultInstance()``, the analyzer its
``bm25-flat`` index was built with (``IndexCollection`` without ``-pretokenized``) and that ``SimpleSearcher``
applies to a query. A document's vector here is its analysed terms counted, so that an engine scoring BM25 over it
(PISA's ``bm25`` scorer) sees the terms, term frequencies and document lengths Lucene indexed; Lucene then stores each
length in one byte (``SmallFloat.intToByte4``), PISA exactly, so scores differ in the last digits
(docs/design.md, engines.bm25)."""

from __future__ import annotations

import os
from collections import Counter
from typing import Iterable

from lsr_eval.anserini.collections import CollectionCounts, write_lines
from lsr_eval.anserini.jvm import autoclass, java_errors
from lsr_eval.data.types import Document

#: What :class:`EnglishAnalyzer` is, for manifests.
ANALYZER = "Anserini DefaultEnglishAnalyzer (Lucene standard tokenizer, lower case, English stop words, Porter)"


class EnglishAnalyzer:
    """Text -> Anserini's analysed terms, in order, repeats kept (one JNI call per text)."""

    name = ANALYZER

    def __init__(self) -> None:
        self._utils = autoclass("io.anserini.analysis.AnalyzerUtils")

    def __call__(self, text: str) -> list[str]:
        with java_errors("analysing a text"):
            return [str(t) for t in self._utils.analyze(text).toArray()]

    def counts(self, text: str) -> dict[str, int]:
        """The analysed terms of ``text`` with their frequencies (a BM25 query's or document's term weights)."""
        return dict(Counter(self(text)))


def write_term_frequencies(docs: Iterable[Document], folder: str | os.PathLike,
                           analyzer: EnglishAnalyzer | None = None) -> CollectionCounts:
    """A ``JsonVectorCollection`` of every document's analysed terms counted (contents = title + " " + text, as
    the ``bm25-flat`` index), documents without a term included with an empty vector; one document in memory."""
    analyze = analyzer or EnglishAnalyzer()
    return write_lines(({"id": doc.id, "contents": "", "vector": analyze.counts(doc.contents)} for doc in docs),
                       folder)
