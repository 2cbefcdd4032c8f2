"""``lsr-eval teacher-scores``: the cross-encoder teacher scores naver/splade distils from, as ``qid docid score``
lines (:mod:`lsr_eval.data.teacher`)."""

from __future__ import annotations

import argparse
import json

from lsr_eval.data.teacher import check_expected, teacher_lines

NAME = "teacher-scores"
HELP = ("fetch the MS MARCO cross-encoder teacher scores (sentence-transformers/msmarco-hard-negatives) and convert "
        "them to 'qid docid score' lines")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="the lines' file (what data.teacher_scores names)")
    p.add_argument("--pickle", help="a local copy of the pickle (default: download it from the hub, cached)")
    p.add_argument("--expect", help="lock file with the pickle's sha256 and counts (checked; recorded if empty)")
    p.add_argument("--overwrite", action="store_true", help="convert again even if --out exists")


def run(args: argparse.Namespace) -> int:
    """:func:`lsr_eval.data.teacher.teacher_lines`, and print what it converted (or kept)."""
    done = teacher_lines(args.out, args.pickle, overwrite=args.overwrite)
    if done.counts is None:
        print(f"{done.out} exists ({json.dumps(done.record)}); --overwrite converts again")
        return 0
    c = done.counts
    print(f"{done.source}: {c.queries} queries, {c.pairs} (query, passage) pairs in -> {c.lines} lines out "
          f"({done.out}); sha256 {c.sha256}")
    if args.expect:
        print(check_expected(c, args.expect))
    return 0
