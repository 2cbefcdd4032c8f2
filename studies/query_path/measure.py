"""The query-path benchmark's measurements (studies/query_path/run.py): lsr-eval's SPLADE query path against
Pyserini's on the same impact index and weights, run interleaved on one thread, with agreement, effectiveness,
FLOPs and posting-list statistics; the files it writes are :mod:`studies.query_path.summary`'s."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from lsr_eval.commands.options import add_device, add_precision
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.models.options import DEFAULT_PRECISION

REPO = Path(__file__).resolve().parents[2]
STAGE = "bench-query-path"
#: Pyserini's query quantisation: round(w / 5 * 256) (pyserini/encode/_splade.py).
PYSERINI_SCALE = 256 / 5

log = logging.getLogger(__name__)


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/query_path/run.py (``description``: its help's first paragraph)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", default="../shared/data/beir/scifact", help="BEIR folder or registry name")
    p.add_argument("--split", default="test")
    p.add_argument("--model", default="minilm", help="model folder or hub id; 'minilm' = offline all-MiniLM-L6-v2")
    p.add_argument("--doc-top-k", type=int, default=128, help="0: no cap")
    p.add_argument("--query-top-k", type=int, default=32, help="0: no cap")
    p.add_argument("--engine", default="anserini", help="engine of lsr-eval's path: anserini, pisa or seismic")
    p.add_argument("--query-runtime", default="torch", help="lsr-eval's query encoder: torch or onnx")
    p.add_argument("--inference-free", action="store_true",
                   help="also time inference-free queries (the corpus IDF on the model's tokenizer) side by side")
    p.add_argument("--engine-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an engine build setting or search knob (repeatable)")
    p.add_argument("--max-length-q", type=int, help="query max length in tokens (default: the model's, else 64)")
    p.add_argument("--max-length-d", type=int, help="document max length in tokens (default: the model's, else 256)")
    p.add_argument("--scale", type=float, default=DEFAULT_SCALE,
                   help="lsr-eval quantisation scale (documents and queries)")
    p.add_argument("--k", type=int, default=1000, help="hits per query")
    p.add_argument("--warmup", type=int, default=20, help="first queries run but not counted")
    p.add_argument("--limit", type=int, help="only the first N queries (smoke test)")
    p.add_argument("--bf16-queries", type=int, default=0,
                   help="also time bf16 encoding on this many queries (slow on AVX2-only CPUs: keep it small)")
    p.add_argument("--reuse", type=Path, help="a work folder searched read-only for a cached impact index or encoding")
    p.add_argument("--work-dir", type=Path, default=REPO / "work", help="where missing indexes are built")
    p.add_argument("--model-dir", type=Path, help="folder for the saved model (default WORK/bench_query_path/model)")
    p.add_argument("--threads", type=int, default=2, help="threads for building missing indexes only")
    add_precision(p)
    add_device(p, "cpu", "one-thread query latency beside Pyserini's query encoder, which runs on the CPU here")
    p.add_argument("--out", type=Path, default=REPO / "results" / "bench_query_path")
    return p.parse_args(argv)


# ---- artefacts ------------------------------------------------------------------------------------------------

def _canonical(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def find_by_key(root: Path | None, kind: str, key: dict) -> Path | None:
    """A complete artefact made from ``key`` in ``root/kind/*`` (found by its manifest, whatever the folder's name;
    read only: nothing is written or removed)."""
    from lsr_eval.manifest import read_manifest

    if root is None or not (root / kind).is_dir():
        return None
    want = _canonical(key)
    for slot in sorted((root / kind).iterdir()):
        manifest = read_manifest(slot) if slot.is_dir() else None
        if manifest is not None and manifest.get("experiment") == want:
            return slot
    return None


def impact_artefacts(dataset, model, s, reuse: Path | None, work: Path, threads: int) -> dict[str, Any]:
    """Index and encoding folders of the impact index of ``model`` on ``dataset`` (the keys of
    :func:`lsr_eval.pipeline.splade.ensure_impact_index`): found in ``work`` or ``reuse``; else exported and
    indexed into ``work/bench_query_path/`` from an encoding found there; else all built by ``ensure_impact_index``
    in ``work``."""
    import hashlib

    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.errors import LsrEvalError
    from lsr_eval.export.documents import COLLECTION_DIR, export_documents
    from lsr_eval.manifest import read_manifest, write_manifest
    from lsr_eval.pipeline.splade import ensure_impact_index, impact_keys

    keys = impact_keys(dataset, model, s)
    enc_key, exp_key, idx_key = keys.encode, keys.export, keys.index
    for root in (work, reuse):
        idx, enc = find_by_key(root, "indexes", idx_key), find_by_key(root, "encodings", enc_key)
        if idx is not None and enc is not None:
            return {"index_dir": idx / "index", "encoding_dir": enc, "source": f"cached in {root}"}
    own = work / "bench_query_path" / ("impact-" + hashlib.sha1(json.dumps(_canonical(idx_key)).encode())
                                       .hexdigest()[:12])
    enc = find_by_key(work, "encodings", enc_key) or find_by_key(reuse, "encodings", enc_key)
    if enc is not None:
        if (read_manifest(own) or {}).get("experiment") != _canonical(idx_key):
            log.info("exporting and indexing the cached encoding %s into %s", enc, own)
            shutil.rmtree(own, ignore_errors=True)
            export_documents(enc, own / "collection", exp_key, scale=s.export.scale)
            counts = build_index(own / "collection" / COLLECTION_DIR, own / "index", "impact", threads=threads)
            exported = json.loads((own / "collection" / "manifest.json").read_text())["counts"]["documents_out"]
            if counts.total_indexed != exported:
                raise LsrEvalError(f"documents exported ({exported}) != documents indexed ({counts.total_indexed})")
            shutil.rmtree(own / "collection")
            write_manifest(own, "index", idx_key, counts=counts.to_dict(), encoding=str(enc))
        return {"index_dir": own / "index", "encoding_dir": enc, "source": f"indexed from the encoding {enc}"}
    log.info("no cached impact index or encoding: building both in %s", work)
    stages = ensure_impact_index(dataset, model, s, work, threads)
    return {"index_dir": Path(stages["index_dir"]), "encoding_dir": find_by_key(work, "encodings", enc_key),
            "source": f"built in {work}"}


def bm25_index(dataset, work: Path, threads: int) -> Path:
    """The BM25 index, built or reused in ``work`` (cheap to build; a shared folder may change under us)."""
    from lsr_eval.pipeline.bm25 import ensure_bm25_index

    slot, _ = ensure_bm25_index(dataset, work, threads)
    return slot / "index"


# ---- the query paths ------------------------------------------------------------------------------------------

def pyserini_encoder_class(sparsify):
    """Pyserini's SpladeQueryEncoder with lsr-eval's sparsification applied to its float weights (before its own
    term dicts and quantisation) and the time of each ``encode`` recorded."""
    import torch

    from lsr_eval.anserini.pyserini_modules import pyserini_encode

    class SparsifiedSpladeQueryEncoder(pyserini_encode().SpladeQueryEncoder):
        last_ms = 0.0
        last_weights: dict = {}

        def _output_to_weight_dicts(self, batch_aggregated_logits):
            w = sparsify.apply(torch.from_numpy(batch_aggregated_logits), self.tokenizer.all_special_ids)
            return super()._output_to_weight_dicts(w.numpy())

        def encode(self, text, **kwargs):
            t0 = time.perf_counter()
            out = super().encode(text, **kwargs)
            self.last_ms = (time.perf_counter() - t0) * 1e3
            self.last_weights = out
            return out

    return SparsifiedSpladeQueryEncoder


def pyserini_path(searcher, k: int) -> Callable:
    """Pyserini: LuceneImpactSearcher.search (encodes, filters terms by idf, searches; Java hits), then reading."""

    def run(q):
        t0 = time.perf_counter()
        jhits = searcher.search(q.text, k)
        t1 = time.perf_counter()
        hits = [(h.docid, float(h.score)) for h in jhits]
        t2 = time.perf_counter()
        enc = searcher.query_encoder
        searched = sum(1 for t in enc.last_weights if t in searcher.idf and searcher.idf[t] > searcher.min_idf)
        return {"encode": enc.last_ms, "search": (t1 - t0) * 1e3 - enc.last_ms, "total": (t1 - t0) * 1e3,
                "read": (t2 - t1) * 1e3, "total_read": (t2 - t0) * 1e3, "terms": searched, "hits": hits,
                "weights": enc.last_weights}

    return run


# ---- comparisons ----------------------------------------------------------------------------------------------

def to_run(queries, results, remove_query: bool) -> dict[str, dict[str, float]]:
    return {q.id: {d: s for d, s in r["hits"] if not (remove_query and d == q.id)} for q, r in zip(queries, results)}


def lucene_check(index_dir: Path, counts, vocab: list[str]) -> dict[str, Any]:
    """Compare lsr-eval's posting-list lengths (from the encoding) with the index's own document frequencies."""
    from lsr_eval.anserini.term_stats import TermStats

    with TermStats(str(index_dir)) as stats:
        lucene = stats.all_doc_freqs()
        documents, postings = stats.documents, stats.postings
    ours = {vocab[j]: int(counts.df[j]) for j in range(len(vocab)) if counts.df[j] > 0}
    mismatched = sorted(t for t in set(lucene) | set(ours) if lucene.get(t) != ours.get(t))
    return {"lucene_terms": len(lucene), "lucene_postings": sum(lucene.values()),
            "lucene_stats": {"documents": documents, "postings": postings}, "df_mismatches": len(mismatched),
            "df_mismatch_examples": mismatched[:10], "equal": not mismatched}


def ratios(num: dict, den: dict, num_field: str, den_field: str) -> dict[str, float]:
    return {"mean": num[num_field]["mean_ms"] / den[den_field]["mean_ms"],
            "p50": num[num_field]["p50_ms"] / den[den_field]["p50_ms"]}


def our_rows(args: argparse.Namespace, model, s, dataset) -> dict[str, Any]:
    """lsr-eval's query paths, one row each (text -> weight map, :class:`QueryWeights`): ``lsr-eval`` is the model's
    query encoder on ``--query-runtime``. Another encoder (any with ``terms`` and ``encode(texts, sparse=True)``) is
    one more entry: it is then timed side by side, broken down, compared and evaluated as ``lsr-eval`` is."""
    from lsr_eval.efficiency.latency import QueryWeights
    from lsr_eval.models.static_query import StaticQueryEncoder

    rows = {"lsr-eval": QueryWeights(model.query, s.export.scale, runtime=args.query_runtime, work_dir=args.work_dir)}
    if args.inference_free:  # tokenise + look up one weight per id (no forward pass), with the document encoder's top-k
        idf = StaticQueryEncoder.from_idf(dataset, model.document, work_dir=args.work_dir,
                                          sparsify=model.query.sparsify)
        rows["lsr-eval-idf"] = QueryWeights(idf, s.export.scale)
    return rows


# ---- one run ------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class QueryPathRun:
    """One run of the benchmark: its output folder (prepared), experiment and settings for the manifest, the
    ``bench.json`` content, and the per-query results behind ``per_query.csv``."""

    out: Path
    experiment: dict[str, Any]
    settings: Any
    inference: dict[str, Any]
    bench: dict[str, Any]
    queries: list
    results: dict[str, list[dict[str, Any]]]
    agreement: dict[str, dict[str, Any]]


@dataclasses.dataclass
class _Setup:
    """What the measurements share: the options, the dataset and its queries, lsr-eval's settings (``s_engine``:
    with the engine of its path), the loaded model and the indexes and encoding searched."""

    args: argparse.Namespace
    dataset: Any
    queries: list
    s: Any
    s_engine: Any
    model: Any
    inference: dict[str, Any]
    art: dict[str, Any]
    bm25_dir: Path
    model_dir: Path


@dataclasses.dataclass
class _Paths:
    """The timed query paths (name -> callable) and what they search with: lsr-eval's rows, its engine's searcher
    and index, Anserini's searcher on the impact index, and Pyserini's searcher with lsr-eval's weights."""

    timed: dict[str, Callable]
    ours: dict[str, Any]
    engine: Any
    engine_index: Path
    anserini: Any
    pyserini_same: Any


def _settings(args: argparse.Namespace):
    """lsr-eval's SPLADE settings from the options, and the same with the engine of its path and its options
    (checked)."""
    from lsr_eval.engines.registry import check_engine, parse_option
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.pipeline.settings import SpladeSettings

    s = SpladeSettings.from_flat(model=resolve_model(args.model), max_length_q=args.max_length_q,
                                 max_length_d=args.max_length_d, doc_top_k=args.doc_top_k or None,
                                 query_top_k=args.query_top_k or None, scale=args.scale, hits=args.k,
                                 precision=args.precision, device=args.device)
    s_engine = s.replace(engine=check_engine(args.engine),
                         engine_options=dict(parse_option(o) for o in args.engine_option) or None)
    return s, s_engine


def _experiment(args: argparse.Namespace, dataset, queries: list, s, s_engine) -> dict[str, Any]:
    """The run's identity in its manifest (the precision only when not the default, as earlier results have it)."""
    from lsr_eval.pipeline.splade import model_fingerprint

    experiment = {"benchmark": STAGE, "dataset": dataset.describe(), "split": args.split, "queries": len(queries),
                  "model": model_fingerprint(s.model), "doc_top_k": s.encode.doc_top_k,
                  "query_top_k": s.encode.query_top_k, "scale": s.export.scale, "k": args.k,
                  "warmup": args.warmup, "bf16_queries": args.bf16_queries,
                  "engine": s_engine.search.engine, "engine_options": s_engine.search.engine_options,
                  "query_runtime": args.query_runtime}
    if args.precision != DEFAULT_PRECISION:   # earlier results (fp32, before the option) keep their identity
        experiment["precision"] = args.precision
    return experiment


def _load(args: argparse.Namespace, dataset, queries: list, s, s_engine) -> _Setup:
    """The model (in eval mode) and the impact and BM25 indexes it is searched on, found or built; the model is
    saved where Pyserini's encoders load it from."""
    from lsr_eval.pipeline.splade import inference_record, load_model

    model = load_model(s).eval()  # encode() restores the wrapper's mode: eval, so the shared MLM never trains
    inference = inference_record(model)
    art = impact_artefacts(dataset, model, s, args.reuse, args.work_dir, args.threads)
    bm25_dir = bm25_index(dataset, args.work_dir, args.threads)
    log.info("impact index %s, encoding %s, BM25 index %s", art["index_dir"], art["encoding_dir"], bm25_dir)
    model_dir = args.model_dir or args.work_dir / "bench_query_path" / "model"
    model.save_pretrained(model_dir)
    return _Setup(args, dataset, queries, s, s_engine, model, inference, art, bm25_dir, model_dir)


def _pyserini_encoders(setup: _Setup) -> tuple[Any, Any, list[int]]:
    """Pyserini's query encoders with lsr-eval's sparsification: one loaded Pyserini's way, one on lsr-eval's loaded
    weights; and the term counts of the unmodified encoder on the first five queries."""
    from lsr_eval.anserini.pyserini_modules import pyserini_encode

    model, model_dir, device = setup.model, setup.model_dir, setup.inference["device"]
    encoder_cls = pyserini_encoder_class(model.query.sparsify)
    py_loaded = encoder_cls(str(model_dir), device=device)   # Pyserini's own loading: GELU back in the identity head
    py_same = encoder_cls(str(model_dir), device=device)
    py_same.model = model.query.mlm                   # lsr-eval's loaded weights: bypass kept
    plain = pyserini_encode().SpladeQueryEncoder(str(model_dir), device=device)   # unmodified, for the term counts
    plain_terms = [len(plain.encode(q.text)) for q in setup.queries[:5]]
    del plain
    return py_loaded, py_same, plain_terms


def _open_paths(setup: _Setup, py_loaded, py_same) -> _Paths:
    """Every timed path, searchers opened: lsr-eval's rows on its engine, Anserini per hit, and Pyserini's two."""
    from lsr_eval.anserini.pyserini_modules import pyserini_search
    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.efficiency.latency import query_path
    from lsr_eval.pipeline.splade import ensure_impact_index, open_searcher

    args, art, s_engine = setup.args, setup.art, setup.s_engine
    LuceneImpactSearcher = pyserini_search().LuceneImpactSearcher
    ours = our_rows(args, setup.model, setup.s, setup.dataset)
    anserini_searcher = ImpactSearcher(str(art["index_dir"]))
    if s_engine.search.engine == "anserini":
        engine_index = Path(art["index_dir"])
    else:  # the engine's index from the same exported collection (built once, cached in the work folder)
        engine_index = Path(ensure_impact_index(setup.dataset, setup.model, s_engine, args.work_dir,
                                                args.threads)["index_dir"])
    ours_searcher = open_searcher(s_engine, engine_index)
    ls_loaded = LuceneImpactSearcher(str(art["index_dir"]), py_loaded)
    ls_same = LuceneImpactSearcher(str(art["index_dir"]), py_same)
    paths = {name: query_path(w, ours_searcher, args.k) for name, w in ours.items()}
    paths |= {"anserini-per-hit": query_path(ours["lsr-eval"], anserini_searcher, args.k, "search_per_hit"),
              "pyserini": pyserini_path(ls_loaded, args.k), "pyserini-same-weights": pyserini_path(ls_same, args.k)}
    return _Paths(paths, ours, ours_searcher, engine_index, anserini_searcher, ls_same)


def _latency_reports(setup: _Setup, searcher) -> tuple[Any, dict[str, Any] | None]:
    """lsr-eval's latency report with BM25 for reference (after the side-by-side run), and bf16 encoding on a few
    queries when asked."""
    from lsr_eval.anserini.searcher import Bm25Searcher
    from lsr_eval.efficiency.latency import measure_latency

    args, queries, model, s = setup.args, setup.queries, setup.model, setup.s
    with Bm25Searcher(str(setup.bm25_dir)) as bm25:
        report = measure_latency(queries, model.query, searcher, k=args.k, scale=s.export.scale, warmup=args.warmup,
                                 bm25=bm25, runtime=args.query_runtime, work_dir=args.work_dir)
    bf16 = None
    if args.bf16_queries > 0:
        sub = queries[:args.bf16_queries + 2]
        bf16 = measure_latency(sub, model.query, searcher, k=args.k, scale=s.export.scale, warmup=2,
                               bf16=True).to_dict()
    return report, bf16


def _agreement(setup: _Setup, paths: _Paths, results: dict[str, list]) -> tuple[dict[str, Any], int]:
    """Top-10 agreement of every path with lsr-eval's, plus lsr-eval's path at Pyserini's query scale and term
    filter against Pyserini on the same weights (isolating the rest of the two paths); and how many queries send
    the same term set on both."""
    from lsr_eval.efficiency.latency import QueryWeights
    from studies.harness.agreement import hit_lists_agreement

    queries, ls_same = setup.queries, paths.pyserini_same
    ours_hits = [r["hits"] for r in results["lsr-eval"]]
    agreement = {name: hit_lists_agreement(ours_hits, [r["hits"] for r in res]) for name, res in results.items()
                 if name != "lsr-eval"}
    qw_py = QueryWeights(setup.model.query, PYSERINI_SCALE)
    maps_py_scale = {q.id: {t: w for t, w in qw_py(q.text, q.id).items()
                            if t in ls_same.idf and ls_same.idf[t] > ls_same.min_idf} for q in queries}
    run_py_scale, _ = paths.anserini.batch_search(maps_py_scale, k=setup.args.k, threads=1)
    agreement["lsr-eval-pyserini-scale-and-filter_vs_pyserini-same-weights"] = hit_lists_agreement(
        [sorted(run_py_scale[q.id].items(), key=lambda x: -x[1]) for q in queries],
        [r["hits"] for r in results["pyserini-same-weights"]])
    same_terms = sum(set(a["weights"]) == set(b["weights"]) for a, b in
                     zip(results["lsr-eval"], results["pyserini-same-weights"]))
    return agreement, same_terms


def _flops_and_postings(setup: _Setup, results: dict[str, list]) -> tuple[dict[str, Any], dict[str, Any]]:
    """FLOPs of lsr-eval's queries on the impact and float weights, and posting-list statistics checked against
    the index's own document frequencies."""
    from lsr_eval.efficiency.flops import count_encoding, count_matrix, count_weight_maps, flops_report
    from lsr_eval.efficiency.postings import posting_stats
    from lsr_eval.encode import encode_queries, read_vocab
    from lsr_eval.encode.splade import SpladeTextEncoder

    art, queries, s = setup.art, setup.queries, setup.s
    vocab = read_vocab(art["encoding_dir"])
    docs_impact = count_encoding(art["encoding_dir"], "impact", s.export.scale)
    docs_weight = count_encoding(art["encoding_dir"], "weight")
    maps = {q.id: r["weights"] for q, r in zip(queries, results["lsr-eval"])}
    q_vectors = encode_queries(queries, SpladeTextEncoder(setup.model.query)).vectors
    flops = {"impact": flops_report(docs_impact, count_weight_maps(maps, vocab, s.export.scale)).to_dict(),
             "weight": flops_report(docs_weight, count_matrix(q_vectors.matrix, "weight")).to_dict()}
    postings = posting_stats(docs_impact, art["index_dir"]).to_dict()
    postings["lucene_check"] = lucene_check(art["index_dir"], docs_impact, vocab)
    return flops, postings


def _latency_summaries(results: dict[str, list], ours: dict[str, Any], warmup: int
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per path, per part latency summaries after the warm-up, and the ratios of Pyserini's paths and Anserini's
    per-hit path to lsr-eval's."""

    lat = {name: summarise_path(results[name], warmup, ("encode", "search", "total"))
           for name in (*ours, "anserini-per-hit")}
    for name in ("pyserini", "pyserini-same-weights"):
        lat[name] = summarise_path(results[name], warmup, ("encode", "search", "total", "read", "total_read"))
    ratio = {name: {"total_read_vs_total": ratios(lat[name], lat["lsr-eval"], "total_read", "total"),
                    "total_vs_total": ratios(lat[name], lat["lsr-eval"], "total", "total"),
                    "encode": ratios(lat[name], lat["lsr-eval"], "encode", "encode"),
                    "search_read_vs_search": {
                        "mean": (lat[name]["search"]["mean_ms"] + lat[name]["read"]["mean_ms"])
                        / lat["lsr-eval"]["search"]["mean_ms"]}}
             for name in ("pyserini", "pyserini-same-weights")}
    ratio["anserini-per-hit"] = {"total_vs_total": ratios(lat["anserini-per-hit"], lat["lsr-eval"], "total", "total"),
                                 "search": ratios(lat["anserini-per-hit"], lat["lsr-eval"], "search", "search")}
    return lat, ratio


def _protocol(setup: _Setup, load: dict[str, list[float]]) -> dict[str, Any]:
    """How the paths were timed, on what machine and under what load (``load``: start and after the side-by-side
    run; the end is read now)."""
    import torch

    from lsr_eval.manifest import machine

    args, queries = setup.args, setup.queries
    return {"queries": len(queries), "warmup": args.warmup, "measured": len(queries) - args.warmup,
            "k": args.k, "torch_threads": 1, "search": "one query at a time in the calling thread",
            "order": "interleaved, rotating per query", "ratio": "pyserini / lsr-eval",
            "machine": machine(), "torch_version": torch.__version__, "inference": setup.inference,
            "load_average_1_5_15min": {**load, "end": list(os.getloadavg())}}


def _artefacts(setup: _Setup, engine_index: Path) -> dict[str, str]:
    """The folders searched and where they came from."""
    art = setup.art
    return {"index_dir": str(art["index_dir"]), "engine_index": str(engine_index),
            "encoding_dir": str(art["encoding_dir"]), "bm25_index": str(setup.bm25_dir), "source": art["source"],
            "model_dir": str(setup.model_dir)}


def run_query_path(args: argparse.Namespace) -> QueryPathRun:
    """Measure every path on the options of :func:`parse_args` (the output folder is prepared, nothing written in
    it yet)."""
    from lsr_eval.anserini.pyserini_modules import pyserini_encode, pyserini_search

    pyserini_encode()       # JVM started first, dummy OpenAI key
    pyserini_search()

    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.efficiency.latency import torch_threads
    from lsr_eval.evaluation import evaluate
    from lsr_eval.manifest import prepare_output
    from studies.harness.measure import run_interleaved

    t_start = time.perf_counter()
    load = {"start": list(os.getloadavg())}  # other processes share the CPUs: recorded with the figures
    dataset = load_dataset(args.dataset, args.split)
    queries = dataset.queries()[:args.limit] if args.limit else dataset.queries()
    s, s_engine = _settings(args)
    experiment = _experiment(args, dataset, queries, s, s_engine)
    out = prepare_output(args.out, experiment, overwrite=True)
    setup = _load(args, dataset, queries, s, s_engine)
    py_loaded, py_same, plain_terms = _pyserini_encoders(setup)
    paths = _open_paths(setup, py_loaded, py_same)
    log.info("side by side: %d queries (%d warm-up), %d paths, 1 thread", len(queries), args.warmup, len(paths.timed))
    with torch_threads(1):
        results = run_interleaved(queries, paths.timed)
    load["after_side_by_side"] = list(os.getloadavg())

    report, bf16 = _latency_reports(setup, paths.engine)
    agreement, same_terms = _agreement(setup, paths, results)
    effectiveness = {name: evaluate(dataset.qrels(), to_run(queries, res, dataset.remove_query), dataset.measures)
                     for name, res in results.items()}
    flops, postings = _flops_and_postings(setup, results)
    engine_record = paths.engine.describe()
    paths.engine.close()
    paths.anserini.close()
    lat, ratio = _latency_summaries(results, paths.ours, args.warmup)
    bench = {
        "protocol": _protocol(setup, load), "engine": engine_record,
        "artefacts": _artefacts(setup, paths.engine_index), "latency_ms": lat, "ratios": ratio,
        "breakdown": {name: part_breakdown(results[name], args.warmup) for name in paths.ours},
        "agreement_top10": {k: {kk: vv for kk, vv in v.items() if kk != "overlaps"} for k, v in agreement.items()},
        "same_term_set_lsr_eval_vs_pyserini_same_weights": same_terms,
        "pyserini_unmodified_terms_first5": plain_terms,
        "effectiveness": effectiveness,
        "latency_report_lsr_eval": report.to_dict(), "bf16_encoding": bf16,
        "flops": flops, "postings": postings,
        "seconds": time.perf_counter() - t_start,
    }
    return QueryPathRun(out=out, experiment=experiment, settings=s, inference=setup.inference, bench=bench,
                        queries=queries, results=results, agreement=agreement)


def _measured(results: Sequence[dict], warmup: int) -> Sequence[dict]:
    """The results after the first ``warmup``; none left is an InputError."""
    from lsr_eval.errors import InputError

    measured = results[warmup:]
    if not measured:
        raise InputError(f"{len(results)} queries leave none to measure after {warmup} warm-up queries")
    return measured


def summarise_path(results: Sequence[dict], warmup: int, fields: Sequence[str]) -> dict[str, Any]:
    """Summaries (:class:`lsr_eval.efficiency.latency.LatencySummary` dicts) of ``fields`` over the results after
    the first ``warmup``, and the mean number of query terms."""
    from lsr_eval.efficiency.latency import LatencySummary

    measured = _measured(results, warmup)
    out: dict[str, Any] = {f: LatencySummary.from_ms([r[f] for r in measured]).to_dict() for f in fields}
    out["mean_terms"] = sum(r["terms"] for r in measured) / len(measured)
    return out


def part_breakdown(results: Sequence[dict], warmup: int) -> dict[str, Any]:
    """Where a :func:`lsr_eval.efficiency.latency.query_path`'s time goes: per part
    (:data:`lsr_eval.efficiency.latency.PARTS`, those reported), its summary over the measured queries and its
    share of the mean total; ``unaccounted`` is the total less the parts (timing and call overhead between them);
    ``mean_candidates`` where the encoder prunes the vocabulary."""
    from lsr_eval.efficiency.latency import PARTS, LatencySummary

    measured = _measured(results, warmup)
    names = [p for p in PARTS if all(p in r["parts"] for r in measured)]
    rest = [r["total"] - sum(r["parts"][p] for p in names) for r in measured]
    mean_total = sum(r["total"] for r in measured) / len(measured)
    parts = {p: LatencySummary.from_ms([r["parts"][p] for r in measured]).to_dict() for p in names}
    parts["unaccounted"] = LatencySummary.from_ms(rest).to_dict()
    for s in parts.values():
        s["share_of_mean_total"] = s["mean_ms"] / mean_total if mean_total > 0 else 0.0
    out: dict[str, Any] = {"parts": parts, "total": LatencySummary.from_ms([r["total"] for r in measured]).to_dict()}
    cands = [r["candidates"] for r in measured if r.get("candidates") is not None]
    if cands:
        out["mean_candidates"] = sum(cands) / len(cands)
    return out
