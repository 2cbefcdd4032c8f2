"""``lsr-eval seed-irds``: copy local dataset files into the ir_datasets cache (offline machines)."""

from __future__ import annotations

import argparse

from lsr_eval.data.irds_cache import irds_home, seed_cache

NAME = "seed-irds"
HELP = "seed $IR_DATASETS_HOME from a folder laid out like the cache (e.g. ../shared/data/ir_datasets)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="folder laid out like the cache (beir/scifact/source.zip, ...)")
    p.add_argument("--home", help="cache folder (default: $IR_DATASETS_HOME or ~/.ir_datasets)")


def run(args: argparse.Namespace) -> int:
    copied = seed_cache(args.source, args.home)
    print(f"{len(copied)} files copied into {args.home or irds_home()}")
    return 0
