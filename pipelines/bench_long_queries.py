"""Long queries through Anserini without the memory wall: lsr-eval's batch search against Anserini's own
``SearchCollection``, side by side in one process with the JVM's default heap, on queries that are whole documents.

    python pipelines/bench_long_queries.py --out work/bench-long      # SciFact: 1,500 documents as queries

Topics: the first ``--queries`` documents of the corpus (title + text, whitespace collapsed), each a query whose id
is its document's id; the self-hit is removed on both sides (``remove_query=True``, ``-removeQuery``).

* BM25 (``bm25-flat`` index, k1/b, k hits): :class:`~lsr_eval.anserini.searcher.Bm25Searcher` against
  ``SearchCollection -bm25`` on a ``TsvString`` file of the same texts.
* Impact (SPLADE impact index, built or reused by :func:`lsr_eval.experiments.splade.ensure_impact_index`): the
  texts encoded by the query encoder (weight maps cached in ``WORK/bench-long-queries/``),
  :class:`~lsr_eval.anserini.searcher.ImpactSearcher` against ``SearchCollection -impact -pretokenized`` on the
  weight maps written as pre-tokenised strings (each term repeated by its weight).

Each path runs ``--repeats`` times, the two alternating in ABBA order (lsr-eval, SearchCollection, SearchCollection,
lsr-eval, ...) so machine load and JIT warm-up fall on both; the faster run counts. A path's time goes from opening
the index to its TREC run file written and the index closed (lsr-eval: searcher opened, ``batch_search``,
``write_run``; SearchCollection: constructed, ``run``, ``close``). Ratio: lsr-eval / SearchCollection (target <= 1.5).
Runs are compared query by query: identical = same docids in the same order and scores equal at the run file's
precision (SearchCollection prints six decimals).

Heap: before each timed run the JVM is collected; during it the heap in use is sampled from a Python thread and the
heap pools' exact peaks are read; after it, the heap left after ``System.gc()`` (the run still held). The sweep
(before the side-by-side runs: it warms the JIT for both paths) searches the first 250, 500, 1000, ... queries
through one open lsr-eval searcher and records the same figures plus the process's resident memory (Python and the
JVM together): lsr-eval's JVM heap must stay flat whatever the number of queries (the run itself lives in Python and
grows with it). ``SearchCollection`` is swept too (unless ``--no-sweep-searchcollection``): it holds every query's
hits until it writes its run file, so its peak grows with the queries.

Outputs in ``--out``: ``results.json``, ``table.csv`` (one row per engine and path), ``heap.csv`` (the sweep) and
``manifest.json``; run files in ``WORK/bench-long-queries/runs/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from lsr_eval.data.types import Document, Query, Run
from lsr_eval.efficiency.measure import alternate, measure
from lsr_eval.evaluation.agreement import ranked_hits_agreement
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.models.options import DEFAULT_PRECISION
from lsr_eval.errors import InputError, LsrEvalError
from lsr_eval.report.formatting import csv_text
from lsr_eval.models.arguments import add_device, add_precision

REPO = Path(__file__).resolve().parents[1]

STAGE = "bench-long-queries"
#: Run files print six decimals: scores within half a unit of the sixth decimal are equal at that precision.
SCORE_TOLERANCE = 5.01e-7
DEFAULT_SWEEP = (250, 500, 1000, 1500)
OURS, ANSERINI = "lsr-eval", "searchcollection"

log = logging.getLogger("bench_long_queries")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=str(REPO.parent / "shared" / "data" / "beir" / "scifact"),
                   help="BEIR folder or registry name (its corpus gives the queries)")
    p.add_argument("--split", default="test", help="split the dataset is loaded with (its queries are not used)")
    p.add_argument("--queries", type=int, default=1500, help="the first N documents become the queries")
    p.add_argument("--k", type=int, default=1000, help="hits per query")
    p.add_argument("--threads", type=int, default=2, help="search threads, the same for both paths")
    p.add_argument("--k1", type=float, default=0.9)
    p.add_argument("--b", type=float, default=0.4)
    p.add_argument("--engines", default="bm25,impact", help="comma-separated: bm25, impact")
    p.add_argument("--model", default="splade-tiny", help="impact model: folder, hub id or offline alias")
    p.add_argument("--doc-top-k", type=int, default=1024, help="document terms kept (the index's setting)")
    p.add_argument("--query-top-k", type=int, default=256, help="query terms kept (<= Lucene's 1,024 clauses)")
    p.add_argument("--max-length-q", type=int, default=256,
                   help="query encoder max tokens: a long query is a document, so the document length by default")
    p.add_argument("--max-length-d", type=int, default=None, help="document max tokens (default: the model's)")
    p.add_argument("--scale", type=float, default=DEFAULT_SCALE, help="quantisation scale (the index's)")
    add_precision(p, note=" of the impact model")
    add_device(p)
    p.add_argument("--repeats", type=int, default=2, help="timed runs per path (the faster counts)")
    p.add_argument("--sweep", default=",".join(map(str, DEFAULT_SWEEP)),
                   help="query counts of the heap sweep (comma-separated; empty: no sweep)")
    p.add_argument("--no-sweep-searchcollection", dest="sweep_searchcollection", action="store_false",
                   help="sweep lsr-eval only (SearchCollection's sweep shows its heap growing with the queries)")
    p.add_argument("--sample-interval", type=float, default=0.05, help="heap sampling interval, seconds")
    p.add_argument("--work-dir", type=Path, default=Path("work"), help="indexes and caches")
    p.add_argument("--out", type=Path, required=True, help="results folder (results/long-queries for the record)")
    p.add_argument("--overwrite", action="store_true", help="replace a results folder holding another experiment")
    args = p.parse_args(argv)
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(args.engines) - {"bm25", "impact"})
    if unknown or not args.engines:
        p.error(f"--engines: unknown or none: {', '.join(unknown) or '(empty)'}; allowed: bm25, impact")
    try:
        args.sweep = sorted({int(x) for x in args.sweep.split(",") if x.strip()})
    except ValueError:
        p.error(f"--sweep: expected comma-separated integers, got {args.sweep!r}")
    if args.scale <= 0:
        p.error(f"--scale must be > 0, got {args.scale}")
    if float(args.scale).is_integer():
        args.scale = int(args.scale)  # 100, not 100.0: the cached export and index are keyed by it
    if args.queries < 1 or args.repeats < 1 or any(n < 1 for n in args.sweep):
        p.error("--queries, --repeats and the --sweep counts must be >= 1")
    return args


# ---- topics ---------------------------------------------------------------------------------------------------

def long_topics(docs: Iterable[Document], n: int) -> list[Query]:
    """The first ``n`` documents as queries (id = document id, text = title + text with whitespace collapsed, so
    that a ``TsvString`` line holds it); blank documents are skipped. Fewer than ``n`` documents is an error.

    The whole stream is read, so that a dataset's document counts (checked against cached indexes) are complete."""
    queries: list[Query] = []
    for doc in docs:
        text = " ".join(doc.contents.split())
        if text and len(queries) < n:
            queries.append(Query(doc.id, text))
    if len(queries) < n:
        raise InputError(f"the corpus has {len(queries)} non-blank documents, fewer than the {n} queries asked for")
    return queries


