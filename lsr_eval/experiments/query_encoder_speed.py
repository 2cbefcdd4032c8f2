"""Query-encoder speed (pipelines/bench_query_encoder.py): the ONNX query path's work per step, done step by step,
and the floor of its pruned head (what remains when the head's product is skipped)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.models.arguments import add_device, add_precision

REPO = Path(__file__).resolve().parents[2]
#: the query paths timed (``--paths``): torch is always one
PATHS = ("torch", "onnx", "onnx-dense")


def breakdown(enc, queries, scale: float) -> dict[str, float]:
    """Mean milliseconds per step of :class:`~lsr_eval.efficiency.latency.QueryWeights`' work on the ONNX path, done
    step by step (pipelines/bench_query_encoder.py)."""
    import scipy.sparse as sp

    from lsr_eval.export.quantize import VocabCheck, quantize_rows

    vocab = VocabCheck(enc.terms)
    total: dict[str, float] = {}
    clock = time.perf_counter
    for q in queries:
        t0 = clock()
        e = enc.tokenize(q.text)
        t1 = clock()
        stats: dict[str, float] = {}
        idx, val = enc.pooled(e.ids, stats)
        t2 = clock()
        idx, val = enc.sparse_row(idx, val)
        row = sp.csr_matrix((val, idx.astype("int32"), [0, len(val)]), shape=(1, enc.vocab_size))
        qr = quantize_rows(row, [q.id], vocab, scale, what="query")
        dict(zip(vocab.tokens[qr.indices].tolist(), qr.values.tolist()))
        t3 = clock()
        for k, v in {"tokenizer": t1 - t0, "pooled_other": t2 - t1 - sum(v for k, v in stats.items()
                                                                          if k != "candidates"),
                     "post": t3 - t2, **stats}.items():
            total[k] = total.get(k, 0.0) + v
    n = len(queries)
    return {k: (v / n if k == "candidates" else v / n * 1e3) for k, v in total.items()}


def floor_parts(enc, queries) -> dict[str, float]:
    """Mean milliseconds per query of the parts the ``pruned`` design cannot avoid, each run alone on the query's
    tokens (:func:`lsr_eval.models.onnx_query.part_sessions`): tokenizer, transformer, int8 vocabulary product; and
    their sum, the floor of this design on this machine."""
    import numpy as np

    from lsr_eval.models.onnx_query import part_sessions

    sessions = part_sessions(enc)
    clock = time.perf_counter
    total = {"tokenizer": 0.0, "transformer": 0.0, "int8_product": 0.0}
    zero = np.array(0, dtype=np.uint8)
    hidden = enc.encoder.mlm.get_output_embeddings().in_features
    for q in queries:
        t0 = clock()
        ids = enc.tokenize(q.text).ids
        t1 = clock()
        x = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        sessions["transformer"].run(None, {"input_ids": x})
        t2 = clock()
        hq = np.zeros((len(ids), hidden), dtype=np.uint8)
        t3 = clock()
        sessions["int8_product"].run(None, {"hq": hq, "zh": zero})
        t4 = clock()
        for k, v in (("tokenizer", t1 - t0), ("transformer", t2 - t1), ("int8_product", t4 - t3)):
            total[k] += v
    out = {k: v / len(queries) * 1e3 for k, v in total.items()}
    out["sum"] = sum(out.values())
    return out


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of pipelines/bench_query_encoder.py (``description``: its help's first paragraph)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", default=str(REPO.parent / "shared" / "data" / "beir" / "scifact"),
                   help="BEIR folder or registry name")
    p.add_argument("--split", default="test")
    p.add_argument("--model", default="splade-tiny", help="model folder, hub id or offline alias")
    p.add_argument("--max-length-q", type=int, default=64, help="query max length in tokens")
    p.add_argument("--query-top-k", type=int, help="keep the k largest query weights (default: all)")
    p.add_argument("--scale", type=float, default=DEFAULT_SCALE, help="quantisation scale")
    p.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, from {', '.join(PATHS)}")
    p.add_argument("--warmup", type=int, default=20, help="queries run on every path before measuring")
    p.add_argument("--passes", type=int, default=3, help="measured passes over all queries")
    p.add_argument("--limit", type=int, help="only the first N queries (smoke test)")
    add_precision(p, note="; the ONNX paths compute in fp32 only")
    add_device(p, "cpu", "one-thread latency beside ONNX Runtime, which runs on the CPU; another device times the "
                         "torch path alone")
    p.add_argument("--work-dir", type=Path, default=REPO / "work", help="cache of the exported ONNX files")
    p.add_argument("--out", type=Path, default=REPO / "results" / "bench_query_encoder")
    return p.parse_args(argv)
