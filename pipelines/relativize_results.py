"""Rewrite the absolute paths of the machines that made the committed results (``results/``) in anchored form
(:func:`relativize`): paths only, no number changes. Idempotent: a second run rewrites nothing. A one-off migration
of this checkout's files: it names the folders of the machines that made them (:data:`RECORDED_ROOTS`), which the
library never does (new results are written anchored by :mod:`lsr_eval.manifest`)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, Iterable

from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import (
    HOME_ANCHOR,
    SCRIPTS_ANCHOR,
    SITE_ANCHOR,
    TMP_ANCHOR,
    WORK_ANCHOR,
    anchor_roots,
    anchor_text,
    map_strings,
)

#: Old machines' folders in committed results, as ``(regular expression, anchor)``: checkouts under ``/work/``
#: (``main``, ``wt*``), their work folders, the shared folder, ``/tmp/work``, a pyenv's site-packages and scripts.
RECORDED_ROOTS: tuple[tuple[str, str], ...] = (
    (r"^/work/shared(?=/|$)", "../shared"),
    (r"^/work/(?:main|wt[^/\s]*)/work(?=/|$)", WORK_ANCHOR),
    (r"^/work/(?:main|wt[^/\s]*)(?=/|$)", ""),
    (r"^/tmp/work(?=/|$)", WORK_ANCHOR),
    (r"^/tmp(?=/|$)", TMP_ANCHOR),
    (r"^/root/\.pyenv/versions/[^/]+/lib/python3[^/]*/site-packages(?=/|$)", SITE_ANCHOR),
    (r"^/root/\.pyenv/versions/[^/]+/bin(?=/|$)", SCRIPTS_ANCHOR),
    (r"^/root(?=/|$)", HOME_ANCHOR),
)


def relativize(text: str, roots: Iterable[tuple[str, str]] = RECORDED_ROOTS) -> tuple[str, int]:
    """One-off migration of a committed file's text (manifest, summary, table, page): the absolute paths of the
    machines that made it in anchored form (:data:`RECORDED_ROOTS`, then this machine's); returns the new text and the
    count of paths rewritten. Idempotent: anchored paths are not absolute."""
    return anchor_text(text, [*roots, *anchor_roots()])


#: Suffixes of the text files under ``results/`` that may record paths.
TEXT_SUFFIXES = (".json", ".md", ".csv", ".html", ".yaml", ".yml", ".txt", ".tex")


def _skeleton(obj: Any) -> Any:
    """``obj`` with every string blanked: what a path rewrite must leave unchanged (numbers, keys, structure)."""
    return map_strings(obj, lambda s: "")


def relativize_file(path: str | os.PathLike, *, write: bool = True) -> int:
    """Rewrite the absolute paths of one committed file with :func:`relativize` (in place unless not ``write``);
    returns the count rewritten. A JSON file whose numbers, keys or structure would change is refused."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    new, count = relativize(text)
    if count and path.suffix == ".json":
        try:
            same = _skeleton(json.loads(text)) == _skeleton(json.loads(new))
        except json.JSONDecodeError as e:
            raise LsrEvalError(f"{path}: the path rewrite would break its JSON ({e}); fix the file by hand") from None
        if not same:
            raise LsrEvalError(f"{path}: the path rewrite would change more than paths; fix the file by hand")
    if count and write:
        path.write_text(new, encoding="utf-8")
    return count


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
