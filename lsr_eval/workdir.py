"""The git-ignored work folder where indexes, collections and encodings are cached by what produced them.

Commands sharing it at the same time are safe: each cached slot is built under its own ``flock`` and published
by its manifest, written last.

Design notes: docs/design.md."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from lsr_eval.errors import InputError, LsrEvalError, on_disk_full
from lsr_eval.manifest import WORK_ENV, note_work_folder, read_manifest

try:
    import fcntl
except ImportError:  # Windows: no flock; concurrent builds of one slot are then not guarded
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

#: Default work folder (relative to the current directory); ``LSR_EVAL_WORK`` overrides it.
DEFAULT_WORK = "work"
#: Folder of the slots' lock files, beside the kinds' folders (a slot may be removed and rebuilt while its lock is
#: held; the kinds' folders hold slots only).
LOCKS_DIR = ".locks"
LOCK_SUFFIX = ".lock"


def work_dir(path: str | os.PathLike | None = None) -> Path:
    """The work folder (``path``, else ``$LSR_EVAL_WORK``, else ``./work``); manifests record paths under it as
    ``$WORK/...``."""
    folder = Path(path or os.environ.get(WORK_ENV) or DEFAULT_WORK)
    note_work_folder(folder)
    return folder


def cache_slot(work: Path, kind: str, key: Mapping[str, Any], label: str) -> Path:
    """``work/kind/<label>-<hash of key>``: one folder per distinct producer of an artefact."""
    digest = hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_")[:60]
    return work / kind / f"{slug}-{digest}"


def slot_label(slot: Path) -> str:
    """The label of a :func:`cache_slot` folder ``<label>-<hash>`` (as the slot's name holds it: made safe)."""
    return slot.name.rsplit("-", 1)[0]


def lock_path(slot: Path) -> Path:
    """``work/.locks/<kind>/<slot name>.lock`` for ``slot`` = ``work/<kind>/<name>``: never removed (removing a lock
    file others wait on would split them)."""
    return slot.parent.parent / LOCKS_DIR / slot.parent.name / f"{slot.name}{LOCK_SUFFIX}"


def folder_bytes(folder: str | os.PathLike) -> int:
    """Total size of the regular files under ``folder`` (recursively), e.g. a Lucene index; a file's own size (an
    engine whose index is one file)."""
    path = Path(folder)
    if path.is_file():
        return path.stat().st_size
    if not path.is_dir():
        raise InputError(f"{path}: not a folder")
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


@contextmanager
def slot_lock(slot: str | os.PathLike, remove_partial: bool = False) -> Iterator[None]:
    """Hold the exclusive lock of ``slot`` among processes (blocking; says once on the log that it waits). A full
    disk inside is one :class:`~lsr_eval.errors.DiskFullError` naming the slot; ``remove_partial`` then removes the
    slot (a build that cannot resume)."""
    slot = Path(slot)

    def written() -> int | None:
        return (folder_bytes(slot) if slot.is_dir() else 0) or None

    def remove() -> None:
        shutil.rmtree(slot, ignore_errors=True)

    with _exclusive(slot), on_disk_full(slot, "building this cache entry", written, at_least=True,
                                        cleanup=remove if remove_partial else None):
        yield


@contextmanager
def _exclusive(slot: Path) -> Iterator[None]:
    """The ``flock`` of :func:`slot_lock`."""
    if fcntl is None:
        yield
        return
    path = lock_path(slot)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process building %s", slot)
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            log.info("%s: the other build finished", slot)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _same(manifest: Mapping[str, Any] | None, key: Mapping[str, Any]) -> bool:
    return manifest is not None and manifest.get("experiment") == json.loads(json.dumps(key, default=str))


def _complete(slot: Path, key: Mapping[str, Any], say: bool = False) -> dict[str, Any] | None:
    """The manifest of ``slot`` if it records ``key``; None for a slot to build (``say``: log an unreadable one)."""
    if not slot.exists():
        return None
    try:
        manifest = read_manifest(slot)
    except ValueError as e:  # invalid JSON or not UTF-8: a damaged cache entry
        if say:
            log.warning("%s: its manifest is unreadable (%s): building this cache entry again", slot, e)
        return None
    return manifest if _same(manifest, key) else None


def cached(slot: Path, key: Mapping[str, Any], build: Callable[[], Any] | None = None) -> dict[str, Any] | None:
    """The manifest of the complete artefact in ``slot`` made from ``key``.

    With ``build``: when there is none, ``build()`` makes it in ``slot`` (writing the manifest with ``key`` as its
    ``experiment`` last) while this process holds the slot's lock, after removing what a killed build left; a
    process asking for the same slot meanwhile waits and then reuses it. Without ``build`` (the caller builds
    unguarded): an incomplete slot is removed under the lock and None returned.
    """
    manifest = _complete(slot, key)
    if manifest is not None:
        return manifest
    with slot_lock(slot, remove_partial=True):
        manifest = _complete(slot, key, say=True)  # made while this process waited for the lock
        if manifest is not None:
            return manifest
        if slot.exists():
            shutil.rmtree(slot)
        if build is None:
            return None
        build()
        manifest = read_manifest(slot)
        if not _same(manifest, key):
            raise LsrEvalError(f"{slot}: the build finished without a manifest of its key (a bug in the stage)")
        return manifest
