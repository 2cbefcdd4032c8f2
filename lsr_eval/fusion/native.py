"""The fusions run by default (RRF; CombSUM and weighted CombSUM, raw or min-max normalised) computed in Python and
numpy, without ranx: converting runs to ranx's numba dictionaries compiles for seconds on every call.

The arithmetic is ranx 0.3.21's, operation for operation, so the fused scores are the same floats (checked against
``ranx.fuse`` in the tests): RRF gives a document ``1 / (k + rank)`` in each run, rank in trec_eval order; min-max is
``(s - min) / max(max - min, 1e-9)`` per query and run; a document's fused score is the sum over the runs, in run
order, of its (weighted) score, 0.0 where a run lacks it. Each fused query's documents come in trec_eval order (ranx
sorts them by score too, tied ones in no defined order). Other methods and normalisations go through ranx.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import LsrEvalError
from lsr_eval.fusion.methods import Settings

#: Methods computed here, each with the normalisations it is computed with.
NATIVE: dict[str, tuple[str, ...]] = {"rrf": ("none",), "sum": ("none", "min-max"), "wsum": ("none", "min-max")}


def supports(settings: Settings) -> bool:
    """Whether :class:`FlatRuns` computes this method with this normalisation."""
    return settings.norm in NATIVE.get(settings.method.name, ())


class FlatRuns:
    """Runs laid out once for fusing many times (tuning tries a grid of weights on the same runs): each query's
    documents in one flat array (the union, first seen in run order, each run in trec_eval order), where each run's
    documents sit in it, their scores and ranks, and a tie-break key (docid order)."""

    def __init__(self, ordered: Sequence[tuple[list[list[str]], list[np.ndarray]]], qids: Sequence[str]) -> None:
        self.qids = list(qids)
        doc_ids: list[str] = []
        starts = [0]
        positions: list[list[int]] = [[] for _ in ordered]
        lengths: list[list[int]] = [[] for _ in ordered]
        for i in range(len(self.qids)):
            position: dict[str, int] = {}
            for docs, _ in ordered:
                for d in docs[i]:
                    position.setdefault(d, len(position))
            base = len(doc_ids)
            doc_ids.extend(position)
            starts.append(len(doc_ids))
            for r, (docs, _) in enumerate(ordered):
                positions[r].extend(base + position[d] for d in docs[i])
                lengths[r].append(len(docs[i]))
        self.starts = np.array(starts, dtype=np.int64)
        self.query_of = np.repeat(np.arange(len(self.qids)), np.diff(self.starts))
        # the same stable order: numpy sorts 16-bit keys by radix (6x faster than 64-bit ones on 1.2M documents)
        self._query_key = self.query_of.astype(np.uint16) if len(self.qids) <= 1 << 16 else self.query_of
        self.positions = [np.array(p, dtype=np.int64) for p in positions]
        self.scores = [np.concatenate(s) if s else np.zeros(0) for _, s in ordered]
        self.run_starts = [np.concatenate(([0], np.cumsum(n, dtype=np.int64))) for n in lengths]
        self.ranks = [np.arange(len(p), dtype=np.int64) + 1 - np.repeat(rs[:-1], np.diff(rs))
                      for p, rs in zip(self.positions, self.run_starts)]
        self.doc_ids = np.array(doc_ids, dtype=object)
        rank_of = {d: i for i, d in enumerate(sorted(set(doc_ids)))}
        docid_order = np.fromiter((rank_of[d] for d in doc_ids), dtype=np.int64, count=len(doc_ids))
        self.by_docid_descending = np.argsort(-docid_order, kind="stable")

    def _contributions(self, r: int, settings: Settings) -> np.ndarray:
        """What each document of run ``r`` adds to the fused score, before weighting (per query: RRF's
        ``1 / (k + rank)``, min-max ``(s - min) / max(max - min, 1e-9)``, or the raw score)."""
        if settings.method.name == "rrf":
            return 1 / (settings.params["k"] + self.ranks[r])
        scores = self.scores[r]
        if settings.norm != "min-max" or not len(scores):
            return scores
        bounds = self.run_starts[r]
        lengths = np.diff(bounds)
        filled = bounds[:-1][lengths > 0]
        low = np.repeat(np.minimum.reduceat(scores, filled), lengths[lengths > 0])
        high = np.repeat(np.maximum.reduceat(scores, filled), lengths[lengths > 0])
        return (scores - low) / np.maximum(high - low, 1e-9)

    def fused_scores(self, settings: Settings) -> np.ndarray:
        """The fused score of every document of :attr:`doc_ids`: the sum over the runs, in run order, of its
        (weighted) contribution, 0.0 where a run lacks it."""
        weights = settings.params.get("weights") if settings.method.name == "wsum" else None
        fused = np.zeros(len(self.doc_ids))
        for r, where in enumerate(self.positions):
            part = np.zeros(len(self.doc_ids))
            part[where] = self._contributions(r, settings)
            fused = fused + (weights[r] * part if weights is not None else part)
        return fused

    def ranking(self, settings: Settings) -> tuple[np.ndarray, np.ndarray]:
        """The fused scores (:meth:`fused_scores`) and the positions in fused order: by query, each query's
        documents in trec_eval order (score descending, then docid descending). A non-finite score is refused."""
        with np.errstate(invalid="ignore", over="ignore"):  # a non-finite score is refused just below
            fused = self.fused_scores(settings)
        bad = np.flatnonzero(~np.isfinite(fused))
        if bad.size:
            q = int(self.query_of[bad[0]])
            raise LsrEvalError(f"{settings.method.name} with norm {settings.norm}: query {self.qids[q]!r}, document "
                               f"{self.doc_ids[bad[0]]!r}: fused score {fused[bad[0]]} is not finite")
        order = self.by_docid_descending  # then stable sorts: by score descending, then by query
        order = order[np.argsort(-fused[order], kind="stable")]
        return fused, order[np.argsort(self._query_key[order], kind="stable")]

    def fuse(self, settings: Settings) -> Run:
        """The fused run, each query's documents in trec_eval order."""
        fused, order = self.ranking(settings)
        docs = self.doc_ids[order].tolist()
        values = fused[order].tolist()
        bounds = self.starts.tolist()
        return {qid: dict(zip(docs[a:b], values[a:b])) for qid, a, b in zip(self.qids, bounds, bounds[1:])}

    def judged_grades(self, qrels: Qrels) -> np.ndarray:
        """The grade in ``qrels`` of every document of :attr:`doc_ids` (0 where unjudged)."""
        none: dict[str, int] = {}
        judgments = [qrels.get(q, none) for q in self.qids]
        query_of = self.query_of.tolist()
        return np.fromiter((judgments[q].get(d, 0) for q, d in zip(query_of, self.doc_ids.tolist())),
                           dtype=np.float64, count=len(self.doc_ids))

    def graded(self, settings: Settings, grades: np.ndarray, depth: int | None = None) -> dict[str, np.ndarray]:
        """Each query's fused documents as their ``grades`` (:meth:`judged_grades`), in trec_eval order, the first
        ``depth`` of them: the run :meth:`fuse` gives, cut at ``depth``, as
        :func:`~lsr_eval.evaluation.evaluate_graded` reads it."""
        ranked = grades[self.ranking(settings)[1]]
        bounds = self.starts.tolist()
        return {qid: ranked[a:b if depth is None else min(b, a + depth)]
                for qid, a, b in zip(self.qids, bounds, bounds[1:])}
