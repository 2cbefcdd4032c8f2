"""Anserini behind the engine seam: a Lucene impact index (``IndexCollection -impact -pretokenized``) searched with
:class:`lsr_eval.anserini.searcher.ImpactSearcher` (exact; the reference every other engine is checked against).

Its runs define the exact engines' contract (:mod:`lsr_eval.search.ties`): score descending, docid ascending, the
cut at rank k in that order, scores through Anserini's ``ScoreTiesAdjusterReranker``; PISA returns the same runs,
bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsr_eval.anserini.indexer import build_index
from lsr_eval.anserini.jvm import info
from lsr_eval.defaults import LUCENE_MAX_CLAUSES
from lsr_eval.engines.base import BuildCounts, check_index_engine, write_marker
from lsr_eval.errors import LsrEvalError
from lsr_eval.export.jsonl import open_collection_file

NAME = "anserini"


def _lucene_index(folder: Path) -> bool:
    return any(folder.glob("segments_*"))


def count_collection_lines(collection: Path) -> int:
    """Documents in a collection folder: its non-blank lines (Anserini's own count is checked against it)."""
    total = 0
    for path in sorted(p for p in Path(collection).iterdir() if p.is_file()):
        with open_collection_file(path, "rb") as f:
            total += sum(1 for line in f if line.strip())
    return total


class AnseriniEngine:
    """Lucene impact index through Anserini; search options: ``max_clauses`` (Lucene's limit on query terms)."""

    name = NAME

    def describe(self) -> dict[str, Any]:
        return {"engine": NAME, "index": "Lucene impact (IndexCollection -impact -pretokenized)", "java": info()}

    def build(self, collection: Path, index: Path, threads: int = 2) -> BuildCounts:
        read = count_collection_lines(Path(collection))
        counts = build_index(collection, index, "impact", threads=threads)
        if counts.total_indexed != read:
            raise LsrEvalError(f"{read} documents in {collection} but Anserini indexed {counts.total_indexed}: "
                               f"{counts.to_dict()}")
        write_marker(index, NAME, **self.describe())
        return BuildCounts(NAME, read, counts.total_indexed, counts.seconds, {"anserini": counts.to_dict()})

    def check_search(self, max_clauses: int = LUCENE_MAX_CLAUSES) -> dict[str, Any]:
        from lsr_eval.anserini.searcher import check_max_clauses

        return {"max_clauses": check_max_clauses(max_clauses)}

    def open(self, index: Path, max_clauses: int = LUCENE_MAX_CLAUSES):
        from lsr_eval.anserini.searcher import ImpactSearcher

        index = Path(index)
        check_index_engine(index, NAME, detected=NAME if _lucene_index(index) else None)
        return ImpactSearcher(index, max_clauses=max_clauses)
