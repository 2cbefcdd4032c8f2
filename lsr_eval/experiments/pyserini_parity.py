"""Parity with Pyserini on the same weights (pipelines/parity_pyserini.py): Pyserini's own SPLADE path (its
encoders, recorded; its quantisation ``round(w / 5 * 256)``) against lsr-eval's, the ablation steps that replace
Pyserini's parts one at a time, and the comparisons of vectors and runs that trace every difference to a cause."""

from __future__ import annotations

import csv
import inspect
import json
import logging
import math
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



def write_per_query(path: Path, qids: Sequence[str], runs, per_query) -> None:
    """Per query: nDCG@10 of both paths, top-10 overlap, and the first ablation step that changed its top-10 set."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["qid", "ndcg10_pyserini", "ndcg10_lsr_eval", "top10_overlap", "same_top10_set", "first_step"])
        for q in qids:
            a, b = set(list(runs["pyserini"][q])[:TOP]), set(list(runs["lsr-eval"][q])[:TOP])
            w.writerow([q, f"{per_query['pyserini'].get(q, 0.0):.4f}", f"{per_query['lsr-eval'].get(q, 0.0):.4f}",
                        len(a & b), int(a == b), first_change(runs, q) or ""])



def summary_md(r: dict) -> str:
    n, e, v = r["queries"], r["end_to_end_top10"], r["vectors"]
    lines = [f"# Parity with Pyserini on the same weights ({r['system']}, {r['dataset']['name']}, {n} queries, "
             f"k={r['k']})", "",
             f"| path | nDCG@10 | same top-10 set as Pyserini |", "|---|---|---|",
             f"| Pyserini {r['pyserini']['version']} | {r['nDCG@10']['pyserini']:.4f} | |",
             f"| lsr-eval | {r['nDCG@10']['lsr_eval']:.4f} | {e['same_top10_set']}/{n} |", "",
             f"nDCG@10 difference {r['nDCG@10']['difference']:+.4f} (target within 0.002: "
             f"{'met' if r['nDCG@10']['within_target'] else 'missed'}); identical top-10 sets on "
             f"{e['same_top10_set']}/{n} = {e['fraction']:.1%} of queries (target 95%: "
             f"{'met' if e['within_target'] else 'missed'}).", "",
             "## Vectors: lsr-eval's floats quantised Pyserini's way (round(w / 5 * 256), specials kept) against "
             "Pyserini's integers", ""]
    for what in ("documents", "queries"):
        c = v[what]
        lines.append(f"* {what}: {c['equal_integer_vectors']}/{c['compared']} identical integer vectors; "
                     f"{c['differing_entries']} differing entries of {c['entries']} (max |difference| "
                     f"{c['max_abs_integer_difference']}, {c['differing_entries_within_0.001_of_a_half']} of them "
                     f"within 0.001 of a .5 boundary); float vectors bit-identical on {c['equal_float_vectors']}/"
                     f"{c['compared']}, {c['float_entries_differing']} float entries differ, by at most "
                     f"{c['max_abs_float_difference']:.2e}")
    sp = r["special_token_entries"]
    lines.append(f"* special tokens with a positive integer weight: Pyserini documents {sp['pyserini_documents']}, "
                 f"queries {sp['pyserini_queries']}; lsr-eval (specials kept) documents {sp['lsr_eval_documents']}, "
                 f"queries {sp['lsr_eval_queries']}")
    lines.append(f"* tokenisation: identical input ids for {v['tokenisation_identical_documents']}/"
                 f"{v['documents_compared']} documents (Pyserini strips title and text before joining)")
    for what in ("documents", "queries"):
        for d in v[what]["differences"][:10]:
            lines.append(f"  * {what[:-1]} {d['id']} `{d['term']}`: lsr-eval {d['lsr_eval']} "
                         f"(w/5*256 = {d['lsr_eval_scaled']:.6f}), Pyserini {d['pyserini']} "
                         f"({d['pyserini_scaled']:.6f})")
    lines += ["", "## Ablation: from Pyserini's path to lsr-eval's, one change at a time", "",
              "| step | change | nDCG@10 | same top-10 set as previous step | identical runs (all hits / hits "
              "with score > 0) |", "|---|---|---|---|---|",
              f"| pyserini | {r['steps'][0]['description']} | {r['metrics']['pyserini']['nDCG@10']:.4f} | | |"]
    for step, a in zip(r["steps"][1:], r["ablation"]):
        lines.append(f"| {step['name']} | {step['description']} | {a['nDCG@10_to']:.4f} | "
                     f"{a['same_top10_set']}/{n} | {a['identical_runs']}/{n} / "
                     f"{a['identical_positive_score_hits']}/{n} |")
    f = r["idf_filter"]
    c = r["lsr_eval_checks"]
    fa = r["float_ranking_top10_same_set"]
    dq = fa["differing_queries_agreeing_with"]
    lines += ["", "Idf filter (Pyserini keeps a query term only if it is in the index with idf = log(N/df) > 0): "
              "terms in every document " + "; ".join(
                  f"{k}: {', '.join(x['terms_at_idf_0']) or 'none'} ({x['query_terms_removed']} query terms removed, "
                  f"absent from the index)" for k, x in f.items()) + ".",
              f"Exact float ranking (float query . float document vectors, no quantisation, specials dropped): same "
              f"top-10 set as Pyserini (scale 51.2) on {fa['pyserini']}/{n} queries, as lsr-eval (scale 100) on "
              f"{fa['lsr-eval']}/{n}; of the {len(r['differing_queries_explained'])} queries where the two differ, it "
              f"agrees with lsr-eval on {dq['lsr-eval']}, with Pyserini on {dq['pyserini']}, with neither on "
              f"{dq['neither']}.",
              f"Pyserini keeps weights that round to 0: {r['pyserini']['zero_weight_document_entries']} document "
              f"entries, {r['pyserini']['zero_weight_query_terms']} query terms (no posting, no score).",
              f"lsr-eval's caps: cached encoding equals the full one with specials dropped and top-"
              f"{r['settings']['doc_top_k']}: {c['cached_equals_full_sparsified']} ({c['documents_over_doc_top_k']} "
              f"documents over the cap); queries: longest {c['max_tokens']} tokens "
              f"({c['queries_over_lsr_eval_max_length']} over lsr-eval's {c['lsr_eval_max_length']}), "
              f"{c['queries_over_query_top_k']} over top-{r['settings']['query_top_k']} terms; the benchmark's query "
              f"maps equal the uncapped ones at scale 100 for {c['benchmark_query_maps_equal_uncapped_scale_100']}/"
              f"{n} queries.", "",
              "## Every query whose top-10 set differs (Pyserini vs lsr-eval)", "",
              "| qid | first step | only in Pyserini's top 10 (rank P / rank L, float score) | only in lsr-eval's "
              "(rank P / rank L, float score) | float top 10 equals |", "|---|---|---|---|---|"]

    def cell(docs):
        return "; ".join(f"{d['doc']} ({d['rank_pyserini']} / {d['rank_lsr_eval']}, {d['float_score']:.4f})"
                         for d in docs)

    for x in r["differing_queries_explained"]:
        lines.append(f"| {x['qid']} | {x['first_step']} | {cell(x['only_pyserini'])} | {cell(x['only_lsr_eval'])} | "
                     f"{', '.join(x['float_top10_equals']) or 'neither'} |")
    lines += ["", "Float score: dot product of lsr-eval's float query and document vectors without special tokens "
              "(what both quantisations approximate). Rank P / rank L: rank in Pyserini's / lsr-eval's run. Every "
              "differing query swaps documents at the top-10 boundary whose float scores are within a fraction of a "
              "percent: integer scores at scale 51.2 (Pyserini) and 100 (lsr-eval) round them differently.", "",
              f"Machine shared with other jobs ({r['machine']['cores']} cores); {r['seconds'] / 60:.1f} min in all. "
              "Script: pipelines/parity_pyserini.py; figures: parity.json, per_query.csv.", ""]
    return "\n".join(lines)



def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of this script, made again from its raw file (``parity.json``): what
    tests/test_committed_results.py compares with the committed one (``per_query.csv`` comes from the runs, which
    are not kept)."""
    return {"summary.md": summary_md(json.loads((folder / "parity.json").read_text(encoding="utf-8")))}

