"""Plain record types shared by every stage."""

from __future__ import annotations

from dataclasses import dataclass

#: query id -> document id -> relevance grade (TREC qrels).
Qrels = dict[str, dict[str, int]]
#: query id -> document id -> score (a TREC run).
Run = dict[str, dict[str, float]]


@dataclass(frozen=True, slots=True)
class Document:
    """A corpus document. ``contents`` is what BM25 indexes: title + " " + text, as Pyserini's BEIR flat indexes."""

    id: str
    text: str
    title: str = ""

    @property
    def contents(self) -> str:
        return f"{self.title} {self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class Query:
    """A topic: id and query text."""

    id: str
    text: str
