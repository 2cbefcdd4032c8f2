"""Long queries through Anserini without the memory wall: lsr-eval's batch search against Anserini's own
``SearchCollection``, side by side in one process with the JVM's default heap, on queries that are whole documents.

    python studies/long_queries/run.py --out work/bench-long      # SciFact: 1,500 documents as queries

Topics: the first ``--queries`` documents of the corpus (title + text, whitespace collapsed), each a query whose id
is its document's id; the self-hit is removed on both sides (``remove_query=True``, ``-removeQuery``).

* BM25 (``bm25-flat`` index, k1/b, k hits): :class:`~lsr_eval.anserini.searcher.Bm25Searcher` against
  ``SearchCollection -bm25`` on a ``TsvString`` file of the same texts.
* Impact (SPLADE impact index, built or reused by :func:`lsr_eval.pipeline.splade.ensure_impact_index`): the
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

import json
import logging
import os
import sys
import sys as _sys
import time
from pathlib import Path as _Path
from typing import Any

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from lsr_eval.models.options import DEFAULT_PRECISION
from studies.long_queries.measure import (
    SCORE_TOLERANCE,
    STAGE,
    long_topics,
    parse_args,
    run_bm25,
    run_impact,
    topic_stats,
)
from studies.long_queries.summary import summary_text, tables

log = logging.getLogger("bench_long_queries")


# ---- main -----------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
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
