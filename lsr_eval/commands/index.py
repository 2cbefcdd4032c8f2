"""``lsr-eval index``: an index of a collection folder (impact on any engine, or an Anserini BM25 flat index)."""

from __future__ import annotations

import argparse

from lsr_eval.commands._common import stage_folder
from lsr_eval.commands._engine_args import add_engine_arguments, engine_names, engine_options

NAME = "index"
HELP = (f"index a JsonVectorCollection (--kind impact, with --engine {engine_names()}) or a JsonCollection "
        "(--kind bm25-flat, Anserini)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("collection", metavar="COLLECTION",
                   help="folder of JSON lines (an lsr-eval export folder: its docs/ sub-folder is used)")
    p.add_argument("--kind", choices=["impact", "bm25-flat"], default="impact")  # api.files.INDEX_KINDS
    p.add_argument("--out", required=True, help="output folder (index/ and manifest.json)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--round-weights", action="store_true",
                   help="an integer engine rounds fractional weights half to even (counted in the manifest) instead "
                        "of refusing them (docs/collections.md)")
    add_engine_arguments(p)


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.api.files.index_folder`'s arguments, and print its counts."""
    from lsr_eval.api.files import index_folder
    from lsr_eval.export.documents import COLLECTION_DIR

    built = index_folder(stage_folder(args.collection, COLLECTION_DIR), args.out, args.kind, args.engine,
                         engine_options(args), threads=args.threads, overwrite=args.overwrite,
                         round_weights=args.round_weights)
    c = built.counts
    if args.kind == "bm25-flat":
        print(f"{c.total_indexed} documents indexed ({c.empty_appended} empty appended) into {built.index}")
    else:
        checked = c.details.get("collection", {})
        rounded = f", {checked['weights_rounded']} weights rounded" if checked.get("weights_rounded") else ""
        print(f"{c.documents_indexed} of {c.documents_read} documents indexed by {args.engine} "
              f"({checked.get('documents_without_terms', 0)} without terms{rounded}) into {built.index}")
    return 0
