"""``lsr-eval bm25``: the BM25 flat or multifield baseline (Pyserini's BEIR regression settings)."""

from __future__ import annotations

import argparse

from lsr_eval.api.runs import bm25
from lsr_eval.commands._common import add_dataset_arguments, add_output_arguments, print_metrics
from lsr_eval.commands._engine_args import engine_options
from lsr_eval.commands.options import add_setting
from lsr_eval.data.datasets import load_dataset
from lsr_eval.engines.registry import DEFAULT_ENGINE
from lsr_eval.manifest import read_manifest
from lsr_eval.pipeline.settings import Bm25Settings

NAME = "bm25"
HELP = "BM25 flat (or multifield) baseline: index (or reuse), retrieve, evaluate"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_dataset_arguments(p)
    add_output_arguments(p)
    for name in ("k1", "b", "hits"):
        add_setting(p, Bm25Settings, name)
    p.add_argument("--remove-query", dest="remove_query", action="store_true", default=None,
                   help="drop hits whose docid equals the query id (default: on for BEIR)")
    p.add_argument("--keep-query", dest="remove_query", action="store_false", help="keep such hits")
    p.add_argument("--fields", nargs="+", metavar="FIELD",
                   help="multifield: index the document's fields separately and search these, each with weight 1.0 "
                        "(Pyserini's BEIR multifield: --fields title text). Default: flat, contents = title + ' ' + "
                        "text")
    add_setting(p, Bm25Settings, "engine", note="; pisa: the same-engine reference of a learned sparse model "
                                                "searched with PISA")
    p.add_argument("--engine-option", action="append", default=[], metavar="KEY=VALUE",
                   help="with --engine pisa: index_encoding, query_algorithm (e.g. block_max_wand), block_size")


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.api.runs.bm25`'s arguments, and print the metrics it wrote."""
    dataset = load_dataset(args.dataset, args.split, args.topics, args.qrels)
    bm25(dataset, args.out, args.work_dir, k1=args.k1, b=args.b, hits=args.hits, fields=args.fields,
         threads=args.threads, overwrite=args.overwrite, engine=args.engine, engine_options=engine_options(args),
         remove_query=args.remove_query)
    manifest = read_manifest(args.out)   # what the verb wrote: its method's name and its metrics
    engine = "" if args.engine == DEFAULT_ENGINE else f" ({args.engine})"
    print_metrics(f"{manifest['experiment']['method']}{engine} {dataset.name}", manifest["metrics"])
    return 0
