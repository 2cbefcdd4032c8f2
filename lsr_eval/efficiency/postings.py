"""Posting-list statistics of an impact index, from the per-term document counts (:mod:`~lsr_eval.efficiency.flops`)
and the index folder's size on disk.

With the ``impact`` rule and the export's scale, ``df[j]`` is exactly the length of term ``j``'s posting list in
the Anserini index (the export writes the impacts > 0, Anserini indexes each of them once). Lengths are summarised
over the terms that have a posting list; percentiles by :func:`~lsr_eval.efficiency.stats.percentile`.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from lsr_eval.efficiency.flops import TermCounts
from lsr_eval.efficiency.stats import percentile
from lsr_eval.workdir import folder_bytes  # noqa: F401  (re-exported: its users import it from here)


@dataclass(frozen=True)
class PostingStats:
    """Posting lists of ``documents`` documents; lengths over the ``terms_with_postings`` non-empty lists."""

    documents: int
    terms_with_postings: int
    total_postings: int
    mean_length: float
    median_length: float
    p99_length: float
    max_length: int
    active_rule: str
    index_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def posting_stats(documents: TermCounts, index_dir: str | os.PathLike | None = None) -> PostingStats:
    """Summary of the posting-list lengths ``documents.df``; ``index_dir`` adds the index size on disk."""
    lengths = documents.df[documents.df > 0]
    if lengths.size:
        mean, median, p99, top = (float(lengths.mean()), percentile(lengths, 50), percentile(lengths, 99),
                                  int(lengths.max()))
    else:
        mean = median = p99 = 0.0
        top = 0
    return PostingStats(documents.n, int(lengths.size), int(lengths.sum()), mean, median, p99, top, documents.active,
                        folder_bytes(index_dir) if index_dir is not None else None)
