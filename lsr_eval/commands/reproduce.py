"""``lsr-eval reproduce RESULT...``: rerun committed results from their manifests and check every recorded number.

One line per row: ``reproduced``, ``differs`` (old -> new), ``refused`` (other data or model), ``failed`` or ``could
not run`` (why). Exit status 1 when a row differs, is refused or fails (``--strict``: also when one could not run).
``--all results/`` reproduces every committed result and writes the regression matrix (Markdown, HTML, JSON).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lsr_eval.errors import ConfigError
from lsr_eval.reproduce.compare import COULD_NOT_RUN
from lsr_eval.reproduce.jobs import Options, plan, reproduce_result
from lsr_eval.reproduce.machine import describe_machine
from lsr_eval.reproduce.matrix import MatrixEntry, kept_entries, write_matrix
from lsr_eval.reproduce.paths import PathMap
from lsr_eval.reproduce.results import find_results, load_result
from lsr_eval.reproduce.tolerance import Tolerances

NAME = "reproduce"
HELP = ("rerun committed results (folders, manifests or benchmark YAMLs) from their manifests and compare every "
        "recorded measure and count; --all writes the regression matrix")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="*", metavar="RESULT",
                   help="a committed result folder (results/benchmarks/scifact-splade-tiny), its manifest.json, or "
                        "the benchmark YAML that made it")
    p.add_argument("--all", metavar="DIR", help="every result under DIR (e.g. results/)")
    p.add_argument("--out", default="work/reproduce",
                   help="where reruns go, one fresh folder per result, and the matrix (default: work/reproduce)")
    p.add_argument("--work-dir", help="reuse this cache of indexes and encodings (default: a fresh one per result; "
                                      "runs are always made again)")
    p.add_argument("--tolerance", action="append", metavar="KIND=VALUE",
                   help="metric=1e-4 (default), count=0, size=0 (relative); repeatable")
    p.add_argument("--max-minutes", type=float, metavar="N",
                   help="rerun only results estimated (from their recorded times) to take at most N minutes")
    p.add_argument("--train", action="store_true", help="rerun training results' training too (long); by default "
                                                         "their saved evaluation is rerun and checked")
    p.add_argument("--path-map", action="append", metavar="OLD=NEW",
                   help="read recorded paths under OLD from NEW (data, run files, models); repeatable")
    p.add_argument("--threads", type=int, default=2, help="Java threads for indexing and search (default: 2)")
    p.add_argument("--matrix", metavar="DIR", help="write the matrix (Markdown, HTML, JSON) here (default: --out);"
                                                     " under results/ only from a clean checkout")
    p.add_argument("--plan", action="store_true", help="print what each result needs and would take; rerun nothing")
    p.add_argument("--strict", action="store_true", help="exit 1 also when a row could not run")
    p.add_argument("--update", action="store_true",
                   help="with --all: keep the entries of the matrix already in --matrix (or --out) whose result is "
                        "committed as it was (same CPU and commit in its manifest), with the machine and date that "
                        "reproduced them, and rerun only the others (new results, or made again)")


def run(args: argparse.Namespace) -> int:
    if not args.results and not args.all:
        raise ConfigError("name one or more results (folders, manifests, benchmark YAMLs) or --all DIR")
    options = Options(out=Path(args.out), work_dir=Path(args.work_dir) if args.work_dir else None,
                      tolerances=Tolerances.parse(args.tolerance), max_minutes=args.max_minutes, train=args.train,
                      paths=PathMap.parse(args.path_map), threads=args.threads)
    targets = list(args.results) + (find_results(args.all) if args.all else [])
    results = [load_result(t) for t in targets]  # every argument checked before anything runs
    kept: list = []
    if args.update:
        kept, results = _update(Path(args.matrix or args.out), results, bool(args.all))
    machine = describe_machine()
    print(f"machine: {machine['summary']}")
    print("tolerances: " + ", ".join(f"{k} {v}" for k, v in options.tolerances.describe().items()))
    entries = []
    failing = 0
    for result in results:
        job = plan(result, options)
        if args.plan:
            estimate = f"{job.estimate_s / 60:.1f} min" if job.estimate_s is not None else "unknown"
            print(f"{result.name}: {job.kind}, {len(job.rows)} rows, {len(job.blocked)} blocked, estimated "
                  f"{estimate}; {job.command}")
            for row, b in job.blocked.items():
                print(f"  {row}: {b.status}: {b.reason}")
            continue
        outcomes = reproduce_result(result, options, job)
        for o in outcomes:
            print(o.line(), flush=True)
        failing += sum(o.failing or (args.strict and o.status == COULD_NOT_RUN) for o in outcomes)
        entries.append(MatrixEntry(result, job, outcomes))
    if entries or kept:
        written = write_matrix(entries, machine, options, Path(args.matrix or args.out), _invocation(args), kept)
        print(f"matrix: {', '.join(str(p) for p in written)}")
    if failing:
        print(f"{failing} row(s) not reproduced")
    return 1 if failing else 0


def _update(folder: Path, results: list, whole: bool) -> tuple[list, list]:
    """``--update``: (the kept entries of ``folder``'s matrix, the results to rerun), said on the console."""

    if not whole:
        raise ConfigError("--update needs --all DIR (the matrix lists every result under it)")
    path = folder / "matrix.json"
    if not path.is_file():
        raise ConfigError(f"--update: {path} does not exist; write a matrix there first (without --update)")
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
        if "date" not in previous:   # matrices written before dates were recorded: their manifest's
            previous["date"] = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["created"][:10]
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"--update: {path} (or the manifest beside it) cannot be read ({e}); write the matrix "
                          "again without --update") from None
    kept, rerun = kept_entries(previous, results)
    print(f"update: {len(kept)} result(s) kept from {path}, {len(rerun)} to rerun")
    return kept, rerun


def _invocation(args: argparse.Namespace) -> str:
    """The command line that made the matrix (as a reader would type it)."""
    parts = ["lsr-eval reproduce", *args.results]
    for flag in ("all", "out", "work_dir", "max_minutes", "matrix", "threads"):
        value = getattr(args, flag)
        if value is not None and not (flag == "threads" and value == 2):
            parts += [f"--{flag.replace('_', '-')}", str(value)]
    parts += [f"--tolerance {t}" for t in args.tolerance or []] + [f"--path-map {m}" for m in args.path_map or []]
    return " ".join(parts + (["--train"] if args.train else []) + (["--update"] if args.update else []))
