"""``lsr-eval search``: integer-weighted queries over an impact index -> a TREC run (and metrics with --dataset)."""

from __future__ import annotations

import argparse

from lsr_eval.commands._common import stage_folder
from lsr_eval.commands._engine_args import add_engine_arguments, engine_options
from lsr_eval.commands.options import add_setting
from lsr_eval.pipeline.settings import SearchOptions

NAME = "search"
HELP = "search an impact index with exported query vectors (queries.jsonl); evaluate with --dataset"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", metavar="INDEX", help="impact index folder (or an lsr-eval index folder) of --engine")
    p.add_argument("queries", metavar="QUERIES",
                   help="queries.jsonl: {\"id\", \"vector\"} per line (docs/collections.md)")
    p.add_argument("--out", required=True)
    add_setting(p, SearchOptions, "hits")
    p.add_argument("--threads", type=int, default=2)
    add_setting(p, SearchOptions, "max_clauses", note="; Anserini only")
    p.add_argument("--remove-query", action="store_true", help="drop hits whose docid equals the query id")
    p.add_argument("--dataset", help="dataset or qrels file to evaluate against")
    p.add_argument("--split")
    p.add_argument("--overwrite", action="store_true")
    add_engine_arguments(p)


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.api.files.search_folder`'s arguments, and print what it wrote."""
    from lsr_eval.api.files import search_folder

    done = search_folder(stage_folder(args.index, "index"), args.queries, args.out, hits=args.hits,
                         threads=args.threads, remove_query=args.remove_query, engine=args.engine,
                         options=engine_options(args), max_clauses=args.max_clauses, dataset=args.dataset,
                         split=args.split, overwrite=args.overwrite)
    if done.metrics:
        print("  ".join(f"{k} {v:.4f}" for k, v in done.metrics.items()))
    print(f"{done.counts.queries} queries searched ({done.without_terms} without terms, "
          f"{len(done.counts.queries_without_hits)} without hits) -> {done.run_file}")
    return 0
