"""``lsr-eval teacher-scores``: the cross-encoder teacher scores naver/splade distils from, as ``qid docid score``
lines (:mod:`lsr_eval.data.teacher`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lsr_eval.data.teacher import HUB_FILE, HUB_REPO, check_expected, convert, fetch
from lsr_eval.errors import InputError

NAME = "teacher-scores"
HELP = ("fetch the MS MARCO cross-encoder teacher scores (sentence-transformers/msmarco-hard-negatives) and convert "
        "them to 'qid docid score' lines")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="the lines' file (what data.teacher_scores names)")
    p.add_argument("--pickle", help="a local copy of the pickle (default: download it from the hub, cached)")
    p.add_argument("--expect", help="lock file with the pickle's sha256 and counts (checked; recorded if empty)")
    p.add_argument("--overwrite", action="store_true", help="convert again even if --out exists")


def run(args: argparse.Namespace) -> int:

    out = Path(args.out)
    done = out.with_name(out.name + ".counts.json")
    if out.is_file() and done.is_file() and not args.overwrite:
        print(f"{out} exists ({done.read_text().strip()}); --overwrite converts again")
        return 0
    source = Path(args.pickle) if args.pickle else fetch()
    if not source.is_file():
        raise InputError(f"{source} does not exist (the teacher pickle to convert)")
    counts = convert(source, out)
    record = {"source": str(source), "hub": f"{HUB_REPO}/{HUB_FILE}", **counts.to_dict()}
    done.write_text(json.dumps(record) + "\n")
    print(f"{source}: {counts.queries} queries, {counts.pairs} (query, passage) pairs in -> {counts.lines} lines out "
          f"({out}); sha256 {counts.sha256}")
    if args.expect:
        print(check_expected(counts, args.expect))
    return 0
