"""Stage 2: stream a corpus through a :class:`TextEncoder` into sharded sparse vectors (resumable, distributable).

Design notes: docs/design.md."""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import scipy.sparse as sp

from lsr_eval.data.chunks import chunks
from lsr_eval.data.types import Document
from lsr_eval.encode import store
from lsr_eval.encode.batching import check_batching, check_finite, clean_rows, encode_window
from lsr_eval.encode.finalize import finalize_encoding
from lsr_eval.encode.protocol import SparseVectors, TextEncoder
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.options import DEFAULT_SHARD_SIZE, SHARD_SIZE
from lsr_eval.settings import Setting, check

log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32
#: batches per length-sorting window.
DEFAULT_WINDOW_BATCHES = 100


#: Processes encoding one corpus together (torchrun's WORLD_SIZE; each its own shards).
WORLD_SIZE = Setting(help="processes encoding one corpus together", ge=1, unit="processes")


@dataclass(frozen=True)
class EncodeSummary:
    """What one rank did. ``manifest`` holds the manifest sections when this call finalised the folder."""

    folder: Path
    rank: int
    world_size: int
    documents_in: int
    shards_written: int
    shards_verified: int
    shards_of_other_ranks: int
    manifest: dict[str, Any] | None


def resolve_rank(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """Explicit ``rank``/``world_size``, else torchrun's ``RANK``/``WORLD_SIZE``, else a single process."""
    if (rank is None) != (world_size is None):
        raise ConfigError("give both rank and world_size, or neither")
    if rank is None:
        try:
            rank, world_size = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        except ValueError as e:
            raise ConfigError(f"RANK/WORLD_SIZE environment variables must be integers: {e}") from e
    check("world_size", world_size, int, WORLD_SIZE)
    return check("rank", rank, int, Setting(help="this process's rank", ge=0, lt=world_size)), world_size


def _spec(experiment: Mapping[str, Any], encoder_info: Mapping[str, Any] | None, shard_size: int,
          vocab: list[str]) -> dict[str, Any]:
    return store.canonical({"format": store.FORMAT, "experiment": dict(experiment),
                            "encoder": dict(encoder_info or {}), "shard_size": shard_size,
                            "vocab_size": len(vocab), "vocab_sha256": store.vocab_sha256(vocab)})


class _Stream:
    """The input documents, refusing duplicate or empty ids; counts what went through."""

    def __init__(self, documents: Iterable[Document]) -> None:
        self._it = iter(documents)
        self.seen: set[str] = set()
        self.count = 0

    def __iter__(self) -> Iterator[Document]:
        for doc in self._it:
            if not doc.id:
                raise InputError(f"document at input position {self.count} has an empty id")
            if doc.id in self.seen:
                raise InputError(f"duplicate document id {doc.id!r} (input position {self.count})")
            self.seen.add(doc.id)
            self.count += 1
            yield doc


def _encode_shard(docs: Iterable[Document], encoder: TextEncoder, batch_size: int, window_batches: int,
                  bar: Any) -> store.Shard | None:
    """Encode one shard's documents window by window; None when there are none."""
    start = time.perf_counter()
    ids: list[str] = []
    parts, n_tokens, truncated = [], [], []
    for window in chunks(docs, batch_size * window_batches):
        window_ids = [d.id for d in window]
        enc = encode_window([d.contents for d in window], encoder, batch_size, on_batch=bar.update)
        check_finite(enc.weights, window_ids)
        ids += window_ids
        parts.append(enc.weights)
        n_tokens.append(enc.n_tokens)
        truncated.append(enc.truncated)
    if not ids:
        return None
    return store.Shard(ids, sp.vstack(parts, format="csr"), np.concatenate(n_tokens), np.concatenate(truncated),
                       time.perf_counter() - start)


def _whole(path: Path) -> bool:
    """Whether the completed shard at ``path`` is whole; a damaged one is removed (and logged) to be encoded again."""
    problem = store.shard_problem(path)
    if problem is None:
        return True
    log.warning("%s fails its check (%s): removed, encoding it again", path, problem)
    path.unlink()
    return False


def _verify(path: Path, docs: Iterable[Document], first_position: int) -> int:
    """Check that a completed shard holds exactly the ids of its input range; returns how many documents."""
    stored = store.read_shard_ids(path)
    got = [d.id for d in docs]
    if got != stored:
        i = next((i for i, (a, b) in enumerate(zip(stored, got)) if a != b), min(len(stored), len(got)))
        have = repr(stored[i]) if i < len(stored) else "nothing (the shard ends)"
        want = repr(got[i]) if i < len(got) else "nothing (the input ends)"
        raise InputError(f"{path} does not match the input: at input position {first_position + i} it holds "
                         f"{have}, the input has {want}; the input changed since the shard was written: use "
                         "another folder or pass --overwrite")
    return len(got)


def encode_corpus(documents: Iterable[Document], encoder: TextEncoder, folder: str | os.PathLike,
                  experiment: Mapping[str, Any], *, encoder_info: Mapping[str, Any] | None = None,
                  shard_size: int = DEFAULT_SHARD_SIZE, batch_size: int = DEFAULT_BATCH_SIZE,
                  window_batches: int = DEFAULT_WINDOW_BATCHES, rank: int | None = None,
                  world_size: int | None = None, overwrite: bool = False, progress: bool = True,
                  total: int | None = None, run_info: Mapping[str, Any] | None = None) -> EncodeSummary:
    """Encode ``doc.contents`` of every document into ``folder`` (see docs/design.md); resumes a crashed run.

    ``experiment`` identifies the output (dataset, model...); ``encoder_info`` describes the encoder for the
    manifest (checkpoint, max length, bf16...). Both must be equal when resuming. ``total``: documents expected,
    for the progress bar only (default: ``len(documents)`` when it has one; the bar moves after every batch).
    ``run_info``: how this run encoded (e.g. the resolved precision and device), recorded with the run in the
    manifest's ``parameters.runs`` but not part of the output's identity.
    """
    from tqdm import tqdm

    check_batching(batch_size, window_batches)
    check("shard_size", shard_size, int, SHARD_SIZE)
    rank, world_size = resolve_rank(rank, world_size)
    if total is None and hasattr(documents, "__len__"):
        total = len(documents)
    vocab = list(encoder.vocab)
    path = store.open_output(folder, _spec(experiment, encoder_info, shard_size, vocab), vocab, overwrite,
                             world_size)
    for f in path.iterdir():
        m = store.DONE_RE.match(f.name)
        if m and (world_size == 1 or (int(m.group(1)), int(m.group(2))) == (rank, world_size)):
            f.unlink()  # this run's completion marker(s) must come from this run
        elif world_size == 1 and store.TMP_MARK in f.name:
            f.unlink()  # left by a killed process (with several ranks, another rank may be writing it now)

    start = time.perf_counter()
    stream = _Stream(documents)
    it = iter(stream)
    written = verified = others = 0
    with tqdm(total=total, unit="doc", desc=f"encode rank {rank}/{world_size}", disable=not progress) as bar:
        k = 0
        while True:
            chunk = islice(it, shard_size)
            shard_path = path / store.shard_name(k)
            if k % world_size != rank:
                n = sum(1 for _ in chunk)
                others += n > 0
                bar.update(n)
            elif shard_path.exists() and _whole(shard_path):
                n = _verify(shard_path, chunk, k * shard_size)
                verified += 1
                bar.update(n)
            else:
                shard = _encode_shard(chunk, encoder, batch_size, window_batches, bar)
                n = len(shard.doc_ids) if shard else 0
                if shard:
                    store.write_shard(shard_path, shard)
                    written += 1
            if n < shard_size:
                break
            k += 1

    store.write_json(path / store.done_name(rank, world_size), {
        "rank": rank, "world_size": world_size, "n_input": stream.count, "shards_written": written,
        "shards_verified": verified, "batch_size": batch_size, "window_batches": window_batches,
        "wall_seconds": time.perf_counter() - start, **dict(run_info or {})}, **store.ENCODED_JSON)
    manifest = finalize_encoding(path) if world_size == 1 else None
    return EncodeSummary(path, rank, world_size, stream.count, written, verified, others, manifest)


def write_vectors(vectors: SparseVectors, folder: str | os.PathLike, experiment: Mapping[str, Any], *,
                  encoder_info: Mapping[str, Any] | None = None, shard_size: int = DEFAULT_SHARD_SIZE,
                  overwrite: bool = False) -> dict[str, Any]:
    """Store vectors already in memory in the encoded-folder format (finalised); returns the manifest sections."""
    check("shard_size", shard_size, int, SHARD_SIZE)
    seen: set[str] = set()
    for i in vectors.ids:
        if i in seen:
            raise InputError(f"duplicate id {i!r}")
        seen.add(i)
    path = store.open_output(folder, _spec(experiment, encoder_info, shard_size, vectors.vocab), vectors.vocab,
                             overwrite, 1)
    for f in path.iterdir():
        if store.DONE_RE.match(f.name) or store.SHARD_RE.match(f.name) or store.SHARD_TIME_RE.match(f.name):
            f.unlink()
    n = len(vectors.ids)
    weights = clean_rows(vectors.matrix)  # non-finite or negative weights are kept: the export reports them
    for k in range(math.ceil(n / shard_size)):
        rows = slice(k * shard_size, min(n, (k + 1) * shard_size))
        m = rows.stop - rows.start
        store.write_shard(path / store.shard_name(k), store.Shard(
            vectors.ids[rows], weights[rows], np.zeros(m, np.int32), np.zeros(m, bool), None))
    store.write_json(path / store.done_name(0, 1), {"rank": 0, "world_size": 1, "n_input": n}, **store.ENCODED_JSON)
    return finalize_encoding(path)
