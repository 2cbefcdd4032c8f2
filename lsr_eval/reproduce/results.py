"""Committed results as ``lsr-eval reproduce`` finds them: a result is a folder with a ``manifest.json`` that lies
in no other result (a benchmark's ``runs/<system>/<dataset>/`` and a training run's ``dev-*/`` evaluations belong to
their parent). It is named by its path under the ``results/`` folder (``benchmarks/scifact-splade-tiny``).

A RESULT argument is such a folder, its ``manifest.json``, or a benchmark YAML (whose ``out`` is the folder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsr_eval.errors import InputError
from lsr_eval.manifest import MANIFEST, read_manifest, results_root


@dataclass(frozen=True)
class Result:
    """One committed result: its folder, manifest, name, and the repository checkout it lies in (if any)."""

    folder: Path
    manifest: dict[str, Any]
    name: str
    repo: Path | None  #: the checkout whose ``results/`` holds it: relative paths of its commands start there

    @property
    def stage(self) -> str:
        return str(self.manifest.get("stage") or "")


def _name(folder: Path) -> tuple[str, Path | None]:
    root = results_root(folder)
    if root is None:
        return str(folder), None
    rel = folder.resolve().relative_to(root)
    return (rel.as_posix() if str(rel) != "." else root.name), root.parent


def load_result(arg: str | os.PathLike) -> Result:
    """The result named by ``arg`` (folder, manifest or benchmark YAML); an InputError says what is missing."""
    path = Path(arg)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        from lsr_eval.benchmark.config import load_config

        folder = Path(load_config(path).out)
        if not (folder / MANIFEST).is_file():
            raise InputError(f"{arg}: its out folder {folder} holds no committed result ({MANIFEST} missing); "
                             f"lsr-eval benchmark {arg} makes one")
    elif path.name == MANIFEST and path.is_file():
        folder = path.parent
    elif path.is_dir():
        folder = path
    else:
        raise InputError(f"{arg}: not a result folder, a {MANIFEST} or a benchmark YAML")
    manifest = read_manifest(folder)
    if manifest is None:
        raise InputError(f"{folder}: no {MANIFEST}: not a result (lsr-eval reproduce --all {folder} finds the "
                         "results under a folder)")
    name, repo = _name(folder)
    return Result(folder, manifest, name, repo)


def find_results(root: str | os.PathLike) -> list[Path]:
    """Every result folder under ``root`` (sorted), nested manifests belonging to their parent result."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: no such folder")
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if MANIFEST in filenames:
            found.append(Path(dirpath))
            dirnames.clear()  # what lies below belongs to this result
    return sorted(found)
