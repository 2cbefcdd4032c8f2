"""``lsr-eval check-published``: a benchmark's results against published figures (a model card's), within a
tolerance (:mod:`lsr_eval.benchmark.published`)."""

from __future__ import annotations

import argparse

from lsr_eval.benchmark.published import check_published

NAME = "check-published"
HELP = ("check a benchmark's results against published figures within a tolerance (exit 2 with one line on a "
        "miss); the verdict is recorded beside the results")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS",
                   help="the benchmark's results folder (holding table.json), or its benchmark YAML (its out)")
    p.add_argument("--expect", required=True,
                   help="JSON: dataset, tolerance_points, published {system: {measure: points}}")
    p.add_argument("--skip", action="store_true", help="compare nothing; record that the check was skipped")


def run(args: argparse.Namespace) -> int:
    print(check_published(args.results, args.expect, skip=args.skip))
    return 0
