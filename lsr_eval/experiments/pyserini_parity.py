"""Parity with Pyserini on the same weights (pipelines/parity_pyserini.py): Pyserini's own SPLADE path (its
encoders, recorded; its quantisation ``round(w / 5 * 256)``) against lsr-eval's, the ablation steps that replace
Pyserini's parts one at a time, and the comparisons of vectors and runs that trace every difference to a cause."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[2]
STAGE = "parity-pyserini"
#: Pyserini's SPLADE quantisation: ``round(weight / weight_range * quant_range)`` (pyserini/encode/_splade.py).
WEIGHT_RANGE = 5
QUANT_RANGE = 256
TOP = 10

log = logging.getLogger(__name__)


def pyserini_quantize(weights) -> np.ndarray:
    """Pyserini's ``round(w / 5 * 256)`` on ``float64(w)``, in its order of operations (so the same float64 is
    rounded); ``np.rint`` and Python's ``round`` both round half to even."""
    return np.rint(np.asarray(weights, dtype=np.float64) / WEIGHT_RANGE * QUANT_RANGE).astype(np.int64)



def import_pyserini():
    """Pyserini's encode and search modules, with lsr-eval's JVM started first and a dummy OpenAI key (see
    pipelines/bench_query_path.py)."""
    from lsr_eval.anserini.pyserini_modules import pyserini_encode, pyserini_search

    return pyserini_encode(), pyserini_search()



