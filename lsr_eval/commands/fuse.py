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
from pathlib import Path
from typing import Any

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

    def outputs(self, *names: str) -> list[str]:
        """Output file names for the manifest (a run file names itself only: metrics live in its manifest)."""
        return [self.run_path.name] if self.is_file else list(names)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from lsr_eval.evaluation import count_queries, evaluate, parse_measure, parse_measures, write_metrics
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.fusion import check_disjoint, check_inputs, fuse, tune_weights
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES
    from lsr_eval.fusion.cross_validation import DEFAULT_SEED, check_k, cross_validate
    from lsr_eval.fusion.fuse import jsonable
    from lsr_eval.fusion.methods import Settings, check_norm, get_method
    from lsr_eval.manifest import write_manifest
    from lsr_eval.runs.trec import read_run, write_run

    _check_bare_k(args)
    method = get_method(args.method)
    params = _params(args)
    tuning_asked = args.tune_on is not None or args.tune_runs is not None
    cv = args.tune_cv is not None
    if cv:
        if tuning_asked:
            raise ConfigError("--tune-cv chooses the parameters on the --qrels queries themselves, fold by fold; "
                              "--tune-on/--tune-runs tune on another split: give one or the other")
        if args.qrels is None:
            raise ConfigError("--tune-cv needs --qrels (its folds are the judged queries of the reported split)")
        check_k(args.tune_cv)
    elif args.tune_seed is not None:
        raise ConfigError("--tune-seed applies with --tune-cv")
    seed = DEFAULT_SEED if args.tune_seed is None else args.tune_seed
    if tuning_asked or cv:
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
        norm, given = check_norm(method.default_norm if args.norm is None else args.norm), params
    elif args.tune_split is not None:
        raise ConfigError("--tune-split applies with --tune-on")
    else:  # fail on bad settings before reading anything
        settings = Settings.make(method.name, args.norm, params, len(args.runs))
        norm, given = settings.norm, jsonable(settings.params)

    if args.qrels is None:
        for option, value in (("--measures", args.measures), ("--split", args.split)):
            if value is not None:
                raise ConfigError(f"{option} applies with --qrels (without --qrels the fused run is not evaluated)")
        qrels, qrels_desc, measures = None, None, []
    else:
        qrels, qrels_desc, dataset_measures = resolve_qrels(args.qrels, args.split, "--qrels")
        measures = parse_measures(args.measures or dataset_measures or DEFAULT_MEASURES)
    names = [m.name for m in measures]
    inputs = [str(Path(r).resolve()) for r in args.runs]
    tune: dict[str, Any] | None = None
    if tuning_asked:
        tune = {"on": args.tune_on, "split": args.tune_split, "runs": [str(Path(r).resolve()) for r in args.tune_runs],
                "metric": args.tune_metric, "step": args.tune_step}
    elif cv:
        tune = {"cv": args.tune_cv, "seed": seed, "metric": args.tune_metric, "step": args.tune_step}
    experiment = {"method": method.name, "norm": norm, "params": given, "depth": args.depth, "inputs": inputs,
                  "qrels": qrels_desc, "tune": tune}
    runs = [read_run(r) for r in args.runs]
    check_inputs(runs, args.runs)  # an empty run, or one of other queries: before anything is written
    # The reported queries: those of the qrels, else every query of the fused runs.
    reported = qrels if qrels is not None else {q for r in runs for q in r}
    tune_qrels = None
    if tuning_asked:
        tune_qrels, _, _ = resolve_qrels(args.tune_on, args.tune_split, "--tune-on")
        check_disjoint(tune_qrels, reported)  # before anything is written
    output = _Output(args.out, experiment, args.overwrite)

    tuning = None
    if tune_qrels is not None:
        tuning = tune_weights([read_run(r) for r in args.tune_runs], tune_qrels, method.name, args.norm,
                              args.tune_metric, reported=reported, step=args.tune_step, depth=args.depth)
        params = tuning.params
    if cv:
        crossed = cross_validate(runs, qrels, method.name, args.norm, args.tune_metric, k=args.tune_cv, seed=seed,
                                 step=args.tune_step, depth=args.depth, names=args.runs)
        fused_run, counts_record = crossed.run, {}
        settings_record = {"method": method.name, "norm": crossed.norm, "params": None, "depth": args.depth,
                           "params_by_fold": "tuning.folds"}
        tuning_record = crossed.to_dict()
        label_params = f"{args.tune_cv}-fold cross-validated, seed {seed}"
    else:
        fusion = fuse(runs, method.name, args.norm, params, args.depth, names=args.runs)
        fused_run, settings_record = fusion.run, fusion.settings()
        counts_record = {"fusion": fusion.counts.to_dict()}
        tuning_record = tuning.to_dict() if tuning else None
        label_params = _short(settings_record["params"], method.trained)

    tag = args.tag or f"fusion-{method.name}"
    lines = write_run(fused_run, output.run_path, tag=tag)
    manifest = {"manifest_name": output.manifest_name} if output.is_file else {}
    if qrels is None:
        write_manifest(output.folder, "fuse", experiment, **manifest, fusion=settings_record,
                       counts={**counts_record, "run_lines": lines}, tuning=tuning_record,
                       inputs=[{"path": p} for p in inputs], outputs=output.outputs("run.trec"), evaluated=False)
        print(f"fused {len(runs)} runs ({norm}; {label_params}): {len(fused_run)} queries, {lines} lines -> "
              f"{output.run_path} (not evaluated: no --qrels)")
        return 0
    metrics = evaluate(qrels, fused_run, measures)
    if not output.is_file:
        write_metrics(output.folder, metrics)
    input_metrics = [evaluate(qrels, r, measures) for r in runs]
    write_manifest(output.folder, "fuse", experiment, **manifest, fusion=settings_record,
                   counts={**counts_record, "evaluation": asdict(count_queries(qrels, fused_run)), "run_lines": lines},
                   tuning=tuning_record,
                   inputs=[{"path": p, "metrics": m} for p, m in zip(inputs, input_metrics)],
                   outputs=output.outputs("run.trec", "metrics.json"), metrics=metrics, measures=names,
                   evaluation=evaluation_code())
    label = f"{tag} ({norm}; {label_params})"
    files = [Path(p).name for p in args.runs]
    labels = files if len(set(files)) == len(files) else list(args.runs)  # file names if they tell runs apart
    rows = [*zip(labels, input_metrics), (label, metrics)]
    width = max(len(r[0]) for r in rows)
    print(f"qrels {args.qrels}: {len(qrels)} judged queries (trec_eval -c means)")
    print(f"{'run':<{width}}  " + "  ".join(f"{n:>10}" for n in names))
    for name, m in rows:
        print(f"{name:<{width}}  " + "  ".join(f"{m[n]:>10.4f}" for n in names))
    print(f"-> {output.run_path}")
    return 0


def _option(param: str) -> str:
    """The command-line option that gives a method parameter."""
    return {"weights": "--weights", "k": "--rrf.k"}.get(param, f"--param {param}")


def _short(params: dict[str, Any], trained: tuple[str, ...]) -> str:
    """Parameters for the printed label, trained arrays left out."""
    return ", ".join(f"{k}={v}" for k, v in params.items() if k not in trained) or "no parameters"
