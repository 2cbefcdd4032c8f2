"""``lsr-eval carve-dev``: a held-out dev split from a BEIR folder's training queries (selection without test)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lsr_eval.data.splits import DEV, carve_dev_split
from lsr_eval.manifest import write_manifest

NAME = "carve-dev"
HELP = "write a BEIR folder whose qrels add 'dev' (n training queries, seeded) and 'fit' (the rest)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    p.add_argument("--out", required=True, help="folder to write (links the corpus, queries and other qrels)")
    p.add_argument("--split", default="train", help="split the dev queries come from (default train)")
    p.add_argument("--n", type=int, required=True, help="number of dev queries")
    p.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:

    counts = carve_dev_split(args.dataset, args.out, split=args.split, n=args.n, seed=args.seed)
    summary = {k: v for k, v in counts.items() if k != "dev_qids"}
    experiment = {k: counts[k] for k in ("source", "split", "seed", DEV)}  # DEV: the number of dev queries
    write_manifest(Path(args.out), stage="carve-dev", experiment=experiment, counts=summary,
                   outputs={"dev_qids": counts["dev_qids"]})
    print(json.dumps(summary))
    return 0
