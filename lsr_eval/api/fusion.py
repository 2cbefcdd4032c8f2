"""Fusion as one Python call, with everything ``lsr-eval fuse`` does: parameters given, tuned on another split
(:class:`TuneOn`), or chosen by k-fold cross-validation over the reported queries (:class:`CrossValidate`); the fused
run evaluated beside its inputs when qrels are given; written with its manifest when ``out=`` asks for files.

    >>> fused = lsr_eval.run_fusion({"bm25": bm25_run, "splade": splade_run}, "wsum", qrels=ds,
    ...                         tune=lsr_eval.CrossValidate(k=5))
    >>> fused.metrics, fused.tuning["folds"]

The command line parses its options into these arguments and prints what this returns (one implementation).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

from lsr_eval.api.inputs import QrelsLike, RunLike, as_run, judgments, named_runs
from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import ConfigError, OutputExistsError
from lsr_eval.manifest import check_provenance, prepare_output, write_manifest

#: Documents kept per fused query unless ``depth`` says otherwise (Pyserini's fusion default, its ``--k``).
DEFAULT_DEPTH = 1000
#: ``out`` names a run file (not a folder) when it ends with one of these and is not an existing folder.
RUN_FILE_SUFFIXES = (".trec", ".txt", ".run", ".tsv")
#: The measure tuning maximises unless told otherwise.
DEFAULT_TUNE_METRIC = "nDCG@10"


def _default_step() -> float:
    from lsr_eval.fusion.methods import DEFAULT_WEIGHT_STEP

    return DEFAULT_WEIGHT_STEP


@dataclass(frozen=True)
class TuneOn:
    """Tune the method's parameters on another split: its judgments (``qrels``: qrels, a qrels file or a dataset
    spec, with ``split`` for a dataset) and the same systems' runs on its queries (``runs``, in the order of the
    fused runs). Its queries must be disjoint from the reported ones."""

    qrels: QrelsLike
    runs: Sequence[RunLike]
    split: str | None = None
    metric: str = DEFAULT_TUNE_METRIC
    step: float = field(default_factory=_default_step)


@dataclass(frozen=True)
class CrossValidate:
    """Choose the parameters by ``k``-fold cross-validation over the reported queries (each fold fused with what
    the other folds chose): for collections without a train split. ``seed`` assigns the folds."""

    k: int
    seed: int = 0
    metric: str = DEFAULT_TUNE_METRIC
    step: float = field(default_factory=_default_step)


Tune = Union[TuneOn, CrossValidate, None]


@dataclass(frozen=True)
class Spelling:
    """How a refusal names what was given: Python's argument names by default; ``lsr-eval fuse`` passes its options'
    names, so that one check serves both doors."""

    qrels: str = "qrels"
    measures: str = "measures"
    split: str = "split"
    cv: str = "cross-validation"          #: what needs qrels
    tuned_by_cv: str = "tuning"           #: what chooses the parameters, by cross-validation
    tuned_on: str = "tuning"              #: ... or on another split
    tune_runs: str = "tuning runs"
    param: Callable[[str], str] = str     #: a method parameter's name


@dataclass
class Fused:
    """What :func:`run_fusion` made: the fused run, its settings and counts as the manifest records them, how its
    parameters were chosen (``tuning``: None when given), and with qrels the metrics of the fused run and of each
    input (``input_metrics``, in the order of ``names``)."""

    run: Run
    names: list[str]
    method: str
    norm: str
    settings: dict[str, Any]
    counts: dict[str, Any]
    tuning: dict[str, Any] | None
    label: str  #: the parameters in a few words (trained arrays left out), for a printed table
    tag: str = ""  #: the run's tag in its file (default ``fusion-<method>``)
    qrels: Qrels | None = None
    measures: list[str] = field(default_factory=list)
    metrics: dict[str, float] | None = None
    input_metrics: list[dict[str, float]] | None = None
    run_path: Path | None = None  #: where ``out=`` wrote the run
    run_lines: int | None = None  #: the lines it wrote


class _Output:
    """Where the fused run goes: a folder (``run.trec``, ``metrics.json``, ``manifest.json``) or a run file with
    ``<file>.manifest.json`` beside it; checked before any work."""

    def __init__(self, out: str | os.PathLike, experiment: dict[str, Any], overwrite: bool) -> None:
        path = Path(out)
        self.is_file = path.is_file() or (path.suffix in RUN_FILE_SUFFIXES and not path.is_dir())
        if not self.is_file:
            self.folder = prepare_output(path, experiment, overwrite)
            self.run_path, self.manifest_name = self.folder / "run.trec", None
            return
        self.folder, self.run_path, self.manifest_name = path.parent, path, f"{path.name}.manifest.json"
        check_provenance(self.folder)
        taken = [p for p in (path, self.folder / self.manifest_name) if p.exists()]
        if taken and not overwrite:
            raise OutputExistsError(f"{taken[0]} exists; pass --overwrite (overwrite=True) to replace it, or choose "
                                    "another --out")
        if not self.folder.is_dir():
            raise OutputExistsError(f"{self.folder} (the folder of --out {out}) does not exist")

    def manifest_options(self) -> dict[str, Any]:
        return {"manifest_name": self.manifest_name} if self.is_file else {}

    def outputs(self, *names: str) -> list[str]:
        """Output file names for the manifest (a run file names itself only: metrics live in its manifest)."""
        return [self.run_path.name] if self.is_file else list(names)


def _source(run: RunLike, name: str) -> str:
    """How the manifest names an input: a file's absolute path, a run in memory by its name."""
    return str(Path(run).resolve()) if isinstance(run, (str, os.PathLike)) else name


