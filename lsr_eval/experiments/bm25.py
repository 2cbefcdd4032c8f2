"""BM25 "flat" baseline exactly as Pyserini's BEIR regressions: contents = title + " " + text, English analyzer,
k1=0.9, b=0.4, 1000 hits; for BEIR, hits whose document id equals the query id are dropped."""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lsr_eval.data.datasets import Dataset
from lsr_eval.errors import LsrEvalError
from lsr_eval.experiments.result import SystemResult
from lsr_eval.experiments.workdir import cache_slot, cached
from lsr_eval.manifest import completed, prepare_output, write_manifest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Bm25Settings:
    """Pyserini's BEIR regression settings by default."""

    k1: float = 0.9
    b: float = 0.4
    hits: int = 1000
    remove_query: bool | None = None  # None: the dataset's convention (on for BEIR)

    def resolved(self, dataset: Dataset) -> dict[str, Any]:
        rq = dataset.remove_query if self.remove_query is None else self.remove_query
        return {"k1": self.k1, "b": self.b, "hits": self.hits, "remove_query": rq}


def ensure_bm25_index(dataset: Dataset, work: Path, threads: int = 2) -> tuple[Path, dict[str, Any]]:
    """Build the ``bm25-flat`` index of the dataset's corpus, or reuse the cached one; returns (folder, manifest)."""
    from lsr_eval.anserini.collections import write_json_collection
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.anserini.jvm import info

    key = {"kind": "bm25-flat", "corpus": dataset.corpus_key()}
    slot = cache_slot(work, "indexes", key, f"bm25-flat-{dataset.corpus_label()}")
    built = []

    def build() -> None:
        staging = slot.with_name(slot.name + ".collection")
        shutil.rmtree(staging, ignore_errors=True)
        t0 = time.perf_counter()
        coll = write_json_collection(dataset.docs(), staging)
        log.info("wrote %d documents to %s in %.1fs", coll.documents, staging, time.perf_counter() - t0)
        counts = build_index(staging, slot / "index", "bm25-flat", threads=threads)
        shutil.rmtree(staging)
        read = dataset.doc_stats.read
        if counts.total_indexed != read or coll.documents != read:
            raise LsrEvalError(f"documents read ({read}) != documents indexed ({counts.total_indexed}); Anserini "
                               f"counters: {counts.to_dict()}")
        write_manifest(slot, "index", key, counts={**counts.to_dict(), **dataset.doc_stats.to_dict()},
                       java=info(), index=str(slot / "index"))
        built.append(slot)

    manifest = cached(slot, key, build=build)  # another process building it is waited for
    if not built:
        log.info("reusing BM25 index %s (%d documents)", slot, manifest["counts"]["total_indexed"])
    return slot, manifest


def run_bm25(dataset: Dataset, out: str | Path, work: Path, settings: Bm25Settings = Bm25Settings(),
             threads: int = 2, overwrite: bool = False) -> SystemResult:
    """Index (or reuse), search every query, evaluate; writes run.trec, metrics.json and manifest.json to ``out``
    and returns them in memory."""
    from lsr_eval.anserini.searcher import Bm25Searcher
    from lsr_eval.evaluation import count_queries, evaluate, write_metrics
    from lsr_eval.evaluation.provenance import evaluation_code
    from lsr_eval.experiments.reuse import reevaluate
    from lsr_eval.runs.trec import write_run

    params = settings.resolved(dataset)
    experiment = {"method": "bm25-flat", "dataset": dataset.describe(), **params}
    if not overwrite and (done := completed(out, experiment)):
        log.info("%s already holds this experiment: run reused, metrics recomputed", out)
        return reevaluate(out, dataset.qrels(), dataset.measures, done)
    out = prepare_output(out, experiment, overwrite)
    slot, index_manifest = ensure_bm25_index(dataset, work, threads)
    queries = dataset.queries()
    topic_counts = dataset.judged_check()
    t0 = time.perf_counter()
    with Bm25Searcher(str(slot / "index"), k1=params["k1"], b=params["b"]) as searcher:
        run, search_counts = searcher.batch_search(queries, k=params["hits"], threads=threads,
                                                   remove_query=params["remove_query"])
    search_s = time.perf_counter() - t0
    if search_counts.queries_without_hits:
        log.warning("%d queries have no hits: %s", len(search_counts.queries_without_hits),
                    ", ".join(search_counts.queries_without_hits[:20]))
    if search_counts.queries != len(queries):
        raise LsrEvalError(f"queries read ({len(queries)}) != queries searched ({search_counts.queries})")
    write_run(run, out / "run.trec", tag="bm25-flat")
    metrics = evaluate(dataset.qrels(), run, dataset.measures)
    eval_counts = asdict(count_queries(dataset.qrels(), run))
    write_metrics(out, metrics)
    write_manifest(out, "bm25", experiment, evaluation=evaluation_code(),
                   counts={"index": index_manifest["counts"], "topics": topic_counts, "search": search_counts.to_dict(),
                           "evaluation": eval_counts},
                   index={"path": str(slot / "index"), "manifest": index_manifest.get("created")},
                   timings={"search_seconds": round(search_s, 3)},
                   outputs=["run.trec", "metrics.json"], metrics=metrics)
    return SystemResult(metrics, run, Path(out))
