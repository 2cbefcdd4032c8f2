"""Read a finalised encoded-vectors folder (see :mod:`lsr_eval.encode.store`) shard by shard, in input order."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import scipy.sparse as sp

from lsr_eval.encode import store
from lsr_eval.encode.finalize import STAGE
from lsr_eval.encode.protocol import SparseVectors
from lsr_eval.errors import InputError
from lsr_eval.manifest import MANIFEST, read_manifest

read_vocab = store.read_vocab


def read_encoding_manifest(folder: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a finalised encoding; refuses an unfinished one (its shards may be incomplete)."""
    path = Path(folder)
    try:
        manifest = read_manifest(path)
    except ValueError as e:  # invalid JSON or not UTF-8
        raise InputError(f"{path / MANIFEST}: unreadable ({e}); {store.damaged(path)}") from None
    if manifest is None or manifest.get("stage") != STAGE:
        raise InputError(f"{path / MANIFEST}: no finalised encoding here (missing, or written by another stage); "
                         "finish the encoding or run finalize_encoding")
    return manifest


def iter_shards(folder: str | os.PathLike) -> Iterator[store.Shard]:
    """The shards, in input order."""
    path = Path(folder)
    for name in read_encoding_manifest(path)["outputs"]["shards"]:
        shard_path = path / name
        if not shard_path.exists():
            raise InputError(f"{shard_path} is missing (listed in {path / MANIFEST})")
        yield store.read_shard(shard_path)


def iter_vectors(folder: str | os.PathLike) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """``(doc_id, vocabulary ids (int32, ascending), weights (float32))`` per document, in input order."""
    for shard in iter_shards(folder):
        w = shard.weights
        for i, doc_id in enumerate(shard.doc_ids):
            s, e = w.indptr[i], w.indptr[i + 1]
            yield doc_id, w.indices[s:e], w.data[s:e]


def load_matrix(folder: str | os.PathLike) -> tuple[list[str], sp.csr_matrix]:
    """All vectors in memory (small corpora, brute-force checks): ids and an ``n x V`` CSR matrix."""
    ids: list[str] = []
    parts = []
    for shard in iter_shards(folder):
        ids += shard.doc_ids
        parts.append(shard.weights)
    vocab_size = read_encoding_manifest(folder)["parameters"]["vocab_size"]
    matrix = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, vocab_size), dtype=np.float32)
    return ids, matrix


def load_vectors(folder: str | os.PathLike) -> SparseVectors:
    """:func:`load_matrix` with the vocabulary; the vectors know the folder they came from
    (:attr:`~lsr_eval.encode.protocol.SparseVectors.source`)."""
    ids, matrix = load_matrix(folder)
    vectors = SparseVectors(ids, matrix, read_vocab(folder))
    return replace(vectors, source=(str(folder), vectors.digest()))
