"""Parity with Pyserini on the same weights (studies/pyserini_parity/run.py): Pyserini's own SPLADE path (its
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
    studies/query_path/run.py)."""
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
            if limit is not None and n + len(batch["id"]) > limit:  # the last batch: only up to the limit
                batch = {name: values[:limit - n] for name, values in batch.items()}
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
    """The options of studies/pyserini_parity/run.py (``description``: its help's first paragraph)."""
    from lsr_eval.commands.options import add_device, add_precision

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


@dataclasses.dataclass
class _Study:
    """The study's inputs: the options, the benchmark's SPLADE system, its first dataset (with the corpus file
    Pyserini's encoder reads) and its queries, and lsr-eval's settings (``fingerprint``: of their model)."""

    args: argparse.Namespace
    system: Any
    dataset: Any
    corpus_file: Path
    s: Any
    fingerprint: dict[str, Any]
    queries: list
    qids: list[str]
    remove_query: bool


@dataclasses.dataclass
class _LsrPath:
    """lsr-eval's benchmark path: its model, cached artefacts, query weight maps, run and search counts."""

    model: Any
    art: dict[str, Any]
    maps: dict[str, Any]
    run: dict[str, dict[str, float]]
    counts: Any


@dataclasses.dataclass
class _FullEncoding:
    """lsr-eval's float vectors without sparsification (specials kept, queries at Pyserini's max length): the model,
    the encoding's cache key and folder, its ids and vocabulary, the special tokens, and the encoded queries."""

    model: Any
    key: dict[str, Any]
    slot: Path
    doc_ids: list[str]
    terms: list[str]
    special_ids: set[int]
    specials: set[str]
    queries: Any
    query_max_length: int


@dataclasses.dataclass
class _PyseriniDocs:
    """Pyserini's document encoding: its cache key and folder, its integer and float vectors, its zero-weight
    entries, and its index."""

    key: dict[str, Any]
    slot: Path
    ints: dict[str, dict[str, int]]
    floats: dict[str, dict[str, float]]
    zero_entries: int
    index: Path


@dataclasses.dataclass
class _PyseriniQueries:
    """Pyserini's search: its run, and the integer and float query vectors its encoder sent."""

    run: dict[str, dict[str, float]]
    ints: dict[str, dict[str, int]]
    floats: dict[str, dict[str, float]]


@dataclasses.dataclass
class _Vectors:
    """lsr-eval's vectors quantised Pyserini's way and as floats, their comparisons with Pyserini's, and the exact
    float top 10 per query."""

    d_pyway: dict[str, dict[str, int]]
    d_float: dict[str, dict[str, float]]
    docs_cmp: dict[str, Any]
    exact_top: dict[str, set[str]]
    q_pyway: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    q_float: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    queries_cmp: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Ablation:
    """The run of every ablation step (in :data:`STEPS` order), the idf filter of each index, and the two indexes
    of lsr-eval's vectors built for it."""

    runs: dict[str, dict[str, dict[str, float]]]
    filters: dict[str, Any]
    idx_lsr_py: Path
    idx_nospecial: Path


def _open_study(args: argparse.Namespace, config) -> _Study:
    """The benchmark's (named or first) SPLADE system on its first dataset, which must have a corpus.jsonl, with
    lsr-eval's settings on the options' device and precision."""
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.errors import ConfigError
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.pipeline.splade import SpladeSettings, model_fingerprint

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
    s = SpladeSettings.from_flat(**{**system.params, "model": resolve_model(system.params["model"]),
                                    "device": args.device, **({"precision": args.precision} if args.precision else {})})
    queries = dataset.queries()
    remove_query = dataset.remove_query if s.search.remove_query is None else s.search.remove_query
    return _Study(args, system, dataset, corpus_file, s, model_fingerprint(s.model), queries, [q.id for q in queries],
                  remove_query)


