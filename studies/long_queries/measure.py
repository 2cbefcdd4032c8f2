"""Long queries through Anserini without the memory wall (studies/long_queries/run.py): lsr-eval's batch
search against Anserini's own ``SearchCollection`` in one process, on queries that are whole documents, timed in ABBA
order with the JVM heap sampled, runs compared query by query, and the heap swept over the number of queries."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from lsr_eval.commands.options import add_device, add_precision
from lsr_eval.data.types import Document, Query, Run
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.errors import InputError, LsrEvalError
from studies.harness.agreement import ranked_hits_agreement
from studies.harness.measure import alternate, measure

REPO = Path(__file__).resolve().parents[2]
STAGE = "bench-long-queries"
#: query counts of the heap sweep (``--sweep``)
DEFAULT_SWEEP = (250, 500, 1000, 1500)
#: Run files print six decimals: scores within half a unit of the sixth decimal are equal at that precision.
SCORE_TOLERANCE = 5.01e-7
OURS, ANSERINI = "lsr-eval", "searchcollection"

log = logging.getLogger(__name__)


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
            "old_gen_peak_growth_mb_per_1000_queries": round((old_gen_peak_mb(last) - old_gen_peak_mb(first))
                                                             * per_k, 2),
            "peak_sampled_growth_mb_per_1000_queries": round((last["peak_sampled_mb"] - first["peak_sampled_mb"])
                                                             * per_k, 2),
            "after_gc_range_mb": [min(r["after_gc_mb"] for r in rows), max(r["after_gc_mb"] for r in rows)],
            "old_gen_peak_range_mb": [min(old_gen_peak_mb(r) for r in rows), max(old_gen_peak_mb(r) for r in rows)],
            "peak_sampled_range_mb": [min(r["peak_sampled_mb"] for r in rows),
                                      max(r["peak_sampled_mb"] for r in rows)]}



def old_gen_peak_mb(row: dict[str, Any]) -> float:
    """The old generation's peak of one heap-sweep row (the pools named old or tenured)."""
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



def run_bm25(dataset, queries: list[Query], args, bench: Path, memory) -> dict[str, Any]:
    from lsr_eval.anserini.searcher import Bm25Searcher
    from lsr_eval.pipeline.bm25 import ensure_bm25_index

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
    from lsr_eval.export.queries import query_weight_maps, read_query_jsonl, write_query_jsonl
    from lsr_eval.pipeline.splade import encoder_fingerprint

    # the query encoder's fingerprint with its resolved precision: fp32 adds nothing (the key of every cache made
    # before precisions were resolved), bf16 adds bf16
    fp = encoder_fingerprint(s, model.query)
    key = json.loads(json.dumps({"model": fp["model"], "query_encoder": fp["document_encoder"],
                                 **({"bf16": True} if fp["bf16"] else {}),
                                 "scale": s.export.scale, "queries": queries_digest(queries), "n": len(queries)},
                                sort_keys=True, default=str))
    name = f"queries-{_digest(key)[:12]}"
    path, key_path = bench / f"{name}.jsonl", bench / f"{name}.key.json"
    if path.exists() and key_path.exists():
        record = json.loads(key_path.read_text())
        if record.get("key") == key:
            log.info("reusing the long queries' weight maps %s", path)
            return read_query_jsonl(path), record["encoding"]
    log.info("encoding %d long queries with the query encoder", len(queries))
    encoded = encode_queries(queries, SpladeTextEncoder(model.query), batch_size=s.encode.batch_size)
    maps = query_weight_maps(encoded.vectors, s.export.scale)
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
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.pipeline.settings import SpladeSettings
    from lsr_eval.pipeline.splade import (
        ensure_impact_index,
        inference_record,
        load_model,
        model_fingerprint,
    )

    s = SpladeSettings.from_flat(model=resolve_model(args.model), doc_top_k=args.doc_top_k,
                                 query_top_k=args.query_top_k, max_length_q=args.max_length_q,
                                 max_length_d=args.max_length_d, scale=args.scale, hits=args.k,
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
            "settings": {"doc_top_k": s.encode.doc_top_k, "query_top_k": s.encode.query_top_k,
                         "max_length_q": s.encode.max_length_q, "scale": s.export.scale},
            "inference": inference,
            "query_encoding": encoding, "query_weights": weight_stats(maps)}


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/long_queries/run.py (``description``: its help's first paragraph)."""
    p = argparse.ArgumentParser(description=description)
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
