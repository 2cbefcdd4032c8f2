"""The git-ignored work folder where indexes, collections and encodings are cached by what produced them."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.manifest import read_manifest

#: Default work folder (relative to the current directory); ``LSR_EVAL_WORK`` overrides it.
DEFAULT_WORK = "work"


def work_dir(path: str | os.PathLike | None = None) -> Path:
    return Path(path or os.environ.get("LSR_EVAL_WORK") or DEFAULT_WORK)


def cache_slot(work: Path, kind: str, key: Mapping[str, Any], label: str) -> Path:
    """``work/kind/<label>-<hash of key>``: one folder per distinct producer of an artefact."""
    digest = hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_")[:60]
    return work / kind / f"{slug}-{digest}"


def cached(slot: Path, key: Mapping[str, Any]) -> dict[str, Any] | None:
    """The manifest of a complete artefact in ``slot`` made from ``key``; an incomplete one is removed."""
    manifest = read_manifest(slot) if slot.exists() else None
    if manifest is not None and manifest.get("experiment") == json.loads(json.dumps(key, default=str)):
        return manifest
    if slot.exists():
        shutil.rmtree(slot)
    return None