def topic_stats(queries: Sequence[Query]) -> dict[str, Any]:
    words = [len(q.text.split()) for q in queries]
    return {"queries": len(queries), "mean_words": round(sum(words) / len(words), 2), "min_words": min(words),
            "max_words": max(words), "total_words": sum(words)}


def weight_stats(maps: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    terms = [sum(1 for w in m.values() if w > 0) for m in maps.values()]
    tokens = [sum(w for w in m.values() if w > 0) for m in maps.values()]
    n = len(terms)
    return {"queries": n, "empty": sum(1 for t in terms if t == 0), "mean_terms": round(sum(terms) / n, 2),
            "max_terms": max(terms), "mean_pretokenized_tokens": round(sum(tokens) / n, 1),
            "max_pretokenized_tokens": max(tokens)}


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def queries_digest(queries: Sequence[Query]) -> str:
    return _digest([[q.id, q.text] for q in queries])


# ---- the two paths --------------------------------------------------------------------------------------------

def ours_bm25(index: Path, queries: Sequence[Query], run_path: Path, k: int, threads: int, k1: float, b: float
              ) -> Callable[[], dict[str, Any]]:
    """lsr-eval's BM25 path: open, ``batch_search`` (self-hits removed), write the TREC run, close."""

    def run() -> dict[str, Any]:
        from lsr_eval.anserini.searcher import Bm25Searcher

        with Bm25Searcher(str(index), k1=k1, b=b) as searcher:
            return _search_and_write(searcher, list(queries), run_path, k, threads, "lsr-eval-bm25")

    return run


def ours_impact(index: Path, maps: Mapping[str, Mapping[str, int]], run_path: Path, k: int, threads: int
                ) -> Callable[[], dict[str, Any]]:
    """lsr-eval's impact path: open, ``batch_search`` of the weight maps (self-hits removed), write, close."""

    def run() -> dict[str, Any]:
        from lsr_eval.anserini.searcher import ImpactSearcher

        with ImpactSearcher(str(index)) as searcher:
            return _search_and_write(searcher, maps, run_path, k, threads, "lsr-eval-impact")

    return run


def _search_and_write(searcher, queries, run_path: Path, k: int, threads: int, tag: str) -> dict[str, Any]:
    from lsr_eval.runs.trec import write_run

    t0 = time.perf_counter()
    run, counts = searcher.batch_search(queries, k=k, threads=threads, remove_query=True)
    search_s = time.perf_counter() - t0
    write_run(run, run_path, tag=tag)
    return {"run": run, "counts": counts, "search_seconds": search_s}


def anserini_path(argv: list[str]) -> Callable[[], Any]:
    """Anserini's ``SearchCollection`` with ``argv`` (writes its run file)."""

    def run():
        from lsr_eval.anserini.search_collection import run_search_collection

        return run_search_collection(argv)

    return run


# ---- comparing ------------------------------------------------------------------------------------------------

def check_counts(counts, qids: Sequence[str], ours: Run, theirs: Run) -> dict[str, Any]:
    """Nothing lost: every query is searched once and is in our run with hits or counted without; the hits add up;
    the queries absent from SearchCollection's run file are exactly those we found no hit for."""
    without = set(counts.queries_without_hits)
    with_hits = {q for q, hits in ours.items() if hits}
    missing_theirs = set(qids) - {q for q, hits in theirs.items() if hits}
    checks = {
        "searched_all": counts.queries == len(qids) == len(set(qids)),
        "in_run_or_without_hits": set(qids) == with_hits | without and not (with_hits & without),
        "with_plus_without": counts.queries_with_hits + len(without) == counts.queries,
        "hits_add_up": counts.hits == sum(len(h) for h in ours.values()),
        "same_queries_without_hits": missing_theirs == without,
    }
    return {"ok": all(checks.values()), **checks, "queries": counts.queries,
            "queries_with_hits": counts.queries_with_hits, "queries_without_hits": len(without),
            "hits": counts.hits, "removed_self_hits": counts.removed_self_hits}


# ---- one engine -----------------------------------------------------------------------------------------------

def side_by_side(ours_fn: Callable[[], dict[str, Any]], anserini_argv: list[str], qids: Sequence[str],
                 repeats: int, memory, interval: float) -> dict[str, Any]:
    """Both paths timed alternately; the last results compared; per-path records and the ratio."""
    from lsr_eval.runs.trec import read_run

    last: dict[str, Any] = {}

    def keep(name: str, result: Any) -> None:
        last[name] = result

    timed = alternate({OURS: ours_fn, ANSERINI: anserini_path(anserini_argv)}, repeats, memory, interval, keep)
    ours_out, sc_out = last[OURS], last[ANSERINI]
    theirs = read_run(sc_out.output)
    comparison = ranked_hits_agreement(ours_out["run"], theirs, qids, SCORE_TOLERANCE, names=("ours", ANSERINI))
    counts = check_counts(ours_out["counts"], qids, ours_out["run"], theirs)
    best = {name: min(ms, key=lambda m: m.seconds) for name, ms in timed.items()}
    paths = {}
    for name, ms in timed.items():
        paths[name] = {"seconds": round(best[name].seconds, 3), "cpu_seconds": round(best[name].cpu_seconds, 3),
                       "heap": best[name].heap, "runs": [m.record() for m in ms]}
    paths[OURS]["search_seconds_last"] = round(ours_out["search_seconds"], 3)
    paths[ANSERINI]["argv"] = anserini_argv
    ratio = best[OURS].seconds / best[ANSERINI].seconds
    cpu_ratio = best[OURS].cpu_seconds / best[ANSERINI].cpu_seconds if best[ANSERINI].cpu_seconds else None
    return {"paths": paths, "ratio": round(ratio, 4), "cpu_ratio": cpu_ratio and round(cpu_ratio, 4),
            "comparison": comparison, "counts": counts, "search_counts": ours_out["counts"].to_dict(),
            "run_files": {ANSERINI: sc_out.output}}


def heap_sweep(search_first: Callable[[int], Callable[[], Any]], hits_of: Callable[[Any], int], sizes: Sequence[int],
               available: int, memory, interval: float, label: str = OURS) -> list[dict[str, Any]]:
    """For each ``n`` of ``sizes``, ``search_first(n)()`` (a search of the first ``n`` queries) measured: JVM heap
    (before, sampled peak, pool peaks, after gc with the result held) and the process's resident memory."""
    from lsr_eval.anserini.search_collection import process_rss_mb

    rows = []
    for n in sizes:
        if n > available:
            log.warning("heap sweep: %d queries asked, only %d available: skipped", n, available)
            continue
        m = measure(search_first(n), memory, interval)
        rss = process_rss_mb()
        rows.append({"path": label, "queries": n, "seconds": round(m.seconds, 3), "hits": hits_of(m.result),
                     **m.heap, "process_rss_mb": round(rss.get("rss_mb", 0.0), 1),
                     "process_rss_peak_mb": round(rss.get("rss_peak_mb", 0.0), 1)})
        log.info("heap sweep, %s, %d queries: after gc %.0f MB, peak %.0f MB, RSS %.0f MB", label, n,
                 m.heap["after_gc_mb"], m.heap["peak_sampled_mb"], rss.get("rss_mb", 0.0))
        del m
    return rows


def ours_sweep(searcher, items: Sequence[Query] | Mapping[str, Mapping[str, int]], sizes: Sequence[int], k: int,
               threads: int, memory, interval: float) -> list[dict[str, Any]]:
    """:func:`heap_sweep` of ``searcher.batch_search`` (one open searcher) on the first ``n`` items."""

    def first(n: int) -> Callable[[], Any]:
        subset = list(items[:n]) if isinstance(items, list) else dict(list(items.items())[:n])
        return lambda: searcher.batch_search(subset, k=k, threads=threads, remove_query=True)

    return heap_sweep(first, lambda result: result[1].hits, sizes, len(items), memory, interval)


def anserini_sweep(argv_for: Callable[[Path, Path], list[str]], topic_lines: Sequence[tuple[int, str, str]],
                   sizes: Sequence[int], available: int, folder: Path, memory, interval: float
                   ) -> list[dict[str, Any]]:
    """:func:`heap_sweep` of ``SearchCollection`` on topics files of the first ``n`` queries (``topic_lines``:
    (position, qid, text) of the queries it is sent); ``folder`` holds its topics and runs, and is removed after."""
    import shutil

    from lsr_eval.anserini.search_collection import write_tsv_topics

    def first(n: int) -> Callable[[], Any]:
        topics = folder / f"topics-first{n}.tsv"
        write_tsv_topics(((qid, text) for i, qid, text in topic_lines if i < n), topics)
        return anserini_path(argv_for(topics, folder / f"first{n}.searchcollection.trec"))

    try:
        return heap_sweep(first, lambda result: run_lines(result.output), sizes, available, memory, interval,
                          label=ANSERINI)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_lines(path: str | Path) -> int:
    """Hits in a TREC run file (its non-blank lines)."""
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def sweep_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Growth from the smallest to the largest query count of the heap left after gc, of the old generation's peak
    (what survived young collections during the run: hits held across queries) and of the sampled peak (mostly
    young-generation garbage, whose room G1 sizes as the run goes)."""
    if len(rows) < 2:
        return {}
    first, last = rows[0], rows[-1]
    per_k = 1000 / (last["queries"] - first["queries"])
    grow = last["after_gc_mb"] - first["after_gc_mb"]
    return {"queries": [first["queries"], last["queries"]], "after_gc_growth_mb": round(grow, 1),
            "after_gc_growth_mb_per_1000_queries": round(grow * per_k, 2),
            "old_gen_peak_growth_mb_per_1000_queries": round((_old_gen(last) - _old_gen(first)) * per_k, 2),
            "peak_sampled_growth_mb_per_1000_queries": round((last["peak_sampled_mb"] - first["peak_sampled_mb"])
                                                             * per_k, 2),
            "after_gc_range_mb": [min(r["after_gc_mb"] for r in rows), max(r["after_gc_mb"] for r in rows)],
            "old_gen_peak_range_mb": [min(_old_gen(r) for r in rows), max(_old_gen(r) for r in rows)],
            "peak_sampled_range_mb": [min(r["peak_sampled_mb"] for r in rows),
                                      max(r["peak_sampled_mb"] for r in rows)]}


def _old_gen(row: dict[str, Any]) -> float:
    return sum(v for k, v in row["pool_peaks_mb"].items() if "old" in k.lower() or "tenured" in k.lower())


def run_engine(engine: str, index: Path, items: list[Query] | dict[str, dict[str, int]],
               topic_lines: list[tuple[int, str, str]], ours_fn: Callable[[Path], Callable[[], dict[str, Any]]],
               open_searcher: Callable[[], Any], args, bench: Path, memory, **model_args: Any) -> dict[str, Any]:
    """One engine: lsr-eval's heap sweep (first: it warms the JIT for both paths, and its figures owe nothing to a
    SearchCollection run), SearchCollection's when asked, then both paths side by side on all queries."""
    from lsr_eval.anserini.search_collection import search_collection_argv, write_tsv_topics

    runs = bench / "runs"

    def argv_for(topics: Path, output: Path) -> list[str]:
        return search_collection_argv(index, topics, output, engine if engine == "bm25" else "impact", hits=args.k,
                                      threads=args.threads, remove_query=True, **model_args)

    qids = [q.id for q in items] if isinstance(items, list) else list(items)
    with open_searcher() as searcher:
        rows = ours_sweep(searcher, items, args.sweep, args.k, args.threads, memory, args.sample_interval)
    sc_rows = []
    if args.sweep_searchcollection:
        sc_rows = anserini_sweep(argv_for, topic_lines, args.sweep, len(qids), bench / f"sweep-{engine}", memory,
                                 args.sample_interval)
    topics = bench / f"topics-{engine}.tsv"
    write_tsv_topics(((qid, text) for _, qid, text in topic_lines), topics)
    ours_run = runs / f"{engine}.lsr-eval.trec"
    result = side_by_side(ours_fn(ours_run), argv_for(topics, runs / f"{engine}.searchcollection.trec"), qids,
                          args.repeats, memory, args.sample_interval)
    result["run_files"][OURS] = str(ours_run)
    return {"index": str(index), "topics": str(topics), "topics_sent_to_searchcollection": len(topic_lines),
            **result, "heap_sweep": rows + sc_rows,
            "heap_sweep_summary": {OURS: sweep_summary(rows), **({ANSERINI: sweep_summary(sc_rows)} if sc_rows
                                                                  else {})}}


