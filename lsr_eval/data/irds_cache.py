"""Seed an ``ir_datasets`` cache from local files, for machines without a network.

``ir_datasets`` keeps each dataset's downloads under ``$IR_DATASETS_HOME/<dataset path>/`` (default
``~/.ir_datasets``); a file placed where it would have downloaded it is used as is. ``../shared/data/ir_datasets``
mirrors that layout (``beir/scifact/source.zip``), so copying it into a writable home makes ``beir/scifact/*`` load
offline.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from lsr_eval.errors import InputError

log = logging.getLogger(__name__)


def irds_home() -> Path:
    return Path(os.environ.get("IR_DATASETS_HOME") or Path.home() / ".ir_datasets")


def seed_cache(source: str | os.PathLike, home: str | os.PathLike | None = None) -> list[Path]:
    """Copy every file under ``source`` to the same relative path under ``home``; existing files are kept."""
    src = Path(source)
    if not src.is_dir():
        raise InputError(f"{src} is not a folder (expected a copy of an ir_datasets cache, e.g. "
                         "../shared/data/ir_datasets)")
    dest_root = Path(home) if home else irds_home()
    copied = []
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        dest = dest_root / path.relative_to(src)
        if dest.exists() and dest.stat().st_size == path.stat().st_size:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)  # not copy2: the source may be read-only
        copied.append(dest)
    log.info("seeded %s: %d files copied", dest_root, len(copied))
    return copied
