"""Term statistics of a Lucene index for efficiency accounting: the number of documents, postings, document
frequencies of terms, and query texts analysed as Anserini's BM25 search analyses them.

:class:`TermStats` reads a ``bm25-flat`` index (field ``contents``) with Lucene's ``IndexReader``; ``analyze`` uses
Anserini's ``AnalyzerUtils.analyze(text)``, i.e. ``DefaultEnglishAnalyzer.newDefaultInstance()`` (Porter stemming,
Lucene's English stop words): the analyzer of ``SimpleSearcher`` (:class:`~lsr_eval.anserini.searcher.Bm25Searcher`)
and of the index.
"""

from __future__ import annotations

from typing import Iterable

from lsr_eval.anserini.jvm import autoclass, java_errors

#: The field Anserini indexes document text into.
CONTENTS = "contents"


class TermStats:
    """Document count, postings and document frequencies of one field of a Lucene index."""

    def __init__(self, index_dir: str, field: str = CONTENTS) -> None:
        with java_errors(f"opening index {index_dir}"):
            self._reader = autoclass("io.anserini.index.IndexReaderUtils").getReader(str(index_dir))
        self._term = autoclass("org.apache.lucene.index.Term")
        self._analyzer = autoclass("io.anserini.analysis.AnalyzerUtils")
        self.field = field
        self.index_dir = str(index_dir)

    @property
    def documents(self) -> int:
        return int(self._reader.numDocs())

    @property
    def postings(self) -> int:
        """Posting entries of the field (sum of its terms' document frequencies)."""
        return int(self._reader.getSumDocFreq(self.field))

    def analyze(self, text: str) -> list[str]:
        """The analysed terms of ``text`` in order, repeats kept."""
        with java_errors("analysing a query"):
            return [str(t) for t in self._analyzer.analyze(text).toArray()]

    def doc_freqs(self, terms: Iterable[str]) -> dict[str, int]:
        """``df`` of each (analysed) term; 0 when the index does not hold it."""
        with java_errors("reading document frequencies"):
            return {t: int(self._reader.docFreq(self._term(self.field, t))) for t in set(terms)}

    def all_doc_freqs(self) -> dict[str, int]:
        """``df`` of every term of the field (the index's whole vocabulary; one JNI call per term)."""
        with java_errors("listing the index's terms"):
            terms = autoclass("org.apache.lucene.index.MultiTerms").getTerms(self._reader, self.field)
            out: dict[str, int] = {}
            if terms is None:       # an empty index has no terms for the field
                return out
            it = terms.iterator()
            while (term := it.next()) is not None:
                out[term.utf8ToString()] = int(it.docFreq())
            return out

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> "TermStats":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
