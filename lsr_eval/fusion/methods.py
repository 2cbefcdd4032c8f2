"""The fusion methods of ranx 0.3.21 by name, with their parameters, defaults, tuning grids and citations.

Each entry maps one of our names (ranx's own ``ranx.fuse(method=...)`` names) to what ranx needs. Notation: ``s_r(d)``
is run r's (normalised) score of document d, ``rank_r(d)`` its 1-based rank in trec_eval order, ``n(d)`` the number
of runs retrieving d; a run that does not retrieve d adds nothing (CombSUM-style methods count its score as 0).

Design notes: docs/design.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

import numpy as np

from lsr_eval.errors import ConfigError
from lsr_eval.settings import Setting, SettingError, check

#: Normalisations accepted by :func:`lsr_eval.fusion.fuse` (``none``: scores as they are).
NORMALISATIONS: tuple[str, ...] = ("min-max", "max", "sum", "zmuv", "rank", "borda", "none")
#: Normalisation of score-based methods when none is given (ranx's own default for ``ranx.fuse``).
DEFAULT_SCORE_NORM = "min-max"
#: Normalisation of rank-based methods when none is given: they read only the order, which no normalisation changes.
DEFAULT_RANK_NORM = "none"
#: Step of the weight grid searched by tuning (ranx's ``optimize_fusion`` default).
DEFAULT_WEIGHT_STEP = 0.1

#: Tuning grid of the scalar parameters in (0, 1]: 0.01, 0.02, ..., 1.0 (ranx's ``optimize_*`` defaults).
_UNIT_GRID = tuple(round(i / 100, 2) for i in range(1, 101))
#: Tuning grid of window sizes and segment counts: 1, 2, ..., 100 (ranx's defaults).
_COUNT_GRID = tuple(range(1, 101))

Kind = Literal["score", "rank"]

EXCLUDED: dict[str, str] = {
    "condorcet": "ranx 0.3.21's output depends on PYTHONHASHSEED (candidates come from a Python set)",
    "w_condorcet": "ranx 0.3.21's output depends on PYTHONHASHSEED (candidates come from a Python set)",
    "min-max-inverted": "for distances (lower is better); ranx re-sorts with an unstable sort",
}


@dataclass(frozen=True, slots=True)
class Param:
    """A scalar hyperparameter: its type, default (None: the user must give it or tune it) and tuning grid."""

    name: str
    type: type
    default: float | int | None
    grid: tuple[float | int, ...]
    low: float  #: smallest allowed value
    high: float = math.inf  #: largest allowed value


@dataclass(frozen=True, slots=True)
class FusionMethod:
    """One ranx fusion method (see the module doc for notation)."""

    name: str  #: ours and ranx's
    kind: Kind  #: ``score``: combines score values; ``rank``: reads only each run's order
    formula: str
    citation: str
    scalar: Param | None = None  #: at most one scalar hyperparameter (ranx tunes one per method)
    weighted: bool = False  #: takes one weight per run (``weights``)
    trained: tuple[str, ...] = ()  #: parameters estimated on training qrels (e.g. ``probs``), never given by hand
    train_scalar: bool = False  #: the scalar is a training setting (probfuse's segment count), not passed to ranx

    @property
    def default_norm(self) -> str:
        return DEFAULT_SCORE_NORM if self.kind == "score" else DEFAULT_RANK_NORM

    @property
    def tunable(self) -> bool:
        return self.weighted or self.scalar is not None or bool(self.trained)

    def describe(self) -> str:
        return f"{self.name}: {self.formula} ({self.citation})"


_FOX_SHAW = "Fox & Shaw, TREC-2 1994"
_LILLIS = "Lillis et al., SIGIR 2010"
_MOURAO = "Mourão, Martins & Magalhães, CMIG 2015"

METHODS: dict[str, FusionMethod] = {m.name: m for m in (
    FusionMethod("rrf", "rank", "sum_r 1 / (k + rank_r(d))", "Cormack, Clarke & Büttcher, SIGIR 2009",
                 scalar=Param("k", int, 60, tuple(range(10, 101, 10)), low=0)),
    FusionMethod("wsum", "score", "sum_r w_r s_r(d)", "weighted CombSUM", weighted=True),
    FusionMethod("sum", "score", "CombSUM: sum_r s_r(d)", _FOX_SHAW),
    FusionMethod("mnz", "score", "CombMNZ: n(d) sum_r s_r(d)", _FOX_SHAW),
    FusionMethod("anz", "score", "CombANZ: sum_r s_r(d) / n(d)", _FOX_SHAW),
    FusionMethod("max", "score", "CombMAX: max_r s_r(d)", _FOX_SHAW),
    FusionMethod("min", "score", "CombMIN: min_r s_r(d) over all runs (a run without d gives 1e9)", _FOX_SHAW),
    FusionMethod("med", "score", "CombMED: median of the s_r(d) of the runs retrieving d", _FOX_SHAW),
    FusionMethod("gmnz", "score", "CombGMNZ: n(d)^gamma sum_r s_r(d)", "Lee, SIGIR 1997",
                 scalar=Param("gamma", float, None, _UNIT_GRID, low=0)),
    FusionMethod("wmnz", "score", "WMNZ: (sum_r s_r(d)) (sum of the weights of the runs retrieving d)",
                 "Wu & McClean, CIKM 2002", weighted=True),
    FusionMethod("mixed", "score", "sqrt(n(d)) sum_r w_r s_r(d)", "Wu & McClean, CIKM 2002", weighted=True),
    FusionMethod("isr", "rank", "ISR: n(d) sum_r 1 / rank_r(d)^2", _MOURAO),
    FusionMethod("log_isr", "rank", "log(n(d)) sum_r 1 / rank_r(d)^2", _MOURAO),
    FusionMethod("logn_isr", "rank", "log(n(d) + sigma) sum_r 1 / rank_r(d)^2", _MOURAO,
                 scalar=Param("sigma", float, 0.01, _UNIT_GRID, low=0)),
    FusionMethod("bordafuse", "rank", "Borda count: sum_r (candidates - rank_r(d) + 1), unranked share the rest",
                 "Aslam & Montague, SIGIR 2001"),
    FusionMethod("w_bordafuse", "rank", "weighted Borda count: sum_r w_r (candidates - rank_r(d) + 1)",
                 "Aslam & Montague, SIGIR 2001", weighted=True),
    FusionMethod("rbc", "rank", "rank-biased centroid: sum_r (1 - phi) phi^(rank_r(d) - 1)",
                 "Bailey, Moffat, Scholer & Thomas, SIGIR 2017", scalar=Param("phi", float, None, _UNIT_GRID,
                                                                             low=0, high=1)),
    FusionMethod("bayesfuse", "rank", "sum_r log-odds of relevance in the rank band (1-5, 6-10, ...) of rank_r(d) "
                 "(estimated on training qrels); a run without d adds log(0.001 / 0.999), not 0",
                 "Aslam & Montague, SIGIR 2001", trained=("log_odds",)),
    FusionMethod("posfuse", "rank", "sum_r P(relevant | rank_r(d)) (estimated on training qrels)", _LILLIS,
                 trained=("probs",)),
    FusionMethod("mapfuse", "rank", "sum_r MAP_r / rank_r(d), MAP_r of run r on the training qrels", _LILLIS,
                 trained=("map_scores",)),
    FusionMethod("probfuse", "rank", "sum_r P(relevant | segment of rank_r(d)) / segment number, n_segments "
                 "segments", "Lillis, Toolan, Collier & Dunnion, SIGIR 2006", trained=("probs",),
                 scalar=Param("n_segments", int, None, _COUNT_GRID, low=1), train_scalar=True),
    FusionMethod("segfuse", "score", "sum_r P(relevant | segment of rank_r(d)) (s_r(d) + 1), segments of growing "
                 "size", "Shokouhi, ECIR 2007", trained=("probs",)),
    FusionMethod("slidefuse", "rank", "sum_r mean of P(relevant | rank) over a window of +-w ranks around "
                 "rank_r(d)", "Lillis, Zhang, Toolan, Collier, Leonard & Dunnion, ECIR 2008", trained=("probs",),
                 scalar=Param("w", int, None, _COUNT_GRID, low=0)),
)}


def get_method(name: str) -> FusionMethod:
    """The method called ``name``; an unknown name is a ConfigError listing the known ones."""
    method = METHODS.get(name)
    if method is None:
        why = f" ({EXCLUDED[name]})" if name in EXCLUDED else ""
        raise ConfigError(f"unknown fusion method {name!r}{why}; known: {', '.join(METHODS)}")
    return method


def check_norm(norm: str) -> str:
    """``norm`` if it is one of :data:`NORMALISATIONS`, else a ConfigError listing them."""
    if norm not in NORMALISATIONS:
        why = f" ({EXCLUDED[norm]})" if norm in EXCLUDED else ""
        raise ConfigError(f"unknown normalisation {norm!r}{why}; allowed: {', '.join(NORMALISATIONS)}")
    return norm


#: Runs fused together.
RUNS = Setting(help="runs fused together", ge=2, unit="runs")
#: A method's numeric parameter; a run's weight (weighted methods; not all zero).
NUMBER = Setting(help="a finite number")
WEIGHT = Setting(help="a run's weight (not all zero)", ge=0)
WEIGHTS = Setting(help="one weight per run, in the runs' order")
#: The grid step of tuned weights (it must divide 1).
WEIGHT_STEP = Setting(help="the step of the tuned weights' grid (it must divide 1: 0.1, 0.05, 0.25)", gt=0, le=1)


def check_runs(n_runs: int) -> int:
    """The number of runs fused together: two or more."""
    return check("runs", n_runs, int, RUNS)


def check_weights(method: str, weights: Any, n_runs: int) -> list[float]:
    """One finite, non-negative weight per run, not all zero."""
    check("weights", weights, list | tuple, WEIGHTS, method)
    if len(weights) != n_runs:
        raise ConfigError(f"{method}: {len(weights)} weights for {n_runs} runs; give one weight per run")
    out = [float(check("weight", w, float, WEIGHT, method)) for w in weights]
    if not any(out):
        raise ConfigError(f"{method}: weights must not all be zero, got {out}")
    return out


def resolve_params(method: FusionMethod, params: Mapping[str, Any] | None, n_runs: int) -> dict[str, Any]:
    """Complete and validate ``params`` for ``method`` fusing ``n_runs`` runs (defaults filled in).

    Unknown names, missing required values (weights, a scalar without default, trained parameters) and out-of-range
    values are ConfigErrors that say what to give.
    """
    params = dict(params or {})
    allowed = [*(["weights"] if method.weighted else []), *([method.scalar.name] if method.scalar else []),
               *method.trained]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ConfigError(f"{method.name} takes no parameter {', '.join(unknown)}; its parameters: "
                          f"{', '.join(allowed) or 'none'}")
    out: dict[str, Any] = {}
    if method.weighted:
        if "weights" not in params:
            raise ConfigError(f"{method.name} needs one weight per run (--weights) or tuning (--tune-on)")
        out["weights"] = check_weights(method.name, params["weights"], n_runs)
    if method.scalar is not None:
        p = method.scalar
        value = params.get(p.name, p.default)
        if value is None:
            raise ConfigError(f"{method.name} needs {p.name} (--param {p.name}=VALUE) or tuning (--tune-on); "
                              f"tuning searches {p.grid[0]}..{p.grid[-1]}")
        value = check(p.name, value, float, NUMBER, method.name)
        if p.type is int:
            if value != int(value):
                raise ConfigError(f"{method.name}: {p.name}={value!r} must be an integer")
            value = int(value)
        if not p.low <= value <= p.high:
            raise ConfigError(f"{method.name}: {p.name}={value!r} must be in [{p.low}, {p.high}]")
        out[p.name] = value
    for name in method.trained:
        if name not in params:
            raise ConfigError(f"{method.name} estimates {name} on training qrels: tune it (--tune-on) first")
        value = params[name]
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != n_runs:
            raise ConfigError(f"{method.name}: {name} must hold one entry per run ({n_runs})")
        out[name] = value
    return out


def ranx_params(method: FusionMethod, params: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the ranx function (training-only settings dropped, arrays as float64)."""
    out = {k: v for k, v in params.items() if not (method.train_scalar and method.scalar and k == method.scalar.name)}
    for name in method.trained:
        if name == "map_scores":
            out[name] = [float(v) for v in out[name]]
        else:
            out[name] = [np.asarray(v, dtype=np.float64) for v in out[name]]
    return out


