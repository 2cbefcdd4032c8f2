"""Which evaluation code produced a set of metrics: a sha256 over the sources that turn a run and qrels into
numbers (this package and the trec_eval ranking of :mod:`lsr_eval.runs.trec`), with the lsr-eval and ranx versions
and the commit. Recorded beside every ``metrics`` of a manifest, so that a metric computed before a fix to the
evaluation can be told apart from one computed after it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lsr_eval import __version__
from lsr_eval.manifest import git_commit, installed_version

#: Modules whose source decides the value of a metric (relative to the ``lsr_eval`` package).
SOURCES = ("evaluation/evaluate.py", "evaluation/measures.py", "runs/trec.py")


def sources_sha256() -> str:
    """sha256 over each of :data:`SOURCES` (its relative path, then its bytes), in order."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for rel in SOURCES:
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


def evaluation_code() -> dict[str, Any]:
    """The ``evaluation`` section of a manifest: sources' sha256, lsr-eval and ranx versions, commit."""
    ranx = installed_version("ranx")
    return {"sources_sha256": sources_sha256(), "sources": list(SOURCES), "lsr-eval": __version__, "ranx": ranx,
            "commit": git_commit()}