# ---- engines on the dataset -----------------------------------------------------------------------------------

def run_bm25(dataset, queries: list[Query], args, bench: Path, memory) -> dict[str, Any]:
    from lsr_eval.anserini.searcher import Bm25Searcher
    from lsr_eval.experiments.bm25 import ensure_bm25_index

    slot, _ = ensure_bm25_index(dataset, args.work_dir, args.threads)
    index = slot / "index"
    lines = [(i, q.id, q.text) for i, q in enumerate(queries)]
    return run_engine("bm25", index, queries, lines,
                      lambda run_path: ours_bm25(index, queries, run_path, args.k, args.threads, args.k1, args.b),
                      lambda: Bm25Searcher(str(index), k1=args.k1, b=args.b), args, bench, memory,
                      k1=args.k1, b=args.b)


def impact_weight_maps(model, s, queries: list[Query], bench: Path) -> tuple[dict[str, dict[str, int]], dict]:
    """The queries' integer weight maps from the query encoder, cached in ``bench`` (keyed by model, query encoder,
    scale and texts)."""
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.experiments.splade import encoder_fingerprint
    from lsr_eval.export.queries import query_weight_maps, read_query_jsonl, write_query_jsonl

    # the query encoder's fingerprint with its resolved precision: fp32 adds nothing (the key of every cache made
    # before precisions were resolved), bf16 adds bf16
    fp = encoder_fingerprint(s, model.query)
    key = json.loads(json.dumps({"model": fp["model"], "query_encoder": fp["document_encoder"],
                                 **({"bf16": True} if fp["bf16"] else {}),
                                 "scale": s.scale, "queries": queries_digest(queries), "n": len(queries)},
                                sort_keys=True, default=str))
    name = f"queries-{_digest(key)[:12]}"
    path, key_path = bench / f"{name}.jsonl", bench / f"{name}.key.json"
    if path.exists() and key_path.exists():
        record = json.loads(key_path.read_text())
        if record.get("key") == key:
            log.info("reusing the long queries' weight maps %s", path)
            return read_query_jsonl(path), record["encoding"]
    log.info("encoding %d long queries with the query encoder", len(queries))
    encoded = encode_queries(queries, SpladeTextEncoder(model.query), batch_size=s.batch_size)
    maps = query_weight_maps(encoded.vectors, s.scale)
    missing = [q.id for q in queries if q.id not in maps]
    if missing:
        raise LsrEvalError(f"query encoding lost {len(missing)} queries (first: {', '.join(missing[:5])})")
    maps = {q.id: dict(maps[q.id]) for q in queries}
    write_query_jsonl(maps, path)
    encoding = encoded.counts()
    key_path.write_text(json.dumps({"key": key, "encoding": encoding}, indent=2, sort_keys=True, default=str) + "\n")
    return maps, encoding


