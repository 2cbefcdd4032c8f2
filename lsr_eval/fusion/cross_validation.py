"""K-fold cross-validation of a tuned fusion over the queries of the reported split, for collections without a
training split (TREC DL: 43 judged queries, no train or dev).

Folds: the judged queries (the qrels' ids, sorted) are permuted with ``numpy.random.default_rng(seed)`` and dealt
into ``k`` folds whose sizes differ by at most one (``numpy.array_split``); queries that some run answers but the
qrels do not judge are permuted and dealt the same way, after them (they are fused, never scored). For each fold f,
:func:`lsr_eval.fusion.tune.tune_weights` chooses the parameters on the judged queries of the other folds (runs and
qrels restricted to them; fold f is the ``reported`` set, so an overlap is refused), and fold f's queries are fused
with those parameters. The reported run is the union of the ``k`` fused folds: no query's fused ranking depends on
its own judgments (Hastie, Tibshirani & Friedman, *The Elements of Statistical Learning*, 2nd ed., section 7.10).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import ConfigError
from lsr_eval.fusion.fuse import FusionCounts, Prepared, check_inputs, fuse_prepared, jsonable
from lsr_eval.fusion.methods import DEFAULT_WEIGHT_STEP, Settings, check_norm, get_method
from lsr_eval.fusion.tune import Tuning, tune_weights
from lsr_eval.settings import check
from lsr_eval.settings.shared import DEFAULT_FOLD_SEED, FOLD_SEED, FOLDS

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Fold:
    """One fold: its queries (judged, then unjudged), the tuning on the other folds, and its fusion's counts."""

    judged: list[str]
    unjudged: list[str]
    tuning: Tuning
    counts: FusionCounts | None  #: None when no run has a document for the fold's queries

    def to_dict(self) -> dict[str, Any]:
        tuned = {k: v for k, v in jsonable(self.tuning.params).items()}
        return {"judged_queries": self.judged, "unjudged_queries": self.unjudged, "params": tuned,
                "tuning_score": self.tuning.score, "tuning_queries": self.tuning.counts.get("tuning_queries"),
                "counts": self.counts.to_dict() if self.counts else None}


@dataclass(frozen=True, slots=True)
class CrossValidated:
    """The fused run assembled from the held-out folds, and how it was made."""

    run: Run
    method: str
    norm: str
    metric: str
    k: int
    seed: int
    step: float
    depth: int | None
    folds: list[Fold]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record (for manifests): settings, seed, every fold's queries, parameters and scores."""
        return {"cv": self.k, "seed": self.seed, "method": self.method, "norm": self.norm, "metric": self.metric,
                "step": self.step, "depth": self.depth, "assignment": "numpy.random.default_rng(seed).permutation "
                "of the sorted judged query ids, then of the unjudged ones, each split by numpy.array_split",
                "folds": [f.to_dict() for f in self.folds]}


def assign_folds(judged: Sequence[str], unjudged: Sequence[str], k: int, seed: int) -> list[tuple[list[str],
                                                                                                  list[str]]]:
    """``k`` folds of (judged, unjudged) query ids, drawn as the module doc says (inputs are sorted first)."""
    rng = np.random.default_rng(seed)
    out: list[tuple[list[str], list[str]]] = [([], []) for _ in range(k)]
    for part, ids in enumerate((sorted(judged), sorted(unjudged))):
        shuffled = [ids[i] for i in rng.permutation(len(ids)).tolist()]
        for fold, chunk in zip(out, np.array_split(np.arange(len(shuffled)), k)):
            fold[part].extend(shuffled[i] for i in chunk.tolist())
    return out


def check_k(k: Any, judged: int | None = None) -> int:
    """``k`` is an integer >= 2 and (when ``judged`` is given) at most the number of judged queries."""
    check("k", k, int, FOLDS)
    if judged is not None and k > judged:
        raise ConfigError(f"cross-validation with {k} folds over {judged} judged queries: at most one fold per query")
    return k


def cross_validate(runs: Sequence[Run], qrels: Qrels, method: str = "wsum", norm: str | None = None,
                   metric: str = "nDCG@10", *, k: int, seed: int = DEFAULT_FOLD_SEED, step: float = DEFAULT_WEIGHT_STEP,
                   depth: int | None = None, names: Sequence[str] | None = None) -> CrossValidated:
    """Fuse ``runs`` (on the reported queries) with parameters chosen by ``k``-fold cross-validation over the
    queries of ``qrels`` (see the module doc). ``metric``, ``step`` and ``depth`` are those of
    :func:`~lsr_eval.fusion.tune.tune_weights`; ``names`` name the runs in errors."""
    m = get_method(method)
    norm = check_norm(m.default_norm if norm is None else norm)
    if not qrels:
        raise ConfigError("cross-validation needs the qrels of the reported queries; they hold none")
    check_k(k, len(qrels))
    check("seed", seed, int, FOLD_SEED)
    check_inputs(runs, names)
    answered = {q for run in runs for q, hits in run.items() if hits}
    folds = []
    fused: Run = {}
    for judged, unjudged in assign_folds(list(qrels), sorted(answered - qrels.keys()), k, seed):
        held_out = set(judged) | set(unjudged)
        train_qrels = {q: j for q, j in qrels.items() if q not in held_out}
        train_runs = [{q: hits for q, hits in run.items() if q in train_qrels} for run in runs]
        tuning = tune_weights(train_runs, train_qrels, m.name, norm, metric, reported=held_out, step=step,
                              depth=depth)
        fold_runs = [{q: hits for q, hits in run.items() if q in held_out} for run in runs]
        counts = None
        if any(hits for run in fold_runs for hits in run.values()):
            fusion = fuse_prepared(Prepared(fold_runs), Settings.make(m.name, norm, tuning.params, len(runs)), depth)
            fused.update(fusion.run)
            counts = fusion.counts
        folds.append(Fold(judged, unjudged, tuning, counts))
        log.info("fold %d/%d: %d judged queries held out, %s tuned on %d: %s = %.4f", len(folds), k, len(judged),
                 {p: v for p, v in jsonable(tuning.params).items() if p not in m.trained}, len(train_qrels),
                 tuning.metric, tuning.score)
    order = [q for run in runs for q in run]  # the inputs' query order, as an uncut fusion keeps it
    run = {q: fused[q] for q in dict.fromkeys(order) if q in fused}
    return CrossValidated(run, m.name, norm, tuning.metric, k, seed, step, depth, folds)
