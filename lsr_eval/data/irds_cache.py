"""Seed an ``ir_datasets`` cache from local files, for machines without a network.

``ir_datasets`` keeps each dataset's downloads under ``$IR_DATASETS_HOME/<dataset path>/`` (default
``~/.ir_datasets``); a file placed where it would have downloaded it is used as is. ``../shared/data/ir_datasets``
mirrors that layout (``beir/scifact/source.zip``), so copying it into a writable home makes ``beir/scifact/*`` load
offline.

A folder holding the topics and qrels files of registry benchmarks (:class:`lsr_eval.data.registry.LocalFiles`, e.g.
``../shared/data/msmarco-passage`` with ``topics.dl19-passage.tsv``) is seeded differently: those files go to
``<home>/<their folder>/`` (``msmarco-passage/``), where ``dl19``, ``dl20`` and ``msmarco-dev`` read them; the
folder's other files are counted as skipped.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from lsr_eval.data.registry import BENCHMARKS
from lsr_eval.errors import InputError

log = logging.getLogger(__name__)


def irds_home() -> Path:
    return Path(os.environ.get("IR_DATASETS_HOME") or Path.home() / ".ir_datasets")


def local_file_targets() -> dict[str, str]:
    """File name -> folder under the ir_datasets home, for every registry benchmark's local topics and qrels."""
    return {name: b.local.folder for b in BENCHMARKS.values() if b.local is not None for name in b.local.names()}


def seed_cache(source: str | os.PathLike, home: str | os.PathLike | None = None) -> list[Path]:
    """Copy every file under ``source`` to the same relative path under ``home``, or, when ``source`` holds
    registry benchmarks' topics and qrels files, those files into their folder (see the module doc); files already
    there with the same size are kept. Returns the paths written."""
    src = Path(source)
    if not src.is_dir():
        raise InputError(f"{src} is not a folder (expected a copy of an ir_datasets cache, e.g. "
                         "../shared/data/ir_datasets, or a folder of topics and qrels such as "
                         "../shared/data/msmarco-passage)")
    dest_root = Path(home) if home else irds_home()
    targets = local_file_targets()
    known = {p.name: targets[p.name] for p in src.iterdir() if p.is_file() and p.name in targets}
    if known:
        pairs = [(src / name, dest_root / folder / name) for name, folder in sorted(known.items())]
        skipped = sum(1 for p in src.rglob("*") if p.is_file()) - len(pairs)
        log.info("%s holds topics and qrels of registry benchmarks: %d copied to their folders, %d other files "
                 "skipped", src, len(pairs), skipped)
    else:
        pairs = [(p, dest_root / p.relative_to(src)) for p in sorted(p for p in src.rglob("*") if p.is_file())]
    copied = []
    for path, dest in pairs:
        if dest.exists() and dest.stat().st_size == path.stat().st_size:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)  # not copy2: the source may be read-only
        copied.append(dest)
    log.info("seeded %s: %d files copied", dest_root, len(copied))
    return copied
