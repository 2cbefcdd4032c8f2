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
from typing import Any

from lsr_eval.api.fusion import DEFAULT_DEPTH, RUN_FILE_SUFFIXES, CrossValidate, Spelling, TuneOn, run_fusion
from lsr_eval.commands._common import print_metric_rows
from lsr_eval.errors import ConfigError

NAME = "fuse"
HELP = ("Fuse TREC runs with ranx (rrf, wsum, ...), evaluate (with --qrels), optionally tune on a train/dev split or "
        "by cross-validation.")



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
    return value   # its range is the fusion's to check (lsr_eval.runs.trec.DEPTH)


def _params(args: argparse.Namespace) -> dict[str, Any]:
    """Parameters given on the command line (--weights, --rrf.k, --param NAME=VALUE)."""
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


def _tune(args: argparse.Namespace) -> TuneOn | CrossValidate | None:
    """The tuning options as the API's :class:`~lsr_eval.api.fusion.TuneOn` / :class:`CrossValidate` (None:
    parameters given), refusing combinations of options that mean nothing together (what the API checks of them it
    refuses itself, in :data:`OPTIONS`' names)."""
    if args.bare_k is not None:  # --k means two things to two tools (see the module doc)
        raise ConfigError(f"--k {args.bare_k} is ambiguous: in Pyserini's fusion --k is the output depth (here "
                          f"--depth, default {DEFAULT_DEPTH}), while lsr-eval used --k for RRF's constant (here "
                          "--rrf.k, default 60); give --depth N and/or --rrf.k K")
    on = args.tune_on is not None or args.tune_runs is not None
    if args.tune_cv is not None:
        if on:
            raise ConfigError("--tune-cv chooses the parameters on the --qrels queries themselves, fold by fold; "
                              "--tune-on/--tune-runs tune on another split: give one or the other")
        return CrossValidate(args.tune_cv, 0 if args.tune_seed is None else args.tune_seed, args.tune_metric,
                             args.tune_step)
    if args.tune_seed is not None:
        raise ConfigError("--tune-seed applies with --tune-cv")
    if on:
        if args.tune_on is None or args.tune_runs is None:
            raise ConfigError("tuning needs both --tune-on (qrels of the tuning split) and --tune-runs (the runs "
                              "on its queries)")
        return TuneOn(args.tune_on, list(args.tune_runs), args.tune_split, args.tune_metric, args.tune_step)
    if args.tune_split is not None:
        raise ConfigError("--tune-split applies with --tune-on")
    return None


#: The API's refusals (measures without qrels, parameters given beside tuning, ...) in this command's options.
OPTIONS = Spelling(qrels="--qrels", measures="--measures", split="--split", cv="--tune-cv", tuned_by_cv="--tune-cv",
                   tuned_on="--tune-on", tune_runs="--tune-runs",
                   param=lambda k: {"weights": "--weights", "k": "--rrf.k"}.get(k, f"--param {k}"))


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.api.fusion.run_fusion`'s arguments, and print what it made."""
    fused = run_fusion(args.runs, args.method, args.norm, args.depth, _params(args), qrels=args.qrels,
                       split=args.split, measures=args.measures, tune=_tune(args), out=args.out,
                       overwrite=args.overwrite, tag=args.tag, spell=OPTIONS)
    if fused.metrics is None:
        print(f"fused {len(fused.names)} runs ({fused.norm}; {fused.label}): {len(fused.run)} queries, "
              f"{fused.run_lines} lines -> {fused.run_path} (not evaluated: no --qrels)")
        return 0
    print(f"qrels {args.qrels}: {len(fused.qrels)} judged queries (trec_eval -c means)")
    fused_row = (f"{fused.tag} ({fused.norm}; {fused.label})", fused.metrics)
    print_metric_rows([*zip(fused.names, fused.input_metrics), fused_row], fused.measures, min_width=0)
    print(f"-> {fused.run_path}")
    return 0