def run_impact(dataset, queries: list[Query], args, bench: Path, memory) -> dict[str, Any]:
    from lsr_eval.anserini.search_collection import pretokenized
    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.experiments.splade import (SpladeSettings, ensure_impact_index, inference_record, load_model,
                                             model_fingerprint)
    from lsr_eval.models.offline import resolve_model

    s = SpladeSettings(model=resolve_model(args.model), doc_top_k=args.doc_top_k, query_top_k=args.query_top_k,
                       max_length_q=args.max_length_q, max_length_d=args.max_length_d, scale=args.scale, hits=args.k,
                       precision=args.precision, device=args.device)
    model = load_model(s).eval()
    inference = inference_record(model)
    stages = ensure_impact_index(dataset, model, s, args.work_dir, args.threads)
    maps, encoding = impact_weight_maps(model, s, queries, bench)
    del model
    index = Path(stages["index_dir"])
    lines = [(i, qid, text) for i, (qid, text) in enumerate((qid, pretokenized(m, qid)) for qid, m in maps.items())
             if text]  # a query without a positive weight is not sent (lsr-eval counts it without hits)
    result = run_engine("impact", index, maps, lines,
                        lambda run_path: ours_impact(index, maps, run_path, args.k, args.threads),
                        lambda: ImpactSearcher(str(index)), args, bench, memory)
    return {**result, "model": model_fingerprint(s.model),
            "settings": {"doc_top_k": s.doc_top_k, "query_top_k": s.query_top_k, "max_length_q": s.max_length_q,
                         "scale": s.scale},
            "inference": inference,
            "query_encoding": encoding, "query_weights": weight_stats(maps)}


