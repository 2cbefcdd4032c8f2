"""The settings every searcher takes, declared once (:mod:`lsr_eval.settings`): hits per query, search threads,
Lucene's clause limit, and BM25's k1 and b (Anserini's and PISA's BM25, and the BM25 system's settings)."""

from __future__ import annotations

from typing import Any

from lsr_eval.defaults import LUCENE_MAX_CLAUSES
from lsr_eval.settings import Setting, check

K = Setting(help="hits per query", ge=1)
THREADS = Setting(help="search threads", ge=1)
MAX_CLAUSES = Setting(help=f"terms allowed per query (Lucene's limit is {LUCENE_MAX_CLAUSES}; more raises it)",
                      ge=1, unit="terms")
BM25_K1 = Setting(help="BM25 k1 (term-frequency saturation)", ge=0)
BM25_B = Setting(help="BM25 b (document-length normalisation)", ge=0, le=1)


def check_k(k: Any) -> int:
    """``k`` (hits per query): an integer >= 1."""
    return check("k", k, int, K)


def check_threads(threads: Any) -> int:
    """Search threads: an integer >= 1."""
    return check("threads", threads, int, THREADS)


def check_bm25(k1: Any, b: Any) -> tuple[float, float]:
    """BM25's ``k1`` >= 0 and ``b`` in [0, 1]."""
    return check("k1", k1, float, BM25_K1), check("b", b, float, BM25_B)
