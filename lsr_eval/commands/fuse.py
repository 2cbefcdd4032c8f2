"""``lsr-eval fuse RUN RUN ...``: fuse runs with ranx (RRF, weighted sum, ...), evaluate the fused run when given
``--qrels`` (without them, the fused run is written and not evaluated, as Pyserini's ``pyserini.fusion``), and
optionally tune the fusion on training queries disjoint from the reported ones (``--tune-on``), or by k-fold
cross-validation over the reported queries (``--tune-cv K``).

Pyserini's habits: ``--rrf.k`` is RRF's constant and the output depth defaults to 1,000 (``--depth``; Pyserini's
``--k``). A bare ``--k`` is refused with both meanings spelled out: lsr-eval once read it as RRF's constant, Pyserini
reads it as the depth, and guessing would silently change one or the other. ``--out`` is a folder (``run.trec``,
``metrics.json``, ``manifest.json``) or a run file (``--out fused.trec``: the run there, ``fused.trec.manifest.json``
beside it, metrics in the manifest).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsr_eval.commands._common import print_metric_rows
from lsr_eval.errors import ConfigError

NAME = "fuse"
HELP = ("Fuse TREC runs with ranx (rrf, wsum, ...), evaluate (with --qrels), optionally tune on a train/dev split or "
        "by cross-validation.")

#: Documents kept per fused query unless ``--depth`` says otherwise (Pyserini's fusion default, its ``--k``).
DEFAULT_DEPTH = 1000
#: ``--out`` names a run file (not a folder) when it ends with one of these and is not an existing folder.
RUN_FILE_SUFFIXES = (".trec", ".txt", ".run", ".tsv")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES
    from lsr_eval.fusion.methods import DEFAULT_WEIGHT_STEP, METHODS, NORMALISATIONS

    p.add_argument("runs", metavar="RUN", nargs="+", help="TREC runs to fuse (two or more)")
    p.add_argument("--qrels", metavar="DATASET_OR_QRELS",
                   help="qrels of the reported split: a qrels file (TREC or BEIR TSV) or a dataset (registry name, "
                        "irds:<id>, BEIR folder); without it the fused run is written, not evaluated")
    p.add_argument("--split", help="split of a BEIR folder given as --qrels (default: test)")
    p.add_argument("--method", default="rrf", help=f"fusion method (default rrf): {', '.join(METHODS)}")
    p.add_argument("--norm", help=f"score normalisation: {', '.join(NORMALISATIONS)} (default: min-max for "
                                  "score-based methods, none for rank-based ones)")
    p.add_argument("--weights", nargs="+", type=float, metavar="W", help="one weight per run (wsum, wmnz, mixed, "
                                                                        "w_bordafuse)")
    p.add_argument("--rrf.k", dest="rrf_k", type=int, metavar="K", help="RRF's constant k (default 60)")
    p.add_argument("--k", dest="bare_k", metavar="K", help="refused: ambiguous (Pyserini's output depth, lsr-eval's "
                                                           "former RRF constant); use --depth or --rrf.k")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="another method parameter, e.g. gamma=0.5 (gmnz), phi=0.8 (rbc), sigma=0.01 (logn_isr)")
    p.add_argument("--depth", type=_depth, default=DEFAULT_DEPTH,
                   help=f"keep the first DEPTH documents of each fused query (default {DEFAULT_DEPTH}, as Pyserini's "
                        "--k; 'all' keeps every document)")
    p.add_argument("--measures", nargs="+", metavar="MEASURE",
                   help=f"measures (default: the dataset's, else {' '.join(DEFAULT_MEASURES)})")
    p.add_argument("--tune-on", metavar="DATASET_OR_QRELS",
                   help="tune weights / parameters on these qrels (a train or dev split, disjoint from --qrels)")
    p.add_argument("--tune-split", help="split of a BEIR folder given as --tune-on (e.g. train)")
    p.add_argument("--tune-runs", nargs="+", metavar="RUN",
                   help="the same systems' runs on the tuning queries, in the order of RUN")
    p.add_argument("--tune-cv", type=int, metavar="K",
                   help="choose weights / parameters by K-fold cross-validation over the --qrels queries: each "
                        "fold fused with what the other folds chose (for collections without a train split)")
    p.add_argument("--tune-seed", type=int, default=None, metavar="SEED",
                   help="seed of the --tune-cv fold assignment (default 0; recorded in the manifest)")
    p.add_argument("--tune-metric", default="nDCG@10", help="measure maximised by tuning (default nDCG@10)")
    p.add_argument("--tune-step", type=float, default=DEFAULT_WEIGHT_STEP,
                   help=f"weight grid step (default {DEFAULT_WEIGHT_STEP})")
    p.add_argument("--tag", help="run tag in run.trec (default fusion-METHOD)")
    p.add_argument("--out", required=True,
                   help="output folder (run.trec, metrics.json, manifest.json), or a run file ending in "
                        f"{', '.join(RUN_FILE_SUFFIXES)} (its manifest beside it, FILE.manifest.json)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an output folder holding another experiment, or an existing run file")


def _depth(text: str) -> int | None:
    """``--depth``: a positive integer, or ``all`` (None: every document)."""
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer or 'all'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: expected a positive integer or 'all'")
    return value


def resolve_qrels(spec: str, split: str | None, option: str) -> tuple[dict, dict[str, Any], tuple[str, ...] | None]:
    """Qrels from a qrels file or a dataset spec: (qrels, description for the manifest, the dataset's measures)."""
    from lsr_eval.api.runs import read_qrels_spec

    if split is not None and Path(spec).is_file():
        raise ConfigError(f"{option} {spec!r} is a qrels file: its split option applies to BEIR folders only")
    qrels, measures, described = read_qrels_spec(spec, split)
    return qrels, described, measures


def _params(args: argparse.Namespace) -> dict[str, Any]:
    """Parameters given on the command line (--weights, --k, --param NAME=VALUE)."""
    params: dict[str, Any] = {}
    for item in args.param:
        name, eq, text = item.partition("=")
        if not eq or not name.strip():
            raise ConfigError(f"--param {item!r}: expected NAME=VALUE")
        try:
            value: Any = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise ConfigError(f"--param {item!r}: {text!r} is not a number") from None
        params[name.strip()] = value
    if args.weights is not None:
        params["weights"] = list(args.weights)
    if args.rrf_k is not None:
        params["k"] = args.rrf_k
    return params


def _check_bare_k(args: argparse.Namespace) -> None:
    """``--k`` means two things to two tools: refuse it, naming both (see the module doc)."""
    if args.bare_k is not None:
        raise ConfigError(f"--k {args.bare_k} is ambiguous: in Pyserini's fusion --k is the output depth (here "
                          f"--depth, default {DEFAULT_DEPTH}), while lsr-eval used --k for RRF's constant (here "
                          "--rrf.k, default 60); give --depth N and/or --rrf.k K")


class _Output:
    """Where the fused run goes: a folder (``run.trec``, ``metrics.json``, ``manifest.json``) or a run file with
    ``<file>.manifest.json`` beside it (see the module doc); checked before any work."""

    def __init__(self, out: str, experiment: dict[str, Any], overwrite: bool) -> None:
        from lsr_eval.errors import OutputExistsError
        from lsr_eval.manifest import check_provenance, prepare_output

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
            raise OutputExistsError(f"{taken[0]} exists; pass --overwrite to replace it, or choose another --out")
        if not self.folder.is_dir():
            raise OutputExistsError(f"{self.folder} (the folder of --out {out}) does not exist")

    def manifest_options(self) -> dict[str, Any]:
        """``write_manifest``'s file name for a run file's manifest (beside it); nothing for a folder."""
        return {"manifest_name": self.manifest_name} if self.is_file else {}

    def outputs(self, *names: str) -> list[str]:
        """Output file names for the manifest (a run file names itself only: metrics live in its manifest)."""
        return [self.run_path.name] if self.is_file else list(names)


@dataclass
class _Tuning:
    """How the method's parameters are chosen (given, tuned on another split, or cross-validated), checked before
    anything is read."""

    asked: bool   # --tune-on / --tune-runs: tuned on another split
    cv: bool      # --tune-cv: cross-validated over the reported queries
    seed: int
    norm: str
    given: Any    # the parameters the experiment records (the tuned ones are chosen later)


@dataclass
class _Fused:
    """The fused run and what the manifest and the printed label say of how it was made."""

    run: dict[str, dict[str, float]]
    settings: dict[str, Any]
    counts: dict[str, Any]
    tuning: dict[str, Any] | None
    label_params: str


def _check_cv(args: argparse.Namespace, tuning_asked: bool) -> None:
    """``--tune-cv`` excludes tuning on another split and needs ``--qrels``; ``--tune-seed`` needs ``--tune-cv``."""
    from lsr_eval.fusion.cross_validation import check_k

    if args.tune_cv is not None:
        if tuning_asked:
            raise ConfigError("--tune-cv chooses the parameters on the --qrels queries themselves, fold by fold; "
                              "--tune-on/--tune-runs tune on another split: give one or the other")
        if args.qrels is None:
            raise ConfigError("--tune-cv needs --qrels (its folds are the judged queries of the reported split)")
        check_k(args.tune_cv)
    elif args.tune_seed is not None:
        raise ConfigError("--tune-seed applies with --tune-cv")


def _check_tuned(args: argparse.Namespace, method, params: dict[str, Any], tuning_asked: bool, cv: bool) -> None:
    """A tuned fusion: both tuning options, no parameter given by hand, one tuning run per run, a tunable method
    and a known metric."""
    from lsr_eval.evaluation import parse_measure

    if tuning_asked and (args.tune_on is None or args.tune_runs is None):
        raise ConfigError("tuning needs both --tune-on (qrels of the tuning split) and --tune-runs (the runs "
                          "on its queries)")
    if params:
        raise ConfigError(f"{'--tune-cv' if cv else '--tune-on'} chooses {args.method}'s parameters: drop "
                          f"{', '.join(_option(k) for k in params)}")
    if tuning_asked and len(args.tune_runs) != len(args.runs):
        raise ConfigError(f"{len(args.tune_runs)} --tune-runs for {len(args.runs)} runs: give the same systems' "
                          "runs on the tuning queries, in the same order")
    if not method.tunable:
        raise ConfigError(f"{method.name} has no parameter to tune")
    parse_measure(args.tune_metric)


def _tuning(args: argparse.Namespace, method, params: dict[str, Any]) -> _Tuning:
    """The tuning options checked against each other and the method; untuned, the settings are checked too (bad
    settings fail before anything is read)."""
    from lsr_eval.fusion.cross_validation import DEFAULT_SEED
    from lsr_eval.fusion.fuse import jsonable
    from lsr_eval.fusion.methods import Settings, check_norm

    tuning_asked = args.tune_on is not None or args.tune_runs is not None
    cv = args.tune_cv is not None
    _check_cv(args, tuning_asked)
    seed = DEFAULT_SEED if args.tune_seed is None else args.tune_seed
    if tuning_asked or cv:
        _check_tuned(args, method, params, tuning_asked, cv)
        norm, given = check_norm(method.default_norm if args.norm is None else args.norm), params
    elif args.tune_split is not None:
        raise ConfigError("--tune-split applies with --tune-on")
    else:
        settings = Settings.make(method.name, args.norm, params, len(args.runs))
        norm, given = settings.norm, jsonable(settings.params)
    return _Tuning(tuning_asked, cv, seed, norm, given)


def _reported_qrels(args: argparse.Namespace) -> tuple[dict | None, dict[str, Any] | None, list]:
    """The ``--qrels`` to evaluate on (none: the run is not evaluated, and evaluation options are refused): (qrels,
    description, parsed measures)."""
    from lsr_eval.evaluation import parse_measures
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES

    if args.qrels is None:
        for option, value in (("--measures", args.measures), ("--split", args.split)):
            if value is not None:
                raise ConfigError(f"{option} applies with --qrels (without --qrels the fused run is not evaluated)")
        return None, None, []
    qrels, qrels_desc, dataset_measures = resolve_qrels(args.qrels, args.split, "--qrels")
    return qrels, qrels_desc, parse_measures(args.measures or dataset_measures or DEFAULT_MEASURES)


def _tune_record(args: argparse.Namespace, tuning: _Tuning) -> dict[str, Any] | None:
    """The experiment's ``tune``: how the parameters are chosen (None: given)."""
    if tuning.asked:
        return {"on": args.tune_on, "split": args.tune_split, "runs": [str(Path(r).resolve()) for r in args.tune_runs],
                "metric": args.tune_metric, "step": args.tune_step}
    if tuning.cv:
        return {"cv": args.tune_cv, "seed": tuning.seed, "metric": args.tune_metric, "step": args.tune_step}
    return None


def _fuse_runs(args: argparse.Namespace, method, params: dict[str, Any], tuning: _Tuning, runs: list, qrels,
               tune_qrels, reported) -> _Fused:
    """Fuse the runs: cross-validated, or with parameters given or tuned on the tuning split."""
    from lsr_eval.fusion import fuse, tune_weights
    from lsr_eval.fusion.cross_validation import cross_validate
    from lsr_eval.runs.trec import read_run

    tuned = None
    if tune_qrels is not None:
        tuned = tune_weights([read_run(r) for r in args.tune_runs], tune_qrels, method.name, args.norm,
                             args.tune_metric, reported=reported, step=args.tune_step, depth=args.depth)
        params = tuned.params
    if tuning.cv:
        crossed = cross_validate(runs, qrels, method.name, args.norm, args.tune_metric, k=args.tune_cv,
                                 seed=tuning.seed, step=args.tune_step, depth=args.depth, names=args.runs)
        settings = {"method": method.name, "norm": crossed.norm, "params": None, "depth": args.depth,
                    "params_by_fold": "tuning.folds"}
        return _Fused(crossed.run, settings, {}, crossed.to_dict(),
                      f"{args.tune_cv}-fold cross-validated, seed {tuning.seed}")
    fusion = fuse(runs, method.name, args.norm, params, args.depth, names=args.runs)
    settings = fusion.settings()
    return _Fused(fusion.run, settings, {"fusion": fusion.counts.to_dict()}, tuned.to_dict() if tuned else None,
                  _short(settings["params"], method.trained))


def _write_evaluated(output: _Output, experiment: dict[str, Any], fused: _Fused, runs: list, inputs: list[str],
                     qrels, measures: list, lines: int) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Evaluate the fused run and its inputs on the qrels and write the metrics and manifest: (fused metrics, each
    input's metrics)."""
    from dataclasses import asdict

    from lsr_eval.evaluation import count_queries, evaluate, write_metrics
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.manifest import write_manifest

    metrics = evaluate(qrels, fused.run, measures)
    if not output.is_file:
        write_metrics(output.folder, metrics)
    input_metrics = [evaluate(qrels, r, measures) for r in runs]
    write_manifest(output.folder, "fuse", experiment, **output.manifest_options(), fusion=fused.settings,
                   counts={**fused.counts, "evaluation": asdict(count_queries(qrels, fused.run)), "run_lines": lines},
                   tuning=fused.tuning,
                   inputs=[{"path": p, "metrics": m} for p, m in zip(inputs, input_metrics)],
                   outputs=output.outputs("run.trec", "metrics.json"), metrics=metrics,
                   measures=[m.name for m in measures], evaluation=evaluation_code())
    return metrics, input_metrics


def _print_metrics(args: argparse.Namespace, label: str, metrics: dict[str, float],
                   input_metrics: list[dict[str, float]], qrels, names: list[str], run_path: Path) -> None:
    """The inputs' and the fused run's metrics as a table on stdout, then where the fused run went."""
    files = [Path(p).name for p in args.runs]
    labels = files if len(set(files)) == len(files) else list(args.runs)  # file names if they tell runs apart
    print(f"qrels {args.qrels}: {len(qrels)} judged queries (trec_eval -c means)")
    print_metric_rows([*zip(labels, input_metrics), (label, metrics)], names, min_width=0)
    print(f"-> {run_path}")


def run(args: argparse.Namespace) -> int:
    """Fuse the runs, write the fused run and its manifest, and with ``--qrels`` evaluate it beside its inputs;
    every option is checked before anything is read or written."""
    from lsr_eval.fusion import check_disjoint, check_inputs
    from lsr_eval.fusion.methods import get_method
    from lsr_eval.manifest import write_manifest
    from lsr_eval.runs.trec import read_run, write_run

    _check_bare_k(args)
    method = get_method(args.method)
    params = _params(args)
    tuning = _tuning(args, method, params)
    qrels, qrels_desc, measures = _reported_qrels(args)
    inputs = [str(Path(r).resolve()) for r in args.runs]
    experiment = {"method": method.name, "norm": tuning.norm, "params": tuning.given, "depth": args.depth,
                  "inputs": inputs, "qrels": qrels_desc, "tune": _tune_record(args, tuning)}
    runs = [read_run(r) for r in args.runs]
    check_inputs(runs, args.runs)  # an empty run, or one of other queries: before anything is written
    # The reported queries: those of the qrels, else every query of the fused runs.
    reported = qrels if qrels is not None else {q for r in runs for q in r}
    tune_qrels = None
    if tuning.asked:
        tune_qrels, _, _ = resolve_qrels(args.tune_on, args.tune_split, "--tune-on")
        check_disjoint(tune_qrels, reported)  # before anything is written
    output = _Output(args.out, experiment, args.overwrite)

    fused = _fuse_runs(args, method, params, tuning, runs, qrels, tune_qrels, reported)
    tag = args.tag or f"fusion-{method.name}"
    lines = write_run(fused.run, output.run_path, tag=tag)
    if qrels is None:
        write_manifest(output.folder, "fuse", experiment, **output.manifest_options(), fusion=fused.settings,
                       counts={**fused.counts, "run_lines": lines}, tuning=fused.tuning,
                       inputs=[{"path": p} for p in inputs], outputs=output.outputs("run.trec"), evaluated=False)
        print(f"fused {len(runs)} runs ({tuning.norm}; {fused.label_params}): {len(fused.run)} queries, {lines} "
              f"lines -> {output.run_path} (not evaluated: no --qrels)")
        return 0
    metrics, input_metrics = _write_evaluated(output, experiment, fused, runs, inputs, qrels, measures, lines)
    _print_metrics(args, f"{tag} ({tuning.norm}; {fused.label_params})", metrics, input_metrics, qrels,
                   [m.name for m in measures], output.run_path)
    return 0


def _option(param: str) -> str:
    """The command-line option that gives a method parameter."""
    return {"weights": "--weights", "k": "--rrf.k"}.get(param, f"--param {param}")


def _short(params: dict[str, Any], trained: tuple[str, ...]) -> str:
    """Parameters for the printed label, trained arrays left out."""
    return ", ".join(f"{k}={v}" for k, v in params.items() if k not in trained) or "no parameters"
