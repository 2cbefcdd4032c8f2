"""``lsr-eval index``: an Anserini index of a collection folder (impact or BM25 flat)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "index"
HELP = "index a JsonVectorCollection (--kind impact) or JsonCollection (--kind bm25-flat) with Anserini"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("collection", metavar="COLLECTION",
                   help="folder of JSON lines (an lsr-eval export folder: its docs/ sub-folder is used)")
    p.add_argument("--kind", choices=["impact", "bm25-flat"], default="impact")
    p.add_argument("--out", required=True, help="output folder (index/ and manifest.json)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--overwrite", action="store_true")


def run(args: argparse.Namespace) -> int:
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.anserini.jvm import info
    from lsr_eval.manifest import prepare_output, write_manifest

    src = Path(args.collection)
    if (src / "docs").is_dir():
        src = src / "docs"
    experiment = {"stage": "index", "kind": args.kind, "collection": str(src.resolve())}
    out = prepare_output(args.out, experiment, args.overwrite)
    counts = build_index(src, out / "index", args.kind, threads=args.threads)
    write_manifest(out, "index", experiment, counts=counts.to_dict(), java=info(), index=str(out / "index"))
    print(f"{counts.total_indexed} documents indexed ({counts.empty_appended} empty appended) into {out / 'index'}")
    return 0