def _lsr_path(study: _Study) -> _LsrPath:
    """lsr-eval's benchmark path: the cached impact index of the benchmark's system, searched with its queries."""
    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.pipeline.splade import load_model
    from studies.query_path.measure import impact_artefacts

    args, s = study.args, study.s
    model = load_model(s).eval()
    art = impact_artefacts(study.dataset, model, s, None, args.work_dir, args.threads)
    log.info("lsr-eval impact index %s (%s)", art["index_dir"], art["source"])
    enc_q = encode_queries(study.queries, SpladeTextEncoder(model.query), batch_size=s.encode.batch_size)
    maps = query_weight_maps(enc_q.vectors, s.export.scale)
    with ImpactSearcher(str(art["index_dir"]), max_clauses=s.search.max_clauses) as searcher:
        run, counts = searcher.batch_search(maps, k=args.k, threads=args.threads, remove_query=study.remove_query)
    return _LsrPath(model, art, maps, run, counts)


def _full_encoding(study: _Study) -> tuple[_FullEncoding, Any]:
    """lsr-eval's float vectors without sparsification, specials kept, queries at Pyserini's max length (the
    document encoding cached): the encoding, and its document matrix."""
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.reader import load_matrix, read_vocab
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.pipeline.splade import encoder_fingerprint, load_model

    args, s, dataset = study.args, study.s, study.dataset
    py_q_len = pyserini_query_max_length()
    s_full = s.replace(doc_top_k=None, query_top_k=None, drop_special=False, max_length_q=py_q_len)
    full = load_model(s_full).eval()
    full_key = {"stage": "encode", "encoder": encoder_fingerprint(s_full, full.document),  # resolved precision
                "corpus": dataset.corpus_key(), "code": sources_sha256(), "limit": args.limit_docs}
    full_slot = lsr_encoding(dataset, full, full_key, args.work_dir, s.encode.batch_size, args.limit_docs)
    doc_ids, d_full = load_matrix(full_slot)
    terms = read_vocab(full_slot)
    special_ids = set(full.document.special_ids)
    q_full = encode_queries(study.queries, SpladeTextEncoder(full.query), batch_size=s.encode.batch_size)
    return _FullEncoding(full, full_key, full_slot, doc_ids, terms, special_ids, {terms[i] for i in special_ids},
                         q_full, py_q_len), d_full


def _lsr_checks(study: _Study, lsr: _LsrPath, full: _FullEncoding, d_full) -> dict[str, Any]:
    """Is the cached benchmark encoding the full one with specials dropped and top-1,024 (same floats, same
    caps)? And how far do the queries reach past lsr-eval's max length and top-k?"""
    from lsr_eval.encode.reader import load_matrix

    model, s, q_full = lsr.model, study.s, full.queries
    _, d_cached = load_matrix(lsr.art["encoding_dir"])
    d_cached = d_cached[:len(full.doc_ids)]
    cache_check = capped_check(d_full, d_cached, model.document, full.special_ids)
    q_dims = np.diff(without(q_full.vectors.matrix, full.special_ids).indptr)
    query_check = {"max_tokens": int(q_full.n_tokens.max()), "lsr_eval_max_length": model.query.max_length,
                   "queries_over_lsr_eval_max_length": int((q_full.n_tokens > model.query.max_length).sum()),
                   "max_terms_without_specials": int(q_dims.max()),
                   "queries_over_query_top_k": int((q_dims > (s.encode.query_top_k or q_dims.max())).sum())}
    return {**cache_check, **query_check}


def _pyserini_documents(study: _Study, model, documents: int) -> _PyseriniDocs:
    """Pyserini's document encoding (cached) and its impact index; refuses a document count other than
    lsr-eval's."""
    import torch

    from lsr_eval.errors import LsrEvalError
    from lsr_eval.manifest import installed_version

    args, s = study.args, study.s
    py_key = {"stage": "pyserini-encode", "model": study.fingerprint, "corpus": study.dataset.corpus_key(),
              "encoder": "pyserini.encode.SpladeDocumentEncoder", "pyserini": installed_version("pyserini"),
              "torch": torch.__version__, "fields": ["title", "text"], "docid_field": "_id",
              "max_length": model.document.max_length, "batch_size": args.py_batch_size, "device": "cpu",
              "limit": args.limit_docs}
    py_slot = pyserini_encoding(study.corpus_file, s.model, py_key, args.work_dir, args.py_batch_size,
                                args.limit_docs)
    py_int = read_jsonl_vectors(py_slot / "collection" / "embeddings.jsonl")
    py_float = read_jsonl_vectors(py_slot / "floats.jsonl")
    if len(py_int) != documents:
        raise LsrEvalError(f"Pyserini encoded {len(py_int)} documents, lsr-eval {documents}")
    py_zero_entries = sum(v == 0 for vec in py_int.values() for v in vec.values())
    idx_py = impact_index(py_slot / "collection", {"stage": "index", "collection": py_key}, "pyserini", args.work_dir,
                          args.threads)
    return _PyseriniDocs(py_key, py_slot, py_int, py_float, py_zero_entries, idx_py)


