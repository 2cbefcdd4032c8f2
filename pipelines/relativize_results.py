"""Rewrite the absolute paths of the machines that made the committed results (``results/``) in anchored form
(:func:`lsr_eval.manifest.relativize`): paths only, no number changes. Idempotent: a second run rewrites nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from lsr_eval.manifest import TEXT_SUFFIXES, relativize_file


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("folder", nargs="?", default="results", help="folder of committed results (default: results)")
    p.add_argument("--check", action="store_true", help="only count what would be rewritten; exit 1 if anything")
    args = p.parse_args(argv)
    folder = Path(args.folder)
    if not folder.is_dir():
        p.error(f"{folder} is not a folder")
    files = replacements = scanned = 0
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        scanned += 1
        count = relativize_file(path, write=not args.check)
        if count:
            files += 1
            replacements += count
            print(f"{path}: {count}")
    verb = "would rewrite" if args.check else "rewrote"
    print(f"{verb} {replacements} path(s) in {files} of {scanned} text file(s) under {folder}")
    return 1 if args.check and replacements else 0


if __name__ == "__main__":
    raise SystemExit(main())
