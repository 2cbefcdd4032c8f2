"""``lsr-eval bm25``: the BM25 flat or multifield baseline (Pyserini's BEIR regression settings)."""

from __future__ import annotations

import argparse

from lsr_eval.commands._common import add_dataset_arguments, add_output_arguments, print_metrics

NAME = "bm25"
HELP = "BM25 flat (or multifield) baseline: index (or reuse), retrieve, evaluate"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_dataset_arguments(p)
    add_output_arguments(p)
    p.add_argument("--k1", type=float, default=0.9, help="BM25 k1 (default 0.9)")
    p.add_argument("--b", type=float, default=0.4, help="BM25 b (default 0.4)")
    p.add_argument("--hits", type=int, default=1000, help="hits per query (default 1000)")
    p.add_argument("--remove-query", dest="remove_query", action="store_true", default=None,
                   help="drop hits whose docid equals the query id (default: on for BEIR)")
    p.add_argument("--keep-query", dest="remove_query", action="store_false", help="keep such hits")
    p.add_argument("--fields", nargs="+", metavar="FIELD",
                   help="multifield: index the document's fields separately and search these, each with weight 1.0 "
                        "(Pyserini's BEIR multifield: --fields title text). Default: flat, contents = title + ' ' + "
                        "text")


def run(args: argparse.Namespace) -> int:
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.experiments.bm25 import Bm25Settings, run_bm25
    from lsr_eval.workdir import work_dir

    settings = Bm25Settings(k1=args.k1, b=args.b, hits=args.hits, remove_query=args.remove_query, fields=args.fields)
    dataset = load_dataset(args.dataset, args.split, args.topics, args.qrels)
    result = run_bm25(dataset, args.out, work_dir(args.work_dir), settings, threads=args.threads,
                       overwrite=args.overwrite)
    print_metrics(f"{settings.method} {dataset.name}", result.metrics)
    return 0