def _same_tokenisation(study: _Study, full: _FullEncoding, doc_len: int) -> int:
    """Documents whose tokens are the same from Pyserini's text (title.strip() + " " + text.strip()) and from
    lsr-eval's contents."""
    tok = full.model.document.tokenizer
    docs = {d.id: d for d in study.dataset.docs()}
    ids_same = 0
    for chunk in range(0, len(full.doc_ids), 256):
        part = full.doc_ids[chunk:chunk + 256]
        a = tok([docs[d].contents for d in part], truncation=True, max_length=doc_len)["input_ids"]
        b = tok([f"{docs[d].title.strip()} {docs[d].text.strip()}" for d in part], truncation=True,
                max_length=doc_len)["input_ids"]
        ids_same += sum(x == y for x, y in zip(a, b))
    return ids_same


def _document_vectors(study: _Study, full: _FullEncoding, d_full, py_docs: _PyseriniDocs) -> _Vectors:
    """Vector-level identity of the documents: lsr-eval's floats quantised Pyserini's way (specials kept) against
    Pyserini's integers; and the exact float top 10 per query."""
    d_pyway = row_maps(full.doc_ids, d_full, full.terms, pyserini_quantize)
    d_float = float_maps(full.doc_ids, d_full, full.terms)
    docs_cmp = compare_vectors(d_pyway, py_docs.ints, d_float, py_docs.floats, "documents")
    exact_top = float_top(full.queries.vectors.matrix, d_full, study.qids, full.doc_ids, full.special_ids,
                          study.remove_query)
    return _Vectors(d_pyway, d_float, docs_cmp, exact_top)


def _pyserini_search(study: _Study, index: Path) -> _PyseriniQueries:
    """Pyserini's search on its index, its query encoder recording the vectors it sends."""
    import torch

    encode, search = import_pyserini()
    args, remove_query = study.args, study.remove_query
    py_qenc = recording(encode.SpladeQueryEncoder)(study.s.model)
    run_py: dict[str, dict[str, float]] = {}
    py_qint, py_qfloat = {}, {}
    with torch.no_grad():
        py_searcher = search.LuceneImpactSearcher(str(index), py_qenc)
        for q in study.queries:
            py_qenc.recorded.clear()
            hits = py_searcher.search(q.text, args.k)
            py_qfloat[q.id], py_qint[q.id] = py_qenc.recorded[-1]
            run_py[q.id] = {h.docid: float(h.score) for h in hits if not (remove_query and h.docid == q.id)}
    return _PyseriniQueries(run_py, py_qint, py_qfloat)


def _query_vectors(vectors: _Vectors, full: _FullEncoding, py_q: _PyseriniQueries) -> None:
    """Vector-level identity of the queries, into ``vectors``: lsr-eval's floats quantised Pyserini's way against
    what Pyserini's encoder sent."""
    q_ids, q_matrix = full.queries.vectors.ids, full.queries.vectors.matrix
    vectors.q_pyway = row_maps(q_ids, q_matrix, full.terms, pyserini_quantize)
    vectors.q_float = float_maps(q_ids, q_matrix, full.terms)
    vectors.queries_cmp = compare_vectors(vectors.q_pyway, py_q.ints, vectors.q_float, py_q.floats, "queries")


