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

from lsr_eval.data.types import Run
from lsr_eval.fusion.methods import Settings
from lsr_eval.runs.trec import trec_ranking

#: Methods computed here, each with the normalisations it is computed with.
NATIVE: dict[str, tuple[str, ...]] = {"rrf": ("none",), "sum": ("none", "min-max"), "wsum": ("none", "min-max")}


def supports(settings: Settings) -> bool:
    """Whether :func:`native_fuse` computes this method with this normalisation."""
    return settings.norm in NATIVE.get(settings.method.name, ())


def _contributions(scores: np.ndarray, settings: Settings) -> np.ndarray:
    """What each document of one run's query (in trec_eval order) adds to the fused score, before weighting."""
    if settings.method.name == "rrf":
        return 1 / (settings.params["k"] + np.arange(1, len(scores) + 1))
    if settings.norm == "min-max" and len(scores):
        low, high = scores.min(), scores.max()
        return (scores - low) / max(high - low, 1e-9)
    return scores


def native_fuse(ordered: Sequence[tuple[list[list[str]], list[np.ndarray]]], qids: Sequence[str],
                settings: Settings) -> Run:
    """Fuse runs given in trec_eval order (:func:`lsr_eval.fusion.ranx_runs.trec_ordered` of each run over
    ``qids``) with ``settings`` (see the module doc); every query of ``qids`` is in the output."""
    weights = settings.params.get("weights") if settings.method.name == "wsum" else None
    out: Run = {}
    for i, qid in enumerate(qids):
        position: dict[str, int] = {}
        for docs, _ in ordered:
            for d in docs[i]:
                position.setdefault(d, len(position))
        fused = np.zeros(len(position))
        for r, (docs, scores) in enumerate(ordered):
            part = np.zeros(len(position))
            part[[position[d] for d in docs[i]]] = _contributions(scores[i], settings)
            fused = fused + (weights[r] * part if weights is not None else part)
        out[qid] = dict(trec_ranking(dict(zip(position, fused.tolist())), qid))
    return out
