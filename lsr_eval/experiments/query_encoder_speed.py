"""Query-encoder speed (pipelines/bench_query_encoder.py): the ONNX query path's work per step, done step by step,
and the floor of its pruned head (what remains when the head's product is skipped)."""

from __future__ import annotations

import time


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

