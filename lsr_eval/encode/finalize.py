"""Check that an encoded folder is complete and write its ``manifest.json``.

Run once every rank has gone through the input: in a single process ``encode_corpus`` calls it itself; under
torchrun rank 0 calls it after ``torch.distributed.barrier()`` (or any process calls it later, e.g. a separate
command). Checks: all ranks of one run finished and saw the same number of input documents ``N``; shards
``0 .. ceil(N/S)-1`` exist, no other shard; shard ``k`` holds ``min(S, N - k*S)`` documents; no id twice.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from lsr_eval.encode import store
from lsr_eval.errors import InputError
from lsr_eval.manifest import write_manifest

STAGE = "encode"
#: optional per-run records (``encode_corpus(run_info=...)``) copied into ``parameters.runs``.
RUN_INFO = ("precision", "device")


def _complete_run(folder: Path, done: list[dict[str, Any]]) -> dict[str, Any]:
    """The number of input documents all ranks agree on, and the world sizes that finished."""
    if not done:
        raise InputError(f"{folder}: no rank has finished encoding (no done-*.json)")
    n_inputs = sorted({d["n_input"] for d in done})
    if len(n_inputs) > 1:
        raise InputError(f"{folder}: ranks saw different numbers of input documents {n_inputs} (the input changed "
                         "between runs); encode again with --overwrite")
    complete = []
    for w in sorted({d["world_size"] for d in done}):
        ranks = {d["rank"] for d in done if d["world_size"] == w}
        if ranks == set(range(w)):
            complete.append(w)
    if not complete:
        missing = {w: sorted(set(range(w)) - {d["rank"] for d in done if d["world_size"] == w})
                   for w in {d["world_size"] for d in done}}
        raise InputError(f"{folder}: not every rank has finished (missing ranks by world size: {missing})")
    return {"n_input": n_inputs[0], "world_sizes": complete}


def finalize_encoding(folder: str | os.PathLike) -> dict[str, Any]:
    """Check ``folder`` (see module doc), write its manifest; returns the manifest's sections."""
    path = Path(folder)
    spec = store.read_spec(path)
    done = store.list_done(path)
    run = _complete_run(path, done)
    n_input, size = run["n_input"], spec["shard_size"]
    n_shards = math.ceil(n_input / size)
    present = store.list_shards(path)
    missing = [store.shard_name(k) for k in range(n_shards) if k not in present]
    extra = [p.name for k, p in present.items() if k >= n_shards]
    if missing:
        raise InputError(f"{path}: {len(missing)} shard(s) missing, e.g. {missing[:3]}; run the encoding again")
    if extra:
        raise InputError(f"{path}: shard(s) {extra[:3]} lie beyond the {n_input} input documents (left by an "
                         "earlier run on a longer input); encode again with --overwrite")

    seen: set[str] = set()
    n_out = n_empty = n_truncated = postings = tokens = max_dims = 0
    seconds = 0.0
    untimed = timed_docs = timed_tokens = 0
    for k in range(n_shards):
        st = store.read_shard_stats(present[k])
        expected = min(size, n_input - k * size)
        if len(st["doc_ids"]) != expected:
            raise InputError(f"{present[k]}: holds {len(st['doc_ids'])} documents, expected {expected}")
        for doc_id in st["doc_ids"]:
            if doc_id in seen:
                raise InputError(f"{present[k]}: document id {doc_id!r} is also in an earlier shard")
            seen.add(doc_id)
        dims = np.diff(st["indptr"])
        n_out += len(dims)
        n_empty += int((dims == 0).sum())
        n_truncated += int(st["truncated"].sum())
        postings += int(dims.sum())
        max_dims = max(max_dims, int(dims.max(initial=0)))
        tokens += int(st["n_tokens"].sum(dtype=np.int64))
        if st["seconds"] is None:
            untimed += 1
        else:
            seconds += st["seconds"]
            timed_docs += len(dims)
            timed_tokens += int(st["n_tokens"].sum(dtype=np.int64))

    sections: dict[str, Any] = {
        "counts": {"documents_in": n_input, "documents_out": n_out, "empty_vectors": n_empty,
                   "truncated_documents": n_truncated, "total_postings": postings, "real_tokens": tokens},
        "vectors": {"avg_active_dims": postings / n_out if n_out else 0.0, "max_active_dims": max_dims,
                    "avg_real_tokens": tokens / n_out if n_out else 0.0},
        "throughput": {"encode_seconds": seconds, "docs_per_s": timed_docs / seconds if seconds else None,
                       "real_tokens_per_s": timed_tokens / seconds if seconds else None,
                       "shards_without_time": untimed,
                       "note": "per encoding process: summed shard wall times (a shard keeps the time of the run "
                               "that wrote it, in its .time.json)"},
        "encoder": spec["encoder"],
        "parameters": {"format": spec["format"], "shard_size": size, "vocab_size": spec["vocab_size"],
                       "vocab_sha256": spec["vocab_sha256"], "world_sizes": run["world_sizes"],
                       "runs": [{k: d.get(k) for k in ("rank", "world_size", "batch_size", "window_batches",
                                                        "shards_written", "shards_verified", "wall_seconds",
                                                        *RUN_INFO) if k in d or k not in RUN_INFO}
                                for d in done]},
        "outputs": {"vocab": store.VOCAB, "shards": [store.shard_name(k) for k in range(n_shards)]},
    }
    write_manifest(path, STAGE, spec["experiment"], **sections)
    return sections
