"""``lsr-eval check-archive``: a downloaded archive's sha256 and file counts against a lock file
(:mod:`lsr_eval.data.archive`)."""

from __future__ import annotations

import argparse

from lsr_eval.data.archive import check_archive

NAME = "check-archive"
HELP = ("check a downloaded tar archive (sha256, file counts, needed folders) against a lock file; the first run "
        "records them")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("archive", metavar="ARCHIVE", help="the tar archive (e.g. work/downloads/mlm_flops.tar.gz)")
    p.add_argument("--expect", required=True, help="lock file (checked; values still null are recorded)")
    p.add_argument("--need", action="append", default=[], metavar="FOLDER",
                   help="a folder the archive must hold (any depth; its file count is locked too; repeatable)")


def run(args: argparse.Namespace) -> int:
    print(check_archive(args.archive, args.expect, args.need))
    return 0