def _short(params: Mapping[str, Any], trained: tuple[str, ...]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items() if k not in trained) or "no parameters"


def _check_tune(tune: Tune, method, params: Mapping[str, Any], runs: int, qrels_given: bool,
                spell: Spelling) -> None:
    """Tuning settings against the method, the parameters given and the runs (before anything is read)."""
    from lsr_eval.evaluation import parse_measure
    from lsr_eval.fusion.cross_validation import check_k

    if tune is None:
        return
    cv = isinstance(tune, CrossValidate)
    if cv and not qrels_given:
        raise ConfigError(f"{spell.cv} needs {spell.qrels} (its folds are the judged queries of the reported split)")
    if params:
        raise ConfigError(f"{spell.tuned_by_cv if cv else spell.tuned_on} chooses {method.name}'s parameters: drop "
                          f"{', '.join(map(spell.param, params))}")
    if cv:
        check_k(tune.k)
    elif len(tune.runs) != runs:
        raise ConfigError(f"{len(tune.runs)} {spell.tune_runs} for {runs} runs: give the same systems' runs on the "
                          "tuning queries, in the same order")
    if not method.tunable:
        raise ConfigError(f"{method.name} has no parameter to tune")
    parse_measure(tune.metric)


def _tune_record(tune: Tune) -> dict[str, Any] | None:
    """The experiment's ``tune``: how the parameters are chosen (None: given)."""
    if isinstance(tune, TuneOn):
        return {"on": str(tune.qrels) if isinstance(tune.qrels, (str, os.PathLike)) else "(in memory)",
                "split": tune.split, "runs": [_source(r, f"tune{i + 1}") for i, r in enumerate(tune.runs)],
                "metric": tune.metric, "step": tune.step}
    if isinstance(tune, CrossValidate):
        return {"cv": tune.k, "seed": tune.seed, "metric": tune.metric, "step": tune.step}
    return None


