"""``lsr-eval fuse RUN RUN ...``: fuse runs with ranx (RRF, weighted sum, ...), evaluate the fused run when given
``--qrels`` (without them, the fused run is written and not evaluated, as Pyserini's ``pyserini.fusion``), and
optionally tune the fusion on training queries disjoint from the reported ones."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lsr_eval.errors import ConfigError

NAME = "fuse"
HELP = "Fuse TREC runs with ranx (rrf, wsum, ...), evaluate (with --qrels), optionally tune on a train/dev split."


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
    p.add_argument("--k", type=int, help="RRF's k (default 60)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="another method parameter, e.g. gamma=0.5 (gmnz), phi=0.8 (rbc), sigma=0.01 (logn_isr)")
    p.add_argument("--depth", type=int, help="keep the first DEPTH documents of each fused query (default: all)")
    p.add_argument("--measures", nargs="+", metavar="MEASURE",
                   help=f"measures (default: the dataset's, else {' '.join(DEFAULT_MEASURES)})")
    p.add_argument("--tune-on", metavar="DATASET_OR_QRELS",
                   help="tune weights / parameters on these qrels (a train or dev split, disjoint from --qrels)")
    p.add_argument("--tune-split", help="split of a BEIR folder given as --tune-on (e.g. train)")
    p.add_argument("--tune-runs", nargs="+", metavar="RUN",
                   help="the same systems' runs on the tuning queries, in the order of RUN")
    p.add_argument("--tune-metric", default="nDCG@10", help="measure maximised by tuning (default nDCG@10)")
    p.add_argument("--tune-step", type=float, default=DEFAULT_WEIGHT_STEP,
                   help=f"weight grid step (default {DEFAULT_WEIGHT_STEP})")
    p.add_argument("--tag", help="run tag in run.trec (default fusion-METHOD)")
    p.add_argument("--out", required=True, help="output folder (run.trec, metrics.json, manifest.json)")
    p.add_argument("--overwrite", action="store_true", help="replace an output folder holding another experiment")


def resolve_qrels(spec: str, split: str | None, option: str) -> tuple[dict, dict[str, Any], tuple[str, ...] | None]:
    """Qrels from a qrels file or a dataset spec: (qrels, description for the manifest, the dataset's measures)."""
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.data.trec_files import read_qrels

    path = Path(spec)
    if path.is_file():
        if split is not None:
            raise ConfigError(f"{option} {spec!r} is a qrels file: its split option applies to BEIR folders only")
        return read_qrels(path), {"qrels_file": str(path.resolve())}, None
    dataset = load_dataset(spec, split)
    return dataset.qrels(), {"dataset": dataset.describe()}, tuple(dataset.measures)


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
    if args.k is not None:
        params["k"] = args.k
    return params


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from lsr_eval.evaluation import count_queries, evaluate, parse_measure, parse_measures, write_metrics
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.fusion import check_disjoint, fuse, tune_weights
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES
    from lsr_eval.fusion.fuse import jsonable
    from lsr_eval.fusion.methods import Settings, check_norm, get_method
    from lsr_eval.manifest import prepare_output, write_manifest
    from lsr_eval.runs.trec import read_run, write_run

    method = get_method(args.method)
    params = _params(args)
    tuning_asked = args.tune_on is not None or args.tune_runs is not None
    if tuning_asked:
        if args.tune_on is None or args.tune_runs is None:
            raise ConfigError("tuning needs both --tune-on (qrels of the tuning split) and --tune-runs (the runs "
                              "on its queries)")
        if params:
            raise ConfigError(f"--tune-on chooses {args.method}'s parameters: drop "
                              f"{', '.join('--' + k if k in ('weights', 'k') else '--param ' + k for k in params)}")
        if len(args.tune_runs) != len(args.runs):
            raise ConfigError(f"{len(args.tune_runs)} --tune-runs for {len(args.runs)} runs: give the same systems' "
                              "runs on the tuning queries, in the same order")
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
    experiment = {
        "method": method.name, "norm": norm, "params": given, "depth": args.depth, "inputs": inputs,
        "qrels": qrels_desc,
        "tune": None if not tuning_asked else {
            "on": args.tune_on, "split": args.tune_split, "runs": [str(Path(r).resolve()) for r in args.tune_runs],
            "metric": args.tune_metric, "step": args.tune_step},
    }
    runs = [read_run(r) for r in args.runs]
    # The reported queries: those of the qrels, else every query of the fused runs.
    reported = qrels if qrels is not None else {q for r in runs for q in r}
    tune_qrels = None
    if tuning_asked:
        tune_qrels, _, _ = resolve_qrels(args.tune_on, args.tune_split, "--tune-on")
        check_disjoint(tune_qrels, reported)  # before anything is written
    out = prepare_output(args.out, experiment, args.overwrite)

    tuning = None
    if tune_qrels is not None:
        tuning = tune_weights([read_run(r) for r in args.tune_runs], tune_qrels, method.name, args.norm,
                              args.tune_metric, reported=reported, step=args.tune_step, depth=args.depth)
        params = tuning.params
    fusion = fuse(runs, method.name, args.norm, params, args.depth)

    tag = args.tag or f"fusion-{method.name}"
    lines = write_run(fusion.run, out / "run.trec", tag=tag)
    if qrels is None:
        write_manifest(out, "fuse", experiment, fusion=fusion.settings(),
                       counts={"fusion": fusion.counts.to_dict(), "run_lines": lines},
                       tuning=tuning.to_dict() if tuning else None, inputs=[{"path": p} for p in inputs],
                       outputs=["run.trec"], evaluated=False)
        print(f"fused {len(runs)} runs ({fusion.norm}; {_short(fusion.settings()['params'], method.trained)}): "
              f"{len(fusion.run)} queries, {lines} lines -> {out / 'run.trec'} (not evaluated: no --qrels)")
        return 0
    metrics = evaluate(qrels, fusion.run, measures)
    write_metrics(out, metrics)
    input_metrics = [evaluate(qrels, r, measures) for r in runs]
    write_manifest(out, "fuse", experiment,
                   fusion=fusion.settings(),
                   counts={"fusion": fusion.counts.to_dict(), "evaluation": asdict(count_queries(qrels, fusion.run)),
                           "run_lines": lines},
                   tuning=tuning.to_dict() if tuning else None,
                   inputs=[{"path": p, "metrics": m} for p, m in zip(inputs, input_metrics)],
                   outputs=["run.trec", "metrics.json"], metrics=metrics, measures=names,
                   evaluation=evaluation_code())
    label = f"{tag} ({fusion.norm}; {_short(fusion.settings()['params'], method.trained)})"
    files = [Path(p).name for p in args.runs]
    labels = files if len(set(files)) == len(files) else list(args.runs)  # file names if they tell runs apart
    rows = [*zip(labels, input_metrics), (label, metrics)]
    width = max(len(r[0]) for r in rows)
    print(f"qrels {args.qrels}: {len(qrels)} judged queries (trec_eval -c means)")
    print(f"{'run':<{width}}  " + "  ".join(f"{n:>10}" for n in names))
    for name, m in rows:
        print(f"{name:<{width}}  " + "  ".join(f"{m[n]:>10.4f}" for n in names))
    return 0


def _short(params: dict[str, Any], trained: tuple[str, ...]) -> str:
    """Parameters for the printed label, trained arrays left out."""
    return ", ".join(f"{k}={v}" for k, v in params.items() if k not in trained) or "no parameters"