def weight_grid(n_runs: int, step: float = DEFAULT_WEIGHT_STEP) -> list[tuple[float, ...]]:
    """Every weight vector with entries in {0, step, 2 step, ..., 1} summing to 1, in lexicographic order.

    ranx's ``optimize_weights`` enumerates the same vectors but keeps those whose float sum ``== 1.0``, which drops
    some for three runs or more (0.1 + 0.2 + 0.7 != 1.0 in floats); here the sum is taken in integer steps.
    """
    units = 1 / check("weight step", step, float, WEIGHT_STEP)
    if not math.isclose(units, round(units), rel_tol=0, abs_tol=1e-9):
        raise SettingError("weight step", "1 divided by a whole number (e.g. 0.1, 0.05, 0.25)", step)
    units = round(units)

    def compositions(total: int, parts: int) -> list[tuple[int, ...]]:
        if parts == 1:
            return [(total,)]
        return [(i, *rest) for i in range(total + 1) for rest in compositions(total - i, parts - 1)]

    return [tuple(i / units for i in c) for c in compositions(units, n_runs)]  # i / units: 3 / 10 == 0.3


@dataclass(frozen=True, slots=True)
class Settings:
    """A resolved fusion configuration: method, normalisation, parameters."""

    method: FusionMethod
    norm: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def make(cls, method: str, norm: str | None, params: Mapping[str, Any] | None, n_runs: int) -> Settings:
        m = get_method(method)
        check_runs(n_runs)
        return cls(m, check_norm(m.default_norm if norm is None else norm), resolve_params(m, params, n_runs))