def recording(cls):
    """``cls`` (a Pyserini SPLADE encoder) that also records, per text, the float weights it quantises and the
    integer weights it returns (unchanged)."""

    class Recording(cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.recorded: list[tuple[dict[str, float], dict[str, int]]] = []

        def _get_encoded_query_token_wight_dicts(self, tok_weights):
            out = super()._get_encoded_query_token_wight_dicts(tok_weights)
            self.recorded += list(zip(tok_weights, out))
            return out

    Recording.__name__ = f"Recording{cls.__name__}"
    return Recording



def pyserini_query_max_length() -> int:
    """The ``max_length`` Pyserini's ``SpladeQueryEncoder.encode`` uses when ``LuceneImpactSearcher`` calls it."""
    encode, _ = import_pyserini()
    return int(inspect.signature(encode.SpladeQueryEncoder.encode).parameters["max_length"].default)



def cached_slot(work: Path, kind: str, key: Mapping[str, Any], label: str) -> tuple[Path, dict | None]:
    """The cache slot of one artefact of this study under ``work``, and its manifest when it is complete."""
    from lsr_eval.workdir import cache_slot, cached

    slot = cache_slot(work / STAGE, kind, key, label)
    return slot, cached(slot, key)



def pyserini_encoding(corpus_file: Path, model_dir: str, key: dict, work: Path, batch_size: int,
                      limit: int | None) -> Path:
    """Pyserini's document encoding (``collection/embeddings.jsonl``, its JsonVectorCollection) and the float weights
    it quantised (``floats.jsonl``), as ``python -m pyserini.encode`` makes them; cached by ``key``."""
    import torch

    from lsr_eval.manifest import write_manifest

    slot, done = cached_slot(work, "pyserini-encodings", key, "pyserini-" + corpus_file.parent.name)
    if done is not None:
        log.info("reused Pyserini's encoding %s", slot)
        return slot
    encode, _ = import_pyserini()
    encoder = recording(encode.SpladeDocumentEncoder)(model_dir, device="cpu")
    fields = key["fields"]
    iterator = encode.JsonlCollectionIterator(str(corpus_file), fields, key["docid_field"])
    t0 = time.perf_counter()
    n = 0
    slot.mkdir(parents=True, exist_ok=True)
    writer = encode.JsonlRepresentationWriter(str(slot / "collection"))  # its __enter__ returns None
    with writer, open(slot / "floats.jsonl", "w", encoding="utf-8") as floats, torch.no_grad():
        for batch in iterator(batch_size):  # pyserini/encode/__main__.py, the loop body
            if limit is not None and n >= limit:
                break
            kwargs = {"fp16": False, "max_length": key["max_length"], "add_sep": False, "texts": batch["text"]}
            for name in fields:
                kwargs[f"{name}s"] = batch[name]
            encoder.recorded.clear()
            batch["vector"] = encoder.encode(**kwargs)
            writer.write(batch, fields)
            for doc_id, (w, _) in zip(batch["id"], encoder.recorded):
                floats.write(json.dumps({"id": doc_id, "vector": w}) + "\n")
            n += len(batch["id"])
    seconds = time.perf_counter() - t0
    write_manifest(slot, "pyserini-encode", key, counts={"documents": n}, seconds=seconds,
                   docs_per_second=n / seconds, outputs=["collection/embeddings.jsonl", "floats.jsonl"])
    return slot



def read_jsonl_vectors(path: Path) -> dict[str, dict[str, float]]:
    with open(path, encoding="utf-8") as f:
        return {(d := json.loads(line))["id"]: d["vector"] for line in f}



#: lsr-eval sources that compute the float vectors: their sha256 keys the cached full encoding.
ENCODER_SOURCES = ("lsr_eval/models/encoder.py", "lsr_eval/models/kernels.py", "lsr_eval/models/precision.py",
                   "lsr_eval/models/loading.py", "lsr_eval/models/splade.py", "lsr_eval/encode/corpus.py")



def sources_sha256(root: Path = REPO) -> dict[str, str | None]:
    import hashlib

    return {f: hashlib.sha256((root / f).read_bytes()).hexdigest() if (root / f).is_file() else None
            for f in ENCODER_SOURCES}



def lsr_encoding(dataset, model, key: dict, work: Path, batch_size: int, limit: int | None) -> Path:
    """lsr-eval's document encoding with ``model`` (no sparsification here), cached by ``key``."""
    from itertools import islice

    from lsr_eval.encode.corpus import encode_corpus
    from lsr_eval.encode.splade import SpladeTextEncoder

    slot, done = cached_slot(work, "encodings", key, "lsr-eval-full")
    if done is None:
        encode_corpus(islice(dataset.docs(), limit), SpladeTextEncoder(model.document), slot, key,
                      encoder_info=key["encoder"], batch_size=batch_size)
    else:
        log.info("reused lsr-eval's full encoding %s", slot)
    return slot



def write_collection(rows: Mapping[str, Mapping[str, int]], folder: Path) -> int:
    """A JsonVectorCollection (``docs/docs.jsonl``) of integer vectors; returns the documents written."""
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    with open(folder / "docs" / "docs.jsonl", "w", encoding="utf-8") as f:
        for doc_id, vec in rows.items():
            f.write(json.dumps({"id": doc_id, "contents": "", "vector": dict(vec)}) + "\n")
    return len(rows)



def impact_index(collection_dir: Path, key: dict, label: str, work: Path, threads: int,
                 make: Callable[[Path], None] | None = None) -> Path:
    """An impact index of ``collection_dir`` (written first by ``make`` when given), cached by ``key``; refuses an
    index with fewer documents than the collection."""
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.errors import LsrEvalError
    from lsr_eval.manifest import write_manifest

    slot, done = cached_slot(work, "indexes", key, label)
    if done is not None:
        return slot / "index"
    if make is not None:
        make(slot / "collection")
        collection_dir = slot / "collection" / "docs"
    given = sum(1 for f in collection_dir.iterdir() for _ in open(f, encoding="utf-8"))
    counts = build_index(collection_dir, slot / "index", "impact", threads=threads)
    if counts.total_indexed != given:
        raise LsrEvalError(f"{collection_dir}: {given} documents given, {counts.total_indexed} indexed")
    write_manifest(slot, "index", key, counts=counts.to_dict(), documents=given)
    return slot / "index"



def index_df(index_dir: Path) -> tuple[int, dict[str, int]]:
    """Documents and per-term document frequency of an index (as LuceneImpactSearcher reads them for its idf)."""
    from lsr_eval.anserini.term_stats import TermStats

    with TermStats(str(index_dir)) as stats:
        return stats.documents, stats.all_doc_freqs()



def row_maps(ids: Sequence[str], matrix, terms: Sequence[str], quantize: Callable[[np.ndarray], np.ndarray],
             drop: set[int] = frozenset()) -> dict[str, dict[str, int]]:
    """Integer ``{term: weight}`` per row (weights <= 0 after quantisation left out; ``drop``: vocabulary ids)."""
    out = {}
    for i, doc_id in enumerate(ids):
        s, e = matrix.indptr[i], matrix.indptr[i + 1]
        cols, q = matrix.indices[s:e], quantize(matrix.data[s:e])
        out[doc_id] = {terms[c]: int(v) for c, v in zip(cols, q) if v > 0 and c not in drop}
    return out



def float_maps(ids: Sequence[str], matrix, terms: Sequence[str]) -> dict[str, dict[str, float]]:
    return {doc_id: {terms[c]: float(v) for c, v in zip(matrix.indices[matrix.indptr[i]:matrix.indptr[i + 1]],
                                                          matrix.data[matrix.indptr[i]:matrix.indptr[i + 1]])}
            for i, doc_id in enumerate(ids)}



def compare_vectors(ours_int: Mapping[str, Mapping[str, int]], theirs_int: Mapping[str, Mapping[str, int]],
                    ours_float: Mapping[str, Mapping[str, float]], theirs_float: Mapping[str, Mapping[str, float]],
                    what: str, listed: int = 50) -> dict[str, Any]:
    """Per id: equal integer vectors (positive weights)? Differing entries listed with both floats and
    ``w / 5 * 256``; float weights compared too (largest absolute difference, entries differing)."""
    missing = sorted(set(ours_int) ^ set(theirs_int))
    equal = 0
    diffs: list[dict[str, Any]] = []
    float_diff_entries = float_max = 0.0
    float_equal_ids = 0
    for doc_id in sorted(set(ours_int) & set(theirs_int), key=str):
        a = ours_int[doc_id]
        b = {t: v for t, v in theirs_int[doc_id].items() if v > 0}
        equal += a == b
        for t in sorted(set(a) | set(b)):
            if a.get(t, 0) != b.get(t, 0):
                fo, ft = ours_float[doc_id].get(t, 0.0), theirs_float[doc_id].get(t, 0.0)
                diffs.append({"id": doc_id, "term": t, "lsr_eval": a.get(t, 0), "pyserini": b.get(t, 0),
                              "lsr_eval_float": fo, "pyserini_float": ft,
                              "lsr_eval_scaled": fo / WEIGHT_RANGE * QUANT_RANGE,
                              "pyserini_scaled": ft / WEIGHT_RANGE * QUANT_RANGE})
        fa, fb = ours_float[doc_id], theirs_float[doc_id]
        d = [abs(fa.get(t, 0.0) - fb.get(t, 0.0)) for t in set(fa) | set(fb)]
        n_diff = sum(x > 0 for x in d)
        float_equal_ids += n_diff == 0
        float_diff_entries += n_diff
        float_max = max([float_max, *d])
    ids = len(set(ours_int) & set(theirs_int))
    half = sum(abs(abs(x["pyserini_scaled"] - math.floor(x["pyserini_scaled"])) - 0.5) < 1e-3 for x in diffs)
    return {"what": what, "compared": ids, "missing_on_one_side": missing[:20], "equal_integer_vectors": equal,
            "differing_integer_vectors": ids - equal, "differing_entries": len(diffs),
            "differing_entries_within_0.001_of_a_half": half,
            "max_abs_integer_difference": max((abs(x["lsr_eval"] - x["pyserini"]) for x in diffs), default=0),
            "equal_float_vectors": float_equal_ids, "float_entries_differing": int(float_diff_entries),
            "max_abs_float_difference": float_max, "entries": sum(len(v) for v in ours_int.values()),
            "differences": diffs[:listed]}



def without(matrix, columns: set[int]):
    """``matrix`` (CSR) with ``columns`` removed from its stored entries."""
    m = matrix.tocsr(copy=True)
    m.data[np.isin(m.indices, list(columns))] = 0
    m.eliminate_zeros()
    return m



def capped_check(full, cached, encoder, special_ids: set[int], rows: int = 256) -> dict[str, Any]:
    """Is the cached (benchmark) encoding the full one with the encoder's sparsification applied (bit for bit)?
    And how many documents have more non-special terms than its top-k (where the cap changes a vector)?"""
    import torch

    equal = full.shape == cached.shape
    for lo in range(0, full.shape[0], rows):
        dense = torch.from_numpy(full[lo:lo + rows].toarray())
        capped = encoder.sparsify.apply(dense, encoder.special_ids).numpy()
        equal = equal and np.array_equal(capped, cached[lo:lo + rows].toarray())
    dims = np.diff(without(full, special_ids).indptr)
    top_k = encoder.sparsify.top_k
    return {"documents": int(full.shape[0]), "cached_equals_full_sparsified": bool(equal),
            "max_terms_without_specials": int(dims.max()),
            "documents_over_doc_top_k": int((dims > top_k).sum()) if top_k else 0}



def float_top(q_matrix, d_matrix, qids: Sequence[str], doc_ids: Sequence[str], drop: set[int], remove_query: bool,
              depth: int = TOP) -> dict[str, set[str]]:
    """Top-``depth`` document set per query by the exact float dot product (no quantisation), special tokens
    dropped: what both integer paths approximate. Hits whose docid is the query id are left out when
    ``remove_query``."""
    scores = (without(d_matrix, drop).astype(np.float64) @ without(q_matrix, drop).astype(np.float64).T).toarray()
    position = {d: i for i, d in enumerate(doc_ids)}
    out = {}
    for j, qid in enumerate(qids):
        col = scores[:, j].copy()
        if remove_query and qid in position:
            col[position[qid]] = -np.inf
        best = np.argsort(-col, kind="stable")[:depth]
        out[qid] = {doc_ids[i] for i in best if col[i] > 0}
    return out



@dataclass(frozen=True)
class Step:
    """One stage of the ablation: Pyserini's path with some of its parts replaced by lsr-eval's."""

    name: str
    description: str



#: From Pyserini's path to lsr-eval's, one change per step (each step searched with lsr-eval's ImpactSearcher except
#: the first).
STEPS: tuple[Step, ...] = (
    Step("pyserini", "Pyserini: SpladeDocumentEncoder -> Anserini impact index; LuceneImpactSearcher with "
                     "SpladeQueryEncoder (scale 51.2, specials kept, query max_length 256, idf > 0 filter)"),
    Step("lsr-queries", "same index; queries = lsr-eval's float vectors (max_length 256, specials kept) quantised "
                        "Pyserini's way and idf-filtered, searched by lsr-eval's ImpactSearcher"),
    Step("lsr-documents", "index of lsr-eval's document float vectors quantised Pyserini's way (specials kept); "
                          "queries as before"),
    Step("no-specials", "[CLS]/[SEP] (all special tokens) dropped from documents and queries; scale 51.2"),
    Step("no-idf-filter", "query terms no longer filtered by idf > 0 (lsr-eval sends every term)"),
    Step("lsr-eval", "lsr-eval's benchmark path: scale 100 (rint(w*100)), query max_length 64 and top-256 terms, "
                     "document top-1,024 terms, its cached index"),
)



def first_change(runs: Mapping[str, Mapping[str, Mapping[str, float]]], qid: str) -> str | None:
    """The first step whose top-10 set differs from the previous step's, for a query."""
    names = [s.name for s in STEPS]
    for prev, cur in zip(names, names[1:]):
        if set(list(runs[prev][qid])[:TOP]) != set(list(runs[cur][qid])[:TOP]):
            return cur
    return None



def explain_query(qid: str, runs, float_q: Mapping[str, Mapping[str, float]],
                  float_d: Mapping[str, Mapping[str, float]], specials: set[str],
                  exact_top: Mapping[str, set[str]]) -> dict[str, Any]:
    """Docs entering / leaving the top 10 between Pyserini and lsr-eval, with their ranks and scores in both runs and
    their float score (dot product of the float vectors without special tokens): near-ties explain quantisation
    swaps."""
    py, ours = runs["pyserini"][qid], runs["lsr-eval"][qid]
    top_py, top_ours = list(py)[:TOP], list(ours)[:TOP]
    q = {t: w for t, w in float_q[qid].items() if t not in specials}

    def doc(d: str) -> dict[str, Any]:
        fd = float_d.get(d, {})
        return {"doc": d, "rank_pyserini": list(py).index(d) + 1 if d in py else None,
                "score_pyserini": py.get(d), "rank_lsr_eval": list(ours).index(d) + 1 if d in ours else None,
                "score_lsr_eval": ours.get(d), "float_score": sum(w * fd.get(t, 0.0) for t, w in q.items())}

    tenth = {"pyserini": doc(top_py[-1]) if top_py else None, "lsr_eval": doc(top_ours[-1]) if top_ours else None}
    agree = [name for name, top in (("pyserini", top_py), ("lsr-eval", top_ours)) if set(top) == exact_top[qid]]
    return {"qid": qid, "first_step": first_change(runs, qid), "float_top10_equals": agree,
            "only_pyserini": [doc(d) for d in top_py if d not in top_ours],
            "only_lsr_eval": [doc(d) for d in top_ours if d not in top_py], "tenth": tenth}


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of pipelines/parity_pyserini.py (``description``: its help's first paragraph)."""
    from lsr_eval.models.arguments import add_device, add_precision

    p = argparse.ArgumentParser(description=description)
    p.add_argument("--benchmark", type=Path, default=REPO / "pipelines" / "benchmarks" / "scifact-splade-tiny.yaml",
                   help="benchmark config: its first dataset and its (first) splade system are compared")
    p.add_argument("--system", help="name of the splade system in the benchmark (default: the first)")
    p.add_argument("--k", type=int, default=1000, help="hits per query")
    p.add_argument("--py-batch-size", type=int, default=32,
                   help="Pyserini document batch size (its CLI default is 64; 32 bounds memory on a shared machine)")
    p.add_argument("--threads", type=int, default=2, help="indexing and search threads")
    add_precision(p, default=None, default_text="the benchmark system's own, fp32 unless its YAML sets precision "
                                                 "(Pyserini computes in fp32)")
    add_device(p, "cpu", "Pyserini's encoders run on the CPU here, and the vectors are compared bit for bit, so "
                         "lsr-eval's run on the same device")
    p.add_argument("--work-dir", type=Path, default=REPO / "work")
    p.add_argument("--out", type=Path, default=REPO / "results" / "parity-pyserini")
    p.add_argument("--limit-docs", type=int, help="smoke test: only the first N documents (no result files)")
    return p.parse_args(argv)


@dataclasses.dataclass
class ParityRun:
    """One run of the study: ``parity.json``'s content, the manifest's experiment, and what ``per_query.csv`` is
    made of (the runs of every ablation step and the per-query nDCG@10 of both paths)."""

    result: dict[str, Any]
    experiment: dict[str, Any]
    qids: list[str]
    runs: dict[str, dict[str, dict[str, float]]]
    per_query: dict[str, dict[str, float]]


def run_parity(args: argparse.Namespace, config, started: float | None = None) -> ParityRun:
    """Both paths, the ablation and every comparison on the options of :func:`parse_args`, for the benchmark
    ``config`` (:func:`lsr_eval.benchmark.config.load_config` of ``args.benchmark``); ``started``: the
    ``time.perf_counter()`` the recorded seconds count from (default now). Nothing is written but the caches."""
    t_start = time.perf_counter() if started is None else started
    encode, search = import_pyserini()
    import torch

    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.reader import load_matrix, read_vocab
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.errors import ConfigError, LsrEvalError
    from lsr_eval.evaluation import evaluate
    from lsr_eval.evaluation.agreement import run_agreement
    from lsr_eval.experiments.query_path import impact_artefacts
    from lsr_eval.experiments.splade import (SpladeSettings, encoder_fingerprint, inference_record, load_model,
                                             model_fingerprint, settings_record)
    from lsr_eval.export.quantize import quantize
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.manifest import installed_version, machine
    from lsr_eval.models.offline import resolve_model

    systems = [s for s in config.systems if s.kind == "splade" and (args.system is None or s.name == args.system)]
    if not systems:
        raise ConfigError(f"{args.benchmark}: no splade system" + (f" named {args.system!r}" if args.system else ""))
    system, entry = systems[0], config.datasets[0]
    dataset = load_dataset(entry.spec, entry.split)
    if entry.measures:
        dataset.measures = tuple(entry.measures)
    corpus_file = Path(dataset.corpus_key().get("path", ""))
    if not corpus_file.is_file():
        raise ConfigError(f"{entry.spec}: Pyserini's encoder reads a corpus.jsonl; this dataset has none "
                          f"({dataset.corpus_key()})")
    s = SpladeSettings(**{**system.params, "model": resolve_model(system.params["model"]), "device": args.device,
                          **({"precision": args.precision, "bf16": False} if args.precision else {})})
    queries = dataset.queries()
    qids = [q.id for q in queries]
    remove_query = dataset.remove_query if s.remove_query is None else s.remove_query

    # lsr-eval's benchmark path (cached index of the benchmark's system)
    model = load_model(s).eval()
    art = impact_artefacts(dataset, model, s, None, args.work_dir, args.threads)
    log.info("lsr-eval impact index %s (%s)", art["index_dir"], art["source"])
    enc_q = encode_queries(queries, SpladeTextEncoder(model.query), batch_size=s.batch_size)
    maps_lsr = query_weight_maps(enc_q.vectors, s.scale)
    with ImpactSearcher(str(art["index_dir"]), max_clauses=s.max_clauses) as searcher:
        run_lsr, counts_lsr = searcher.batch_search(maps_lsr, k=args.k, threads=args.threads,
                                                     remove_query=remove_query)

    # lsr-eval's float vectors without sparsification, specials kept, queries at Pyserini's max length
    py_q_len = pyserini_query_max_length()
    s_full = dataclasses.replace(s, doc_top_k=None, query_top_k=None, drop_special=False, max_length_q=py_q_len)
    full = load_model(s_full).eval()
    doc_len = model.document.max_length
    fp = model_fingerprint(s.model)
    full_key = {"stage": "encode", "encoder": encoder_fingerprint(s_full, full.document),  # resolved precision
                "corpus": dataset.corpus_key(), "code": sources_sha256(), "limit": args.limit_docs}
    full_slot = lsr_encoding(dataset, full, full_key, args.work_dir, s.batch_size, args.limit_docs)
    doc_ids, d_full = load_matrix(full_slot)
    terms = read_vocab(full_slot)
    special_ids = set(full.document.special_ids)
    specials = {terms[i] for i in special_ids}
    q_full = encode_queries(queries, SpladeTextEncoder(full.query), batch_size=s.batch_size)

    # the cached benchmark encoding = the full one with specials dropped and top-1,024? (same floats, same caps)
    _, d_cached = load_matrix(art["encoding_dir"])
    d_cached = d_cached[:len(doc_ids)]
    cache_check = capped_check(d_full, d_cached, model.document, special_ids)
    q_dims = np.diff(without(q_full.vectors.matrix, special_ids).indptr)
    query_check = {"max_tokens": int(q_full.n_tokens.max()), "lsr_eval_max_length": model.query.max_length,
                   "queries_over_lsr_eval_max_length": int((q_full.n_tokens > model.query.max_length).sum()),
                   "max_terms_without_specials": int(q_dims.max()),
                   "queries_over_query_top_k": int((q_dims > (s.query_top_k or q_dims.max())).sum())}

    # Pyserini's documents
    py_key = {"stage": "pyserini-encode", "model": fp, "corpus": dataset.corpus_key(),
              "encoder": "pyserini.encode.SpladeDocumentEncoder", "pyserini": installed_version("pyserini"),
              "torch": torch.__version__, "fields": ["title", "text"], "docid_field": "_id",
              "max_length": doc_len, "batch_size": args.py_batch_size, "device": "cpu", "limit": args.limit_docs}
    py_slot = pyserini_encoding(corpus_file, s.model, py_key, args.work_dir, args.py_batch_size, args.limit_docs)
    py_int = read_jsonl_vectors(py_slot / "collection" / "embeddings.jsonl")
    py_float = read_jsonl_vectors(py_slot / "floats.jsonl")
    if len(py_int) != len(doc_ids):
        raise LsrEvalError(f"Pyserini encoded {len(py_int)} documents, lsr-eval {len(doc_ids)}")
    py_zero_entries = sum(v == 0 for vec in py_int.values() for v in vec.values())
    idx_py = impact_index(py_slot / "collection", {"stage": "index", "collection": py_key}, "pyserini", args.work_dir,
                          args.threads)

    # tokenisation: Pyserini's text (title.strip() + " " + text.strip()) against lsr-eval's contents
    tok = full.document.tokenizer
    docs = {d.id: d for d in dataset.docs()}
    ids_same = 0
    for chunk in range(0, len(doc_ids), 256):
        part = doc_ids[chunk:chunk + 256]
        a = tok([docs[d].contents for d in part], truncation=True, max_length=doc_len)["input_ids"]
        b = tok([f"{docs[d].title.strip()} {docs[d].text.strip()}" for d in part], truncation=True,
                max_length=doc_len)["input_ids"]
        ids_same += sum(x == y for x, y in zip(a, b))

    # vector-level identity: lsr-eval floats quantised Pyserini's way (specials kept) vs Pyserini's integers
    d_pyway = row_maps(doc_ids, d_full, terms, pyserini_quantize)
    d_float = float_maps(doc_ids, d_full, terms)
    docs_cmp = compare_vectors(d_pyway, py_int, d_float, py_float, "documents")
    exact_top = float_top(q_full.vectors.matrix, d_full, qids, doc_ids, special_ids, remove_query)
    del d_full

    # Pyserini's search (its query encoder records what it sends)
    py_qenc = recording(encode.SpladeQueryEncoder)(s.model)
    run_py: dict[str, dict[str, float]] = {}
    py_qint, py_qfloat = {}, {}
    with torch.no_grad():
        py_searcher = search.LuceneImpactSearcher(str(idx_py), py_qenc)
        for q in queries:
            py_qenc.recorded.clear()
            hits = py_searcher.search(q.text, args.k)
            py_qfloat[q.id], py_qint[q.id] = py_qenc.recorded[-1]
            run_py[q.id] = {h.docid: float(h.score) for h in hits if not (remove_query and h.docid == q.id)}
    q_pyway = row_maps(q_full.vectors.ids, q_full.vectors.matrix, terms, pyserini_quantize)
    q_float = float_maps(q_full.vectors.ids, q_full.vectors.matrix, terms)
    queries_cmp = compare_vectors(q_pyway, py_qint, q_float, py_qfloat, "queries")
    py_zero_query_terms = sum(v == 0 for vec in py_qint.values() for v in vec.values())

    # the ablation, step by step
    def idf_filter(maps, index_dir):
        n, df = index_df(index_dir)
        kept = {qid: {t: w for t, w in m.items() if t in df and math.log(n / df[t]) > 0} for qid, m in maps.items()}
        return kept, {"terms_at_idf_0": sorted(t for t, f in df.items() if f == n),
                      "query_terms_removed": sum(len(m) - len(kept[q]) for q, m in maps.items())}

    def run_on(index_dir, maps):
        with ImpactSearcher(str(index_dir), max_clauses=max(s.max_clauses, max(map(len, maps.values())))) as srch:
            return srch.batch_search(maps, k=args.k, threads=args.threads, remove_query=remove_query)[0]

    idx_lsr_py = impact_index(Path(), {"stage": "index", "collection": "lsr-eval floats, Pyserini quantisation",
                                       "encoding": full_key, "specials": True, "limit": args.limit_docs},
                              "lsr-pyway", args.work_dir, args.threads, make=lambda f: write_collection(d_pyway, f))
    d_nospecial = {d: {t: w for t, w in v.items() if t not in specials} for d, v in d_pyway.items()}
    idx_nospecial = impact_index(Path(), {"stage": "index", "collection": "lsr-eval floats, Pyserini quantisation",
                                          "encoding": full_key, "specials": False, "limit": args.limit_docs},
                                 "lsr-pyway-nospecial", args.work_dir, args.threads,
                                 make=lambda f: write_collection(d_nospecial, f))
    q_nospecial = {q: {t: w for t, w in v.items() if t not in specials} for q, v in q_pyway.items()}
    filters = {}
    maps_a, filters["pyserini-index"] = idf_filter(q_pyway, idx_py)
    maps_b, filters["lsr-pyway-index"] = idf_filter(q_pyway, idx_lsr_py)
    maps_c, filters["no-specials-index"] = idf_filter(q_nospecial, idx_nospecial)
    runs = {"pyserini": run_py, "lsr-queries": run_on(idx_py, maps_a), "lsr-documents": run_on(idx_lsr_py, maps_b),
            "no-specials": run_on(idx_nospecial, maps_c), "no-idf-filter": run_on(idx_nospecial, q_nospecial),
            "lsr-eval": run_lsr}
    if [s_.name for s_ in STEPS] != list(runs):
        raise LsrEvalError("ablation runs and STEPS disagree")
    # lsr-eval's own scale on its vectors without the caps: equals the benchmark's maps when the caps never bind
    maps_100 = {q: {t: int(w) for t, w in zip(v, quantize(np.array(list(v.values())), s.scale)) if w > 0}
                for q, v in ((q, {t: w for t, w in fv.items() if t not in specials}) for q, fv in q_float.items())}
    same_query_maps = sum(maps_100[q] == dict(maps_lsr[q]) for q in qids)

    qrels = dataset.qrels()
    metrics = {name: evaluate(qrels, run, dataset.measures) for name, run in runs.items()}
    per_query = {name: evaluate(qrels, run, ["nDCG@10"], per_query=True)["nDCG@10"]
                 for name, run in (("pyserini", run_py), ("lsr-eval", run_lsr))}
    steps = []
    names = list(runs)
    for prev, cur in zip(names, names[1:]):
        steps.append({"from": prev, "to": cur, **run_agreement(runs[prev], runs[cur], qids),
                      "nDCG@10_from": metrics[prev]["nDCG@10"], "nDCG@10_to": metrics[cur]["nDCG@10"]})
    end_to_end = run_agreement(run_py, run_lsr, qids)
    explained = [explain_query(q, runs, q_float, d_float, specials, exact_top)
                 for q in end_to_end["differing_top10_set"]]
    float_agreement = {name: sum(set(list(runs[name][q])[:TOP]) == exact_top[q] for q in qids)
                       for name in ("pyserini", "lsr-eval")}
    float_agreement["differing_queries_agreeing_with"] = {
        who: sum(x["float_top10_equals"] == [who] for x in explained) for who in ("pyserini", "lsr-eval")}
    float_agreement["differing_queries_agreeing_with"]["neither"] = sum(not x["float_top10_equals"]
                                                                        for x in explained)
    delta = metrics["lsr-eval"]["nDCG@10"] - metrics["pyserini"]["nDCG@10"]
    result = {
        "benchmark": str(args.benchmark.relative_to(REPO) if args.benchmark.is_relative_to(REPO) else args.benchmark),
        "system": system.name, "settings": settings_record(s), "inference": inference_record(model),
        "dataset": dataset.describe(),
        "queries": len(queries), "k": args.k, "remove_query": remove_query,
        "pyserini": {"version": installed_version("pyserini"), "document_max_length": doc_len,
                     "query_max_length": py_q_len, "document_batch_size": args.py_batch_size,
                     "scale": QUANT_RANGE / WEIGHT_RANGE, "quantisation": "round(w / 5 * 256)",
                     "zero_weight_document_entries": py_zero_entries,
                     "zero_weight_query_terms": py_zero_query_terms, "encoding": py_key},
        "targets": {"nDCG@10_within": 0.002, "same_top10_set_fraction": 0.95},
        "nDCG@10": {"pyserini": metrics["pyserini"]["nDCG@10"], "lsr_eval": metrics["lsr-eval"]["nDCG@10"],
                    "difference": delta, "within_target": abs(delta) <= 0.002},
        "end_to_end_top10": {**end_to_end, "fraction": end_to_end["same_top10_set"] / len(qids),
                             "within_target": end_to_end["same_top10_set"] / len(qids) >= 0.95},
        "metrics": metrics, "steps": [dataclasses.asdict(x) for x in STEPS], "ablation": steps,
        "idf_filter": filters, "differing_queries_explained": explained,
        "float_ranking_top10_same_set": float_agreement,
        "special_token_entries": {name: sum(v > 0 and t in specials for vec in maps.values() for t, v in vec.items())
                                  for name, maps in (("pyserini_documents", py_int), ("lsr_eval_documents", d_pyway),
                                                     ("pyserini_queries", py_qint), ("lsr_eval_queries", q_pyway))},
        "vectors": {"documents": docs_cmp, "queries": queries_cmp,
                    "tokenisation_identical_documents": ids_same, "documents_compared": len(doc_ids)},
        "lsr_eval_checks": {**cache_check, **query_check, "benchmark_query_maps_equal_uncapped_scale_100":
                            same_query_maps, "search": counts_lsr.to_dict()},
        "artefacts": {"lsr_eval_index": str(art["index_dir"]), "lsr_eval_encoding": str(art["encoding_dir"]),
                      "lsr_eval_full_encoding": str(full_slot), "pyserini_encoding": str(py_slot),
                      "pyserini_index": str(idx_py), "lsr_pyway_index": str(idx_lsr_py),
                      "lsr_pyway_nospecial_index": str(idx_nospecial)},
        "machine": machine(), "load_average_end": list(os.getloadavg()),
        "seconds": time.perf_counter() - t_start,
    }
    experiment = {"benchmark": STAGE, "config": result["benchmark"], "system": system.name,
                  "dataset": dataset.describe(), "model": fp, "k": args.k, "py_batch_size": args.py_batch_size}
    if result["settings"].get("precision"):   # resolved, only when not fp32 (what every earlier parity ran in)
        experiment["precision"] = result["settings"]["precision"]
    return ParityRun(result=result, experiment=experiment, qids=qids, runs=runs, per_query=per_query)
