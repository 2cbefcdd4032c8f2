"""The counts of a search: shared by every searcher (the check of k:
:mod:`lsr_eval.search.params`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from lsr_eval.data.types import Run


@dataclass
class SearchCounts:
    """What went into a search and what came out, so nothing is lost silently."""

    queries: int = 0
    queries_with_hits: int = 0
    queries_without_hits: list[str] = field(default_factory=list)
    hits: int = 0
    removed_self_hits: int = 0

    def add(self, qid: str, hits: Sequence[tuple[str, float]], remove_query: bool, run: Run) -> None:
        """Record one query's ranked ``hits`` into ``run`` (``remove_query`` drops the hit whose docid is ``qid``)."""
        ranked: dict[str, float] = {}
        for docid, score in hits:
            if remove_query and docid == qid:
                self.removed_self_hits += 1
                continue
            ranked[docid] = score
        self.queries += 1
        self.hits += len(ranked)
        if ranked:
            self.queries_with_hits += 1
        else:
            self.queries_without_hits.append(qid)
        run[qid] = ranked

    def to_dict(self) -> dict:
        return {"queries": self.queries, "queries_with_hits": self.queries_with_hits,
                "queries_without_hits": len(self.queries_without_hits),
                "queries_without_hits_ids": self.queries_without_hits[:100], "hits": self.hits,
                "removed_self_hits": self.removed_self_hits}
