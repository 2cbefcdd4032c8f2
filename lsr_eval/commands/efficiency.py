"""``lsr-eval efficiency ENCODING [--queries F] [--index DIR]``: expected FLOPs and posting-list statistics of an
encoded corpus (and the queries searched against it), counted as indexed: impacts ``rint(w * scale) > 0``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.errors import InputError

NAME = "efficiency"
HELP = "Expected FLOPs (Paria et al. 2020) and posting-list statistics of an encoded corpus and its queries"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("encoding", metavar="ENCODING", help="encoded documents folder (work/encodings/...)")
    p.add_argument("--queries", help="query weight maps: the queries.jsonl written by `lsr-eval splade` "
                                     "(OUT/queries/queries.jsonl, lines {\"id\": ..., \"vector\": {term: impact}})")
    p.add_argument("--index", help="the Lucene index folder, for its size on disk")
    p.add_argument("--scale", type=float, default=float(DEFAULT_SCALE),
                   help="the export's quantisation scale (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from lsr_eval.efficiency.flops import count_encoding, count_weight_maps, flops_report
    from lsr_eval.efficiency.postings import posting_stats
    from lsr_eval.encode.reader import read_vocab
    from lsr_eval.export.queries import read_query_jsonl

    if not Path(args.encoding).is_dir():
        raise InputError(f"{args.encoding}: not an encoded-vectors folder")
    docs = count_encoding(args.encoding, "impact", args.scale)
    out = {"encoding": str(args.encoding), "postings": posting_stats(docs, args.index).to_dict()}
    if args.queries:
        queries = count_weight_maps(read_query_jsonl(args.queries), read_vocab(args.encoding))
        out["flops"] = flops_report(docs, queries).to_dict()
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    ps = out["postings"]
    print(f"documents {ps['documents']}, avg active dims {docs.mean_active:.2f} (impacts > 0 at scale {args.scale:g})")
    print(f"posting lists: {ps['terms_with_postings']} terms, {ps['total_postings']} postings; length mean "
          f"{ps['mean_length']:.2f}, median {ps['median_length']:g}, p99 {ps['p99_length']:g}, max {ps['max_length']}")
    if ps["index_bytes"] is not None:
        print(f"index size {ps['index_bytes']} bytes ({ps['index_bytes'] / 2**20:.2f} MiB)")
    if "flops" in out:
        f = out["flops"]
        print(f"queries {f['queries']['vectors']}, avg active dims {f['queries']['avg_active_dims']:.2f}")
        print(f"expected FLOPs {f['expected_flops']:.4f}")
    return 0
