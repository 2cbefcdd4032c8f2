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
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from lsr_eval.experiments.long_queries import SCORE_TOLERANCE, STAGE, long_topics, run_bm25, run_impact, topic_stats
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.models.options import DEFAULT_PRECISION
from lsr_eval.report.long_queries import summaries, summary_text, tables  # noqa: F401  (summaries)
from lsr_eval.models.arguments import add_device, add_precision

REPO = Path(__file__).resolve().parents[1]

DEFAULT_SWEEP = (250, 500, 1000, 1500)

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
