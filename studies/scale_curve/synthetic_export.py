"""A synthetic collection (:mod:`studies.scale_curve.synthetic`) written as a ``JsonVectorCollection`` folder with its
queries and qrels, one chunk in memory at a time."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from lsr_eval.export.jsonl import AtomicLines, json_dumper
from lsr_eval.workdir import folder_bytes
from studies.scale_curve.synthetic import (
    DataSpec,
    ZipfSampler,
    doc_id,
    draw_vectors,
    lognormal_lengths,
    make_queries,
    term_names,
)

log = logging.getLogger(__name__)


def write_synthetic(folder: Path, n_docs: int, spec: DataSpec) -> dict[str, Any]:
    """Write the synthetic collection (``folder/collection/part-NNN.jsonl``), ``queries.jsonl`` and ``qrels.json``
    into the new ``folder``; returns counts and timings (generation vs writing). Memory: one chunk at a time."""
    spec.check()
    dumps = json_dumper()[1]
    names = term_names(spec.vocab)
    sampler = ZipfSampler(spec.vocab, spec.zipf)
    collection = folder / "collection"
    collection.mkdir(parents=True)
    qrng = np.random.default_rng([spec.seed, n_docs, 1])
    planted = qrng.integers(0, n_docs, spec.queries)
    by_doc: dict[int, list[int]] = {}
    for qi, d in enumerate(planted.tolist()):
        by_doc.setdefault(d, []).append(qi)
    planted_terms: dict[int, np.ndarray] = {}
    gen_s = write_s = 0.0
    postings = written = empty = 0
    lengths_hist = np.zeros(spec.max_doc_terms + 1, dtype=np.int64)
    term_df = np.zeros(spec.vocab, dtype=np.int64)
    out: AtomicLines | None = None
    files: list[str] = []
    try:
        for c, start in enumerate(range(0, n_docs, spec.chunk)):
            t0 = time.perf_counter()
            n = min(spec.chunk, n_docs - start)
            rng = np.random.default_rng([spec.seed, c])
            sizes = lognormal_lengths(rng, n, spec.doc_terms, spec.doc_sigma, spec.max_doc_terms)
            offsets, terms, impacts = draw_vectors(rng, sizes, sampler, spec.impact_median, spec.impact_sigma)
            for d in (d for d in by_doc if start <= d < start + n):
                planted_terms[d] = terms[offsets[d - start]:offsets[d - start + 1]].copy()
            t1 = time.perf_counter()
            gen_s += t1 - t0
            term_list, imp_list, off = terms.tolist(), impacts.tolist(), offsets.tolist()
            lines = []
            for i in range(n):
                a, b = off[i], off[i + 1]
                lines.append(dumps({"id": doc_id(start + i), "contents": "",
                                    "vector": dict(zip([names[t] for t in term_list[a:b]], imp_list[a:b]))}))
                empty += a == b
            i = 0
            while i < n:  # split the chunk at file boundaries
                if out is None:
                    name = f"part-{len(files):03d}.jsonl"
                    files.append(name)
                    out = AtomicLines(collection / name, compress=False)
                take = min(n - i, spec.file_docs - out.lines)
                out.write_lines(lines[i:i + take])
                i += take
                if out.lines >= spec.file_docs:
                    out.close()
                    out = None
            written += n
            postings += len(terms)
            lengths_hist += np.bincount(np.diff(offsets), minlength=spec.max_doc_terms + 1)
            np.add.at(term_df, terms, 1)
            write_s += time.perf_counter() - t1
            if n_docs > spec.chunk:
                log.info("export %d: %d/%d documents (%.0fs)", n_docs, written, n_docs, gen_s + write_s)
        if out is not None:
            out.close()
            out = None
    except BaseException:
        if out is not None:
            out.abort()
        raise
    t0 = time.perf_counter()
    queries, qrels = make_queries(n_docs, spec, planted, planted_terms, sampler, names)
    with open(folder / "queries.jsonl", "wb") as f:
        for qid, vec in queries.items():
            f.write(dumps({"id": qid, "vector": vec}) + b"\n")
    (folder / "qrels.json").write_text(json.dumps(qrels))
    write_s += time.perf_counter() - t0
    q_terms = [len(v) for v in queries.values()]
    mean_len = postings / max(written, 1)
    return {"documents": written, "postings": int(postings), "empty_documents": int(empty), "files": files,
            "mean_terms_per_doc": round(mean_len, 2), "max_terms_per_doc": int(np.flatnonzero(lengths_hist).max()),
            "terms_used": int((term_df > 0).sum()), "top_term_df": int(term_df.max()),
            "queries": len(queries), "mean_terms_per_query": round(sum(q_terms) / len(q_terms), 2),
            "generate_seconds": round(gen_s, 3), "write_seconds": round(write_s, 3),
            "collection_bytes": folder_bytes(collection)}