# ---- output ---------------------------------------------------------------------------------------------------

TABLE_FIELDS = ["engine", "path", "queries", "seconds", "cpu_seconds", "ratio_vs_searchcollection",
                "identical_queries", "same_docids_queries", "hits", "heap_peak_sampled_mb", "heap_after_gc_mb",
                "runs_seconds"]
HEAP_FIELDS = ["engine", "path", "queries", "seconds", "hits", "before_mb", "peak_sampled_mb", "old_gen_peak_mb",
               "after_gc_mb", "process_rss_mb", "process_rss_peak_mb"]


def table_rows(engines: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for engine, r in engines.items():
        cmp = r["comparison"]
        for path, p in r["paths"].items():
            rows.append({"engine": engine, "path": path, "queries": cmp["queries"], "seconds": p["seconds"],
                         "cpu_seconds": p["cpu_seconds"],
                         "ratio_vs_searchcollection": r["ratio"] if path == OURS else 1.0,
                         "identical_queries": cmp["identical_queries"],
                         "same_docids_queries": cmp["same_docids_queries"],
                         "hits": cmp["hits_ours"] if path == OURS else cmp["hits_searchcollection"],
                         "heap_peak_sampled_mb": p["heap"]["peak_sampled_mb"],
                         "heap_after_gc_mb": p["heap"]["after_gc_mb"],
                         "runs_seconds": " ".join(f"{x['seconds']:.2f}" for x in p["runs"])})
    return rows


def heap_rows(engines: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"engine": engine, **row, "old_gen_peak_mb": _old_gen(row)}
            for engine, r in engines.items() for row in r["heap_sweep"]]


