"""Term statistics of a Lucene index for efficiency accounting: the number of documents, postings, document
frequencies of terms, and query texts analysed as Anserini's BM25 search analyses them.

:class:`TermStats` reads a ``bm25-flat`` index (field ``contents``) with Lucene's ``IndexReader``; ``analyze`` uses
Anserini's ``AnalyzerUtils.analyze(text)``, i.e. ``DefaultEnglishAnalyzer.newDefaultInstance()`` (Porter stemming,
Lucene's English stop words): the analyzer of ``SimpleSearcher`` (:class:`~lsr_eval.anserini.searcher.Bm25Searcher`)
and of the index. A multifield BM25 search (``bm25-multifield`` index) reads several fields: its dimensions are then
the fields' terms, written ``field:term`` (a query term is looked up in every field's postings).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from lsr_eval.anserini.analysis import EnglishAnalyzer
from lsr_eval.anserini.collections import CONTENTS
from lsr_eval.anserini.jvm import autoclass, java_errors


class TermStats:
    """Document count, postings and document frequencies of the searched field(s) of a Lucene index."""

    def __init__(self, index_dir: str, field: str | Sequence[str] = CONTENTS) -> None:
        with java_errors(f"opening index {index_dir}"):
            self._reader = autoclass("io.anserini.index.IndexReaderUtils").getReader(str(index_dir))
        self._term = autoclass("org.apache.lucene.index.Term")
        self._analyze = EnglishAnalyzer()
        self.fields = (field,) if isinstance(field, str) else tuple(field)
        self.index_dir = str(index_dir)

    def _dim(self, field: str, term: str) -> str:
        return term if len(self.fields) == 1 else f"{field}:{term}"

    def _split(self, dim: str) -> tuple[str, str]:
        """(field, term) of a dimension (field names hold no ':')."""
        if len(self.fields) == 1:
            return self.fields[0], dim
        field, term = dim.split(":", 1)
        return field, term

    @property
    def documents(self) -> int:
        return int(self._reader.numDocs())

    @property
    def postings(self) -> int:
        """Posting entries of the field(s) (sum of their terms' document frequencies)."""
        return sum(int(self._reader.getSumDocFreq(f)) for f in self.fields)

    def analyze(self, text: str) -> list[str]:
        """The analysed terms (dimensions) of ``text`` in order, repeats kept, field by field."""
        terms = self._analyze(text)
        return [self._dim(f, t) for f in self.fields for t in terms]

    def doc_freqs(self, terms: Iterable[str]) -> dict[str, int]:
        """``df`` of each (analysed) term or dimension; 0 when the index does not hold it."""
        with java_errors("reading document frequencies"):
            return {t: int(self._reader.docFreq(self._term(*self._split(t)))) for t in set(terms)}

    def all_doc_freqs(self) -> dict[str, int]:
        """``df`` of every term (dimension) of the field(s): the index's whole vocabulary; one JNI call per term."""
        out: dict[str, int] = {}
        with java_errors("listing the index's terms"):
            for field in self.fields:
                terms = autoclass("org.apache.lucene.index.MultiTerms").getTerms(self._reader, field)
                if terms is None:       # an empty index has no terms for the field
                    continue
                it = terms.iterator()
                while (term := it.next()) is not None:
                    out[self._dim(field, term.utf8ToString())] = int(it.docFreq())
        return out

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> TermStats:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