def run_fusion(runs: Sequence[RunLike] | Mapping[str, RunLike], method: str = "rrf", norm: str | None = None,
               depth: int | None = DEFAULT_DEPTH, params: Mapping[str, Any] | None = None, *,
               qrels: QrelsLike | None = None, split: str | None = None, measures: Sequence[str] | None = None,
               tune: Tune = None, out: str | os.PathLike | None = None, overwrite: bool = False,
               tag: str | None = None, spell: Spelling = Spelling()) -> Fused:
    """Fuse ``runs`` (two or more: runs in memory, TREC files, or a mapping of names to either) with ranx's
    ``method`` (:data:`lsr_eval.fusion.METHODS`), as ``lsr-eval fuse`` does.

    ``norm`` None is the method's default; ``depth`` keeps the first documents of each query (None: all);
    ``params`` are the method's (``{"k": 60}`` for RRF, ``{"weights": [0.3, 0.7]}`` for wsum), or ``tune`` chooses
    them (:class:`TuneOn`, :class:`CrossValidate`). With ``qrels`` (and ``split`` for a dataset spec) the fused run
    and its inputs are evaluated on ``measures`` (default: the dataset's, else nDCG@10, RR@10, R@100, R@1000, MAP).
    ``out``: a folder (``run.trec``, ``metrics.json``, ``manifest.json``) or a run file (its manifest beside it),
    refused when it holds another experiment unless ``overwrite``; ``tag`` names the run in the file. Every setting
    is checked before anything is read or written; ``spell`` names the arguments in those refusals.
    """
    from lsr_eval.evaluation import evaluate, parse_measures
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES
    from lsr_eval.fusion import check_disjoint, check_inputs, cross_validate, fuse, tune_weights
    from lsr_eval.fusion.fuse import jsonable
    from lsr_eval.fusion.methods import Settings, check_norm, get_method

    m = get_method(method)
    params = dict(params or {})
    named = named_runs(runs)
    names = list(named)
    where = [str(r) if isinstance(r, (str, os.PathLike)) else n for n, r in named.items()]  # errors name files
    if qrels is None:
        for what, value in ((spell.measures, measures), (spell.split, split)):
            if value is not None:
                raise ConfigError(f"{what} applies with {spell.qrels} (without {spell.qrels} the fused run is not "
                                  "evaluated)")
    _check_tune(tune, m, params, len(named), qrels is not None, spell)
    if tune is None:
        settings_given = Settings.make(m.name, norm, params, len(named))
        used_norm, given = settings_given.norm, jsonable(settings_given.params)
    else:
        used_norm, given = check_norm(m.default_norm if norm is None else norm), params
    if qrels is None:
        judged, described, parsed = None, None, []
    else:
        asked = parse_measures(measures) if measures else None
        judged, described, official = judgments(qrels, split)
        parsed = asked or parse_measures(official or DEFAULT_MEASURES)
    experiment = {"method": m.name, "norm": used_norm, "params": given, "depth": depth,
                  "inputs": [_source(r, n) for n, r in named.items()], "qrels": described, "tune": _tune_record(tune)}
    loaded = [as_run(r) for r in named.values()]
    check_inputs(loaded, where)  # an empty run, or one of other queries: before anything is written
    reported = judged if judged is not None else {q for r in loaded for q in r}
    tune_qrels = None
    if isinstance(tune, TuneOn):
        tune_qrels, _, _ = judgments(tune.qrels, tune.split)
        check_disjoint(tune_qrels, reported)  # before anything is written
    output = _Output(out, experiment, overwrite) if out is not None else None

    tuned = None
    if isinstance(tune, TuneOn):
        tuned = tune_weights([as_run(r) for r in tune.runs], tune_qrels, m.name, norm, tune.metric,
                             reported=reported, step=tune.step, depth=depth)
        params = tuned.params
    if isinstance(tune, CrossValidate):
        crossed = cross_validate(loaded, judged, m.name, norm, tune.metric, k=tune.k, seed=tune.seed, step=tune.step,
                                 depth=depth, names=where)
        fused = Fused(crossed.run, names, m.name, crossed.norm,
                      {"method": m.name, "norm": crossed.norm, "params": None, "depth": depth,
                       "params_by_fold": "tuning.folds"}, {}, crossed.to_dict(),
                      f"{tune.k}-fold cross-validated, seed {tune.seed}")
    else:
        made = fuse(loaded, m.name, norm, params, depth, names=where)
        settings = made.settings()
        fused = Fused(made.run, names, m.name, made.norm, settings, {"fusion": made.counts.to_dict()},
                      tuned.to_dict() if tuned else None, _short(settings["params"], m.trained))
    if judged is not None:
        fused.qrels, fused.measures = judged, [x.name for x in parsed]
        fused.metrics = evaluate(judged, fused.run, parsed)
        fused.input_metrics = [evaluate(judged, r, parsed) for r in loaded]
    fused.tag = tag or f"fusion-{m.name}"
    if output is not None:
        _write(output, experiment, fused)
    return fused


def _write(output: _Output, experiment: dict[str, Any], fused: Fused) -> None:
    """The fused run, its metrics (a folder) and its manifest."""
    from lsr_eval.evaluation import count_queries, write_metrics
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.runs.trec import write_run

    lines = write_run(fused.run, output.run_path, tag=fused.tag)
    fused.run_path, fused.run_lines = output.run_path, lines
    inputs = experiment["inputs"]
    if fused.metrics is None:
        write_manifest(output.folder, "fuse", experiment, **output.manifest_options(), fusion=fused.settings,
                       counts={**fused.counts, "run_lines": lines}, tuning=fused.tuning,
                       inputs=[{"path": p} for p in inputs], outputs=output.outputs("run.trec"), evaluated=False)
        return
    if not output.is_file:
        write_metrics(output.folder, fused.metrics)
    write_manifest(output.folder, "fuse", experiment, **output.manifest_options(), fusion=fused.settings,
                   counts={**fused.counts, "evaluation": asdict(count_queries(fused.qrels, fused.run)),
                           "run_lines": lines},
                   tuning=fused.tuning, inputs=[{"path": p, "metrics": x} for p, x in zip(inputs, fused.input_metrics)],
                   outputs=output.outputs("run.trec", "metrics.json"), metrics=fused.metrics,
                   measures=fused.measures, evaluation=evaluation_code())


def fuse(runs: Sequence[RunLike] | Mapping[str, RunLike], method: str = "rrf", norm: str | None = None,
         depth: int | None = 1000, *, tune: Any = None, qrels: QrelsLike | None = None, **params: Any) -> Run:
    """The fused run of ``runs`` (two or more) with ranx's ``method`` (:data:`lsr_eval.fusion.METHODS`): ``norm``
    None is the method's default, ``depth`` keeps the first 1,000 documents of each query (None: all), ``params``
    are the method's (``k=60`` for RRF, ``weights=[0.3, 0.7]`` for wsum), or ``tune`` chooses them
    (:class:`~lsr_eval.api.fusion.TuneOn`, or :class:`~lsr_eval.api.fusion.CrossValidate` over ``qrels``). The
    metrics, the chosen parameters and files: :func:`lsr_eval.api.fusion.run_fusion`, of which this is the run."""
    return run_fusion(runs, method, norm, depth, params, qrels=qrels, tune=tune).run