def _idf_filter(maps: dict[str, dict[str, int]], index_dir: Path) -> tuple[dict[str, dict[str, int]], dict[str, Any]]:
    """The query maps without terms of idf <= 0 in the index (as LuceneImpactSearcher filters them), and what was
    filtered."""
    n, df = index_df(index_dir)
    kept = {qid: {t: w for t, w in m.items() if t in df and math.log(n / df[t]) > 0} for qid, m in maps.items()}
    return kept, {"terms_at_idf_0": sorted(t for t, f in df.items() if f == n),
                  "query_terms_removed": sum(len(m) - len(kept[q]) for q, m in maps.items())}


def _search_maps(study: _Study, index_dir: Path, maps: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """The run of the query maps on an index by lsr-eval's ImpactSearcher (clauses enough for the longest query)."""
    from lsr_eval.anserini.searcher import ImpactSearcher

    args = study.args
    clauses = max(study.s.search.max_clauses, max(map(len, maps.values())))
    with ImpactSearcher(str(index_dir), max_clauses=clauses) as srch:
        return srch.batch_search(maps, k=args.k, threads=args.threads, remove_query=study.remove_query)[0]


def _ablation(study: _Study, full: _FullEncoding, vectors: _Vectors, idx_py: Path, run_py, run_lsr) -> _Ablation:
    """The ablation, step by step (:data:`STEPS`): from Pyserini's run to lsr-eval's, one part replaced per step."""
    from lsr_eval.errors import LsrEvalError

    args, specials, d_pyway, q_pyway = study.args, full.specials, vectors.d_pyway, vectors.q_pyway
    idx_lsr_py = impact_index(Path(), {"stage": "index", "collection": "lsr-eval floats, Pyserini quantisation",
                                       "encoding": full.key, "specials": True, "limit": args.limit_docs},
                              "lsr-pyway", args.work_dir, args.threads, make=lambda f: write_collection(d_pyway, f))
    d_nospecial = {d: {t: w for t, w in v.items() if t not in specials} for d, v in d_pyway.items()}
    idx_nospecial = impact_index(Path(), {"stage": "index", "collection": "lsr-eval floats, Pyserini quantisation",
                                          "encoding": full.key, "specials": False, "limit": args.limit_docs},
                                 "lsr-pyway-nospecial", args.work_dir, args.threads,
                                 make=lambda f: write_collection(d_nospecial, f))
    q_nospecial = {q: {t: w for t, w in v.items() if t not in specials} for q, v in q_pyway.items()}
    filters = {}
    maps_a, filters["pyserini-index"] = _idf_filter(q_pyway, idx_py)
    maps_b, filters["lsr-pyway-index"] = _idf_filter(q_pyway, idx_lsr_py)
    maps_c, filters["no-specials-index"] = _idf_filter(q_nospecial, idx_nospecial)
    runs = {"pyserini": run_py, "lsr-queries": _search_maps(study, idx_py, maps_a),
            "lsr-documents": _search_maps(study, idx_lsr_py, maps_b),
            "no-specials": _search_maps(study, idx_nospecial, maps_c),
            "no-idf-filter": _search_maps(study, idx_nospecial, q_nospecial), "lsr-eval": run_lsr}
    if [s_.name for s_ in STEPS] != list(runs):
        raise LsrEvalError("ablation runs and STEPS disagree")
    return _Ablation(runs, filters, idx_lsr_py, idx_nospecial)


def _same_query_maps(study: _Study, full: _FullEncoding, q_float, maps_lsr) -> int:
    """Queries whose maps at lsr-eval's own scale, on its vectors without the caps, equal the benchmark's maps
    (all of them when the caps never bind)."""
    from lsr_eval.export.quantize import quantize

    specials = full.specials
    maps_100 = {q: {t: int(w) for t, w in zip(v, quantize(np.array(list(v.values())), study.s.export.scale)) if w > 0}
                for q, v in ((q, {t: w for t, w in fv.items() if t not in specials}) for q, fv in q_float.items())}
    return sum(maps_100[q] == dict(maps_lsr[q]) for q in study.qids)


def _compare_runs(study: _Study, runs: dict[str, dict[str, dict[str, float]]], vectors: _Vectors,
                  specials: set[str]) -> dict[str, Any]:
    """Metrics of every step, per-query nDCG@10 of both paths, agreement between consecutive steps and end to end,
    the differing queries explained, and how often each path's top 10 is the exact float one."""
    from lsr_eval.evaluation import evaluate
    from studies.harness.agreement import run_agreement

    dataset, qids = study.dataset, study.qids
    qrels = dataset.qrels()
    metrics = {name: evaluate(qrels, run, dataset.measures) for name, run in runs.items()}
    per_query = {name: evaluate(qrels, runs[name], ["nDCG@10"], per_query=True)["nDCG@10"]
                 for name in ("pyserini", "lsr-eval")}
    names = list(runs)
    steps = [{"from": prev, "to": cur, **run_agreement(runs[prev], runs[cur], qids),
              "nDCG@10_from": metrics[prev]["nDCG@10"], "nDCG@10_to": metrics[cur]["nDCG@10"]}
             for prev, cur in zip(names, names[1:])]
    end_to_end = run_agreement(runs["pyserini"], runs["lsr-eval"], qids)
    explained = [explain_query(q, runs, vectors.q_float, vectors.d_float, specials, vectors.exact_top)
                 for q in end_to_end["differing_top10_set"]]
    float_agreement = {name: sum(set(list(runs[name][q])[:TOP]) == vectors.exact_top[q] for q in qids)
                       for name in ("pyserini", "lsr-eval")}
    float_agreement["differing_queries_agreeing_with"] = {
        who: sum(x["float_top10_equals"] == [who] for x in explained) for who in ("pyserini", "lsr-eval")}
    float_agreement["differing_queries_agreeing_with"]["neither"] = sum(not x["float_top10_equals"]
                                                                        for x in explained)
    return {"metrics": metrics, "per_query": per_query, "steps": steps, "end_to_end": end_to_end,
            "explained": explained, "float_agreement": float_agreement}


def _headline(study: _Study, compared: dict[str, Any]) -> dict[str, Any]:
    """The targets and how both paths meet them: nDCG@10 within 0.002, the same top-10 set on 95% of queries."""
    metrics, end_to_end, n = compared["metrics"], compared["end_to_end"], len(study.qids)
    delta = metrics["lsr-eval"]["nDCG@10"] - metrics["pyserini"]["nDCG@10"]
    return {"targets": {"nDCG@10_within": 0.002, "same_top10_set_fraction": 0.95},
            "nDCG@10": {"pyserini": metrics["pyserini"]["nDCG@10"], "lsr_eval": metrics["lsr-eval"]["nDCG@10"],
                        "difference": delta, "within_target": abs(delta) <= 0.002},
            "end_to_end_top10": {**end_to_end, "fraction": end_to_end["same_top10_set"] / n,
                                 "within_target": end_to_end["same_top10_set"] / n >= 0.95}}


def _result(study: _Study, lsr: _LsrPath, full: _FullEncoding, py_docs: _PyseriniDocs, py_q: _PyseriniQueries,
            vectors: _Vectors, ablation: _Ablation, compared: dict[str, Any], checks: dict[str, Any],
            t_start: float) -> dict[str, Any]:
    """``parity.json``'s content."""
    from lsr_eval.manifest import installed_version, machine
    from lsr_eval.pipeline.splade import inference_record, settings_record

    args, specials = study.args, full.specials
    return {
        "benchmark": str(args.benchmark.relative_to(REPO) if args.benchmark.is_relative_to(REPO) else args.benchmark),
        "system": study.system.name, "settings": settings_record(study.s), "inference": inference_record(lsr.model),
        "dataset": study.dataset.describe(),
        "queries": len(study.queries), "k": args.k, "remove_query": study.remove_query,
        "pyserini": {"version": installed_version("pyserini"), "document_max_length": lsr.model.document.max_length,
                     "query_max_length": full.query_max_length, "document_batch_size": args.py_batch_size,
                     "scale": QUANT_RANGE / WEIGHT_RANGE, "quantisation": "round(w / 5 * 256)",
                     "zero_weight_document_entries": py_docs.zero_entries,
                     "zero_weight_query_terms": sum(v == 0 for vec in py_q.ints.values() for v in vec.values()),
                     "encoding": py_docs.key},
        **_headline(study, compared),
        "metrics": compared["metrics"], "steps": [dataclasses.asdict(x) for x in STEPS],
        "ablation": compared["steps"], "idf_filter": ablation.filters,
        "differing_queries_explained": compared["explained"],
        "float_ranking_top10_same_set": compared["float_agreement"],
        "special_token_entries": {name: sum(v > 0 and t in specials for vec in maps.values() for t, v in vec.items())
                                  for name, maps in (("pyserini_documents", py_docs.ints),
                                                     ("lsr_eval_documents", vectors.d_pyway),
                                                     ("pyserini_queries", py_q.ints),
                                                     ("lsr_eval_queries", vectors.q_pyway))},
        "vectors": {"documents": vectors.docs_cmp, "queries": vectors.queries_cmp,
                    "tokenisation_identical_documents": checks["tokenisation_identical_documents"],
                    "documents_compared": len(full.doc_ids)},
        "lsr_eval_checks": {**checks["lsr_eval"], "benchmark_query_maps_equal_uncapped_scale_100":
                            checks["same_query_maps"], "search": lsr.counts.to_dict()},
        "artefacts": {"lsr_eval_index": str(lsr.art["index_dir"]), "lsr_eval_encoding": str(lsr.art["encoding_dir"]),
                      "lsr_eval_full_encoding": str(full.slot), "pyserini_encoding": str(py_docs.slot),
                      "pyserini_index": str(py_docs.index), "lsr_pyway_index": str(ablation.idx_lsr_py),
                      "lsr_pyway_nospecial_index": str(ablation.idx_nospecial)},
        "machine": machine(), "load_average_end": list(os.getloadavg()),
        "seconds": time.perf_counter() - t_start,
    }


def _experiment(study: _Study, result: dict[str, Any]) -> dict[str, Any]:
    """The manifest's experiment (the resolved precision only when not fp32, what every earlier parity ran in)."""
    args = study.args
    experiment = {"benchmark": STAGE, "config": result["benchmark"], "system": study.system.name,
                  "dataset": study.dataset.describe(), "model": study.fingerprint, "k": args.k,
                  "py_batch_size": args.py_batch_size}
    if result["settings"].get("precision"):
        experiment["precision"] = result["settings"]["precision"]
    return experiment


def run_parity(args: argparse.Namespace, config, started: float | None = None) -> ParityRun:
    """Both paths, the ablation and every comparison on the options of :func:`parse_args`, for the benchmark
    ``config`` (:func:`lsr_eval.benchmark.config.load_config` of ``args.benchmark``); ``started``: the
    ``time.perf_counter()`` the recorded seconds count from (default now). Nothing is written but the caches."""
    t_start = time.perf_counter() if started is None else started
    import_pyserini()
    study = _open_study(args, config)
    lsr = _lsr_path(study)
    full, d_full = _full_encoding(study)
    checks = {"lsr_eval": _lsr_checks(study, lsr, full, d_full)}
    py_docs = _pyserini_documents(study, lsr.model, len(full.doc_ids))
    checks["tokenisation_identical_documents"] = _same_tokenisation(study, full, lsr.model.document.max_length)
    vectors = _document_vectors(study, full, d_full, py_docs)
    del d_full
    py_q = _pyserini_search(study, py_docs.index)
    _query_vectors(vectors, full, py_q)
    ablation = _ablation(study, full, vectors, py_docs.index, py_q.run, lsr.run)
    checks["same_query_maps"] = _same_query_maps(study, full, vectors.q_float, lsr.maps)
    compared = _compare_runs(study, ablation.runs, vectors, full.specials)
    result = _result(study, lsr, full, py_docs, py_q, vectors, ablation, compared, checks, t_start)
    return ParityRun(result=result, experiment=_experiment(study, result), qids=study.qids, runs=ablation.runs,
                     per_query=compared["per_query"])
