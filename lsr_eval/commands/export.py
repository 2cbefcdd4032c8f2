"""``lsr-eval export``: encoded vectors -> Anserini JsonVectorCollection (integer impacts)."""

from __future__ import annotations

import argparse

from lsr_eval.defaults import DEFAULT_SCALE

NAME = "export"
HELP = "export encoded vectors as an Anserini JsonVectorCollection (impact = round(w * scale))"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("vectors", metavar="VECTORS", help="folder written by lsr-eval encode")
    p.add_argument("--out", required=True)
    p.add_argument("--scale", type=float, default=float(DEFAULT_SCALE), help="quantisation scale (default %(default)s)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--gzip", action="store_true", help="write .jsonl.gz files")
    p.add_argument("--overwrite", action="store_true")


def run(args: argparse.Namespace) -> int:
    from lsr_eval.export.documents import export_documents

    sections = export_documents(args.vectors, args.out, {"stage": "export", "vectors": args.vectors,
                                                         "scale": args.scale},
                                scale=args.scale, compress=args.gzip, workers=args.workers, overwrite=args.overwrite)
    c = sections["counts"]
    print(f"{c['documents_out']} documents exported ({c['empty_vectors']} empty vectors, "
          f"{sections['vectors']['avg_active_dims']:.1f} terms per document on average) to {args.out}")
    return 0
