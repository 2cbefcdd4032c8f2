"""Parity with Pyserini on the same weights: Pyserini's own SPLADE path against lsr-eval's, on
one benchmark's SPLADE system (default: ``pipelines/benchmarks/scifact-splade-tiny.yaml``, SciFact test, splade-tiny),
with every difference traced to a cause.

    python pipelines/parity_pyserini.py --work-dir /work/main/work      # -> results/parity-pyserini/

Pyserini path: ``pyserini.encode.SpladeDocumentEncoder`` encodes every document the way ``python -m pyserini.encode``
does (``JsonlCollectionIterator`` over ``corpus.jsonl`` with fields title and text, so the text is
``f"{title} {text}"``; ``JsonlRepresentationWriter`` writes the ``JsonVectorCollection``), with ``max_length`` set to
lsr-eval's document max length (256; Pyserini's CLI default is also 256) and batches of ``--py-batch-size``; Anserini
indexes it as an impact index (:func:`lsr_eval.anserini.indexer.build_index`); queries are searched by
``LuceneImpactSearcher`` with Pyserini's ``SpladeQueryEncoder`` (its defaults: ``max_length=256``; terms kept when in
the index with idf = log(N / df) > 0). Both encoders are subclassed only to record the float weights they quantise
(their outputs are unchanged), and run under ``torch.no_grad`` (Pyserini's CLI keeps autograd on: same values, more
memory). Hits whose docid equals the query id are dropped, as lsr-eval does for BEIR.

lsr-eval path: the benchmark's SPLADE system run in process (its cached impact index, found by
``bench_query_path.impact_artefacts``; queries encoded, quantised and searched by ``ImpactSearcher``).

How they differ by design: Pyserini quantises ``round(w / 5 * 256)`` (scale 51.2) and keeps zeros, lsr-eval
``rint(w * 100)`` and drops zeros; Pyserini keeps the special tokens [CLS] / [SEP] in both vectors, lsr-eval drops
them; Pyserini's queries have max_length 256 and no term cap (lsr-eval: 64 tokens, top-256 terms; documents top-1,024
terms), and Pyserini drops query terms with idf <= 0. The ablation replaces Pyserini's parts one at a time
(:data:`STEPS`), so that a top-10 change is assigned to the first step where it appears; at the vector level,
lsr-eval's float vectors (no sparsification, specials kept, query max length 256) quantised Pyserini's way are compared
with Pyserini's integer vectors, document by document and query by query.

Caches (Pyserini's encoding, the ablation encodings and indexes) go to ``WORK/parity-pyserini/``, keyed by the model's
sha256 and every setting, so a rerun (e.g. from a clean worktree with ``--work-dir`` the shared work folder) reuses
them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from lsr_eval.evaluation.agreement import run_agreement
from lsr_eval.experiments.pyserini_parity import (QUANT_RANGE, STAGE, STEPS, TOP, WEIGHT_RANGE, capped_check,
                                                  compare_vectors, explain_query, float_maps, float_top, impact_index,
                                                  import_pyserini, index_df, lsr_encoding, pyserini_encoding,
                                                  pyserini_quantize, pyserini_query_max_length, read_jsonl_vectors,
                                                  recording, row_maps, sources_sha256, summaries, summary_md, without,
                                                  write_collection, write_per_query)  # noqa: F401  (summaries)
from lsr_eval.manifest import installed_version
from lsr_eval.models.arguments import add_device, add_precision

PIPELINES = Path(__file__).resolve().parent
REPO = PIPELINES.parent

log = logging.getLogger("parity_pyserini")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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


# ---- main -----------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    t_start = time.perf_counter()
    encode, search = import_pyserini()
    import torch

    from bench_query_path import impact_artefacts
    from lsr_eval.anserini import jvm
    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.benchmark.config import load_config
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.reader import load_matrix, read_vocab
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.errors import ConfigError, LsrEvalError
    from lsr_eval.evaluation import evaluate
    from lsr_eval.experiments.splade import (SpladeSettings, encoder_fingerprint, inference_record, load_model,
                                             model_fingerprint, settings_record)
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.export.quantize import quantize
    from lsr_eval.manifest import machine, prepare_output, write_manifest

    cfg = load_config(args.benchmark)
    systems = [s for s in cfg.systems if s.kind == "splade" and (args.system is None or s.name == args.system)]
    if not systems:
        raise ConfigError(f"{args.benchmark}: no splade system" + (f" named {args.system!r}" if args.system else ""))
    system, entry = systems[0], cfg.datasets[0]
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
    smoke = args.limit_docs is not None

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
    if smoke:
        print(json.dumps({k: result[k] for k in ("nDCG@10", "end_to_end_top10", "ablation")}, indent=1,
                         default=str)[:6000])
        print(json.dumps(docs_cmp, default=str)[:2000])
        print(json.dumps(queries_cmp, default=str)[:2000])
        return 0
    experiment = {"benchmark": STAGE, "config": result["benchmark"], "system": system.name,
                  "dataset": dataset.describe(), "model": fp, "k": args.k, "py_batch_size": args.py_batch_size}
    if result["settings"].get("precision"):   # resolved, only when not fp32 (what every earlier parity ran in)
        experiment["precision"] = result["settings"]["precision"]
    out = prepare_output(args.out, experiment, overwrite=True)
    with open(out / "parity.json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, default=str)
        f.write("\n")
    write_per_query(out / "per_query.csv", qids, runs, per_query)
    (out / "summary.md").write_text(summary_md(result), encoding="utf-8")
    write_manifest(out, STAGE, experiment, settings=result["settings"], inference=result["inference"],
                   artefacts=result["artefacts"],
                   outputs=["parity.json", "per_query.csv", "summary.md"], java=jvm.info(),
                   seconds=result["seconds"])
    print(summary_md(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
