"""Tune fusion parameters on training queries, never on the queries that are reported.

Candidates: the grids of ranx's ``optimize_fusion``, each fused as :func:`lsr_eval.fusion.fuse` fuses and scored with
our trec_eval-identical evaluation (ranx's own scoring orders tied fused scores arbitrarily); the methods computed in
:mod:`lsr_eval.fusion.native` are scored from the fused ranking's grades, without building each run.

Design notes: docs/design.md."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Callable, Iterable, Mapping, Sequence

from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import ConfigError
from lsr_eval.evaluation import evaluate, evaluate_graded, parse_measure
from lsr_eval.fusion.fuse import Prepared, check_depth, fuse_prepared, jsonable
from lsr_eval.fusion.methods import (
    DEFAULT_WEIGHT_STEP,
    FusionMethod,
    Settings,
    check_norm,
    check_runs,
    get_method,
    weight_grid,
)
from lsr_eval.fusion.native import supports
from lsr_eval.fusion.ranx_runs import import_ranx, to_ranx, to_ranx_qrels

log = logging.getLogger(__name__)

#: How many overlapping query ids an error lists.
MAX_LISTED = 5


def check_disjoint(tuning: Qrels, reported: Qrels | Iterable[str]) -> None:
    """Refuse to tune on reported queries: the same qrels object, equal qrels, or any shared query id.

    ``reported`` is the qrels (or the query ids) of the split whose results are reported.
    """
    if tuning is reported:
        raise ConfigError("the tuning qrels are the reported qrels (same object): tune on a train/dev split")
    if isinstance(reported, Mapping) and tuning == reported:
        raise ConfigError(f"the tuning qrels equal the reported qrels ({len(tuning)} queries): tune on a train/dev "
                          "split")
    shared = sorted(set(tuning).intersection(reported))
    if shared:
        raise ConfigError(f"{len(shared)} of the {len(tuning)} tuning queries are reported queries too (e.g. "
                          f"{', '.join(shared[:MAX_LISTED])}): tune on queries disjoint from the reported split")


@dataclass(frozen=True, slots=True)
class Tuning:
    """The best parameters found, the score they reach on the tuning queries, and every candidate's score."""

    method: str
    norm: str
    metric: str
    params: dict[str, Any]  #: the best parameters, trained ones included: pass to :func:`lsr_eval.fusion.fuse`
    score: float  #: mean ``metric`` of the best candidate over the tuning qrels (trec_eval -c)
    trials: list[dict[str, Any]] = field(default_factory=list)  #: ``{"params": ..., "score": ...}``, grid order
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (for manifests)."""
        return {"method": self.method, "norm": self.norm, "metric": self.metric, "params": jsonable(self.params),
                "score": self.score, "trials": self.trials, "counts": self.counts}


def _trainer(method: FusionMethod, qrels: Qrels, runs: Sequence[Run]) -> Callable[[Any], dict[str, Any]]:
    """scalar -> trained parameters of ``method`` (empty for untrained methods); what does not depend on the
    scalar (all but ProbFuse's segment count) is estimated once."""
    if not method.trained:
        return lambda _: {}
    if method.name == "mapfuse":
        maps = {"map_scores": [evaluate(qrels, run, ["MAP"])["MAP"] for run in runs]}
        return lambda _: maps
    rf = import_ranx().fusion
    qids = sorted(qrels)  # ranx pairs qrels and runs by position, in sorted query order
    ranx_qrels = to_ranx_qrels(qrels, qids)
    ranx_runs = [to_ranx(run, qids) for run in runs]
    if method.name == "probfuse":
        return lambda n_segments: {"probs": rf.probfuse_train(ranx_qrels, ranx_runs, n_segments)}
    train = {"bayesfuse": rf.bayesfuse_train, "posfuse": rf.posfuse_train, "segfuse": rf.segfuse_train,
             "slidefuse": rf.slidefuse_train}[method.name]
    trained = {method.trained[0]: train(ranx_qrels, ranx_runs)}
    return lambda _: trained


def tune_weights(runs: Sequence[Run], qrels_train: Qrels, method: str = "wsum", norm: str | None = None,
                 metric: str = "nDCG@10", *, reported: Qrels | Iterable[str],
                 step: float = DEFAULT_WEIGHT_STEP, depth: int | None = None) -> Tuning:
    """Tune ``method``'s weights / hyperparameter / trained parameters on ``qrels_train``; return the best.

    ``runs``: the systems' runs on the tuning queries (same systems, same order as the runs later fused for the
    report); only queries judged in ``qrels_train`` are used (a judged query without results counts 0, as trec_eval
    -c). ``reported``: qrels or query ids of the reported split; overlapping queries are refused
    (:func:`check_disjoint`). ``metric``: one measure name (e.g. ``nDCG@10``). ``step``: weight grid step.
    ``depth``: the cut applied to the fused run (as :func:`lsr_eval.fusion.fuse`), so candidates are scored as
    they will be reported.
    """
    check_disjoint(qrels_train, reported)
    m = get_method(method)
    if not m.tunable:
        raise ConfigError(f"{m.name} has no parameter to tune; tunable methods: weighted ones, those with a "
                          "hyperparameter (rrf k, gmnz gamma, logn_isr sigma, rbc phi) and trained ones")
    measure = parse_measure(metric)
    norm = check_norm(m.default_norm if norm is None else norm)
    check_runs(len(runs))
    check_depth(depth)
    judged = [{q: hits for q, hits in run.items() if q in qrels_train and hits} for run in runs]
    counts = {"tuning_queries": len(qrels_train),
              **{f"run{i}_queries_used": len(j) for i, j in enumerate(judged)},
              **{f"run{i}_queries_not_judged": sum(1 for h in run.values() if h) - len(j)
                 for i, (run, j) in enumerate(zip(runs, judged))}}
    if not any(judged):
        raise ConfigError(f"the tuning runs answer none of the {len(qrels_train)} tuning queries: are they runs on "
                          "the tuning split?")
    prepared = Prepared(judged)
    weights = weight_grid(len(runs), step) if m.weighted else [None]
    scalars = m.scalar.grid if m.scalar is not None else [None]
    trainer = _trainer(m, qrels_train, judged)

    native = supports(Settings(m, norm))  # the same for every candidate: it depends on the method and norm only
    grades = prepared.flat.judged_grades(qrels_train) if native else None
    best_score, best_params = -math.inf, {}
    trials: list[dict[str, Any]] = []
    for scalar, w in product(scalars, weights):
        shown = {**({"weights": list(w)} if w is not None else {}),
                 **({m.scalar.name: scalar} if m.scalar is not None else {})}
        settings = Settings(m, norm, {**shown, **trainer(scalar)})
        if native:  # the same ranking as fuse_prepared's run, scored without building it
            graded = prepared.flat.graded(settings, grades, depth)
            score = evaluate_graded(qrels_train, graded, [measure])[measure.name]
        else:
            score = evaluate(qrels_train, fuse_prepared(prepared, settings, depth).run, [measure])[measure.name]
        trials.append({"params": shown, "score": score})
        if score >= best_score:  # the last of equally good candidates wins, as in ranx
            best_score, best_params = score, dict(settings.params)
    log.info("tuned %s (norm %s) on %d queries: %s = %.4f with %s", m.name, norm, len(qrels_train), measure.name,
             best_score, {k: v for k, v in jsonable(best_params).items() if k not in m.trained})
    return Tuning(m.name, norm, measure.name, best_params, best_score, trials, counts)