def tables(engines: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """``table.csv`` and ``heap.csv`` of the engines' results (``results.json``'s ``engines``)."""
    return {"table.csv": csv_text(TABLE_FIELDS, table_rows(engines)),
            "heap.csv": csv_text(HEAP_FIELDS, heap_rows(engines))}


def summaries(folder: Path) -> dict[str, str]:
    """The tables of a results folder of this script, made again from its raw file (``results.json``): what
    tests/test_committed_results.py compares with the committed ones."""
    return tables(json.loads((folder / "results.json").read_text(encoding="utf-8"))["engines"])


def summary_text(engines: Mapping[str, dict[str, Any]]) -> str:
    lines = [f"{'engine':<8} {'path':<17} {'seconds':>8} {'cpu s':>8} {'ratio':>6} {'identical':>11} "
             f"{'heap peak':>9} {'after gc':>8}"]
    for row in table_rows(engines):
        lines.append(f"{row['engine']:<8} {row['path']:<17} {row['seconds']:>8.2f} {row['cpu_seconds']:>8.2f} "
                     f"{row['ratio_vs_searchcollection']:>6.2f} {row['identical_queries']:>5}/{row['queries']:<5} "
                     f"{row['heap_peak_sampled_mb']:>9.0f} {row['heap_after_gc_mb']:>8.0f}")
    for engine, r in engines.items():
        for path in (OURS, ANSERINI):
            sweep = [x for x in r["heap_sweep"] if x["path"] == path]
            if sweep:
                cells = ", ".join(f"{x['queries']}: {x['after_gc_mb']:.0f}/{_old_gen(x):.0f}/{x['peak_sampled_mb']:.0f}"
                                  for x in sweep)
                lines.append(f"{engine} {path} heap MB by queries (after gc/old-gen peak/sampled peak): {cells}")
    return "\n".join(lines)


# ---- main -----------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from lsr_eval.anserini.jvm import info
    from lsr_eval.anserini.search_collection import JvmMemory
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.manifest import prepare_output, write_manifest

    t_start = time.perf_counter()
    dataset = load_dataset(args.dataset, args.split)
    queries = long_topics(dataset.docs(), args.queries)
    stats = topic_stats(queries)
    experiment = {"benchmark": STAGE, "dataset": dataset.describe(), "queries": args.queries,
                  "selection": "first N documents, id = docid, text = title + text", "k": args.k,
                  "threads": args.threads, "engines": args.engines, "bm25": {"k1": args.k1, "b": args.b},
                  "impact": {"model": args.model, "doc_top_k": args.doc_top_k, "query_top_k": args.query_top_k,
                             "max_length_q": args.max_length_q, "scale": args.scale,
                             **({"max_length_d": args.max_length_d} if args.max_length_d else {}),
                             # the requested precision when not the default (results made before it was an option
                             # keep their identity); the resolved one is in results.json
                             **({"precision": args.precision} if args.precision != DEFAULT_PRECISION else {})},
                  "repeats": args.repeats, "sweep": args.sweep, "sweep_searchcollection": args.sweep_searchcollection}
    out = prepare_output(args.out, experiment, overwrite=args.overwrite)
    bench = args.work_dir / STAGE
    bench.mkdir(parents=True, exist_ok=True)
    jvm = info()
    memory = JvmMemory()
    heap_max = memory.max_mb()
    log.info("%d long queries (mean %.0f words); JVM heap max %.0f MB (%s)", stats["queries"], stats["mean_words"],
             heap_max, " ".join(jvm["jvm_options"]))
    load_start = list(os.getloadavg())
    engines: dict[str, dict[str, Any]] = {}
    if "bm25" in args.engines:
        engines["bm25"] = run_bm25(dataset, queries, args, bench, memory)
    if "impact" in args.engines:
        engines["impact"] = run_impact(dataset, queries, args, bench, memory)
    ok = all(r["counts"]["ok"] and r["comparison"]["identical_queries"] == r["comparison"]["queries"]
             for r in engines.values())
    results = {
        "topics": stats, "engines": engines, "all_identical_and_counted": ok,
        "target_ratio": 1.5, "within_target": {e: r["ratio"] <= 1.5 for e, r in engines.items()},
        "protocol": {"order": "ABBA (lsr-eval first in odd rounds)", "repeats": args.repeats, "kept": "fastest run",
                     "ratio": "lsr-eval seconds / SearchCollection seconds", "threads": args.threads,
                     "timed": "index opened -> run file written -> index closed", "score_tolerance": SCORE_TOLERANCE,
                     "jvm_heap_max_mb": heap_max, "load_average_start": load_start,
                     "load_average_end": list(os.getloadavg())},
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    with open(out / "results.json", "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, default=str)
        f.write("\n")
    for name, text in tables(engines).items():
        (out / name).write_bytes(text.encode("utf-8"))
    write_manifest(out, STAGE, experiment, java=jvm, topics=stats,
                   inference={e: r["inference"] for e, r in engines.items() if "inference" in r},
                   counts={e: r["counts"] for e, r in engines.items()},
                   timings={e: {p: v["seconds"] for p, v in r["paths"].items()} | {"ratio": r["ratio"]}
                            for e, r in engines.items()},
                   outputs=["results.json", "table.csv", "heap.csv"])
    print(summary_text(engines))
    if not ok:
        log.error("the runs differ or counts do not add up: see %s", out / "results.json")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
