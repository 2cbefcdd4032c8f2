"""``lsr-eval carve-dev``: a held-out dev split from a BEIR folder's training queries (selection without test)."""

from __future__ import annotations

import argparse
import json

NAME = "carve-dev"
HELP = "write a BEIR folder whose qrels add 'dev' (n training queries, seeded) and 'fit' (the rest)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    p.add_argument("--out", required=True, help="folder to write (links the corpus, queries and other qrels)")
    p.add_argument("--split", default="train", help="split the dev queries come from (default train)")
    p.add_argument("--n", type=int, required=True, help="number of dev queries")
    p.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    """:func:`lsr_eval.api.files.carve_dev`, and print its counts."""
    from lsr_eval.api.files import carve_dev

    print(json.dumps(carve_dev(args.dataset, args.out, split=args.split, n=args.n, seed=args.seed)))
    return 0
