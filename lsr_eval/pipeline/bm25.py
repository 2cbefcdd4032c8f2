"""BM25 baselines exactly as Pyserini's BEIR regressions: English analyzer, k1=0.9, b=0.4, 1000 hits; for BEIR, hits
whose document id equals the query id are dropped.

* "flat" (the default): one field, contents = title + " " + text.
* "multifield" (``fields``, e.g. ``("title", "text")``): title and text indexed as separate fields (each with its
  own BM25 statistics), the query searched in each named field with weight 1.0 and the scores summed
  (Pyserini's ``--fields contents=1.0 title=1.0`` over its ``beir-v1.0.0-*.multifield`` indexes).

``engine: pisa`` scores the same BM25 in PISA (its ``bm25`` scorer, exact MaxScore by default, or the algorithm and
block-max data that ``engine_options`` name): the flat index's analysed terms counted per document
(:mod:`lsr_eval.anserini.analysis`) are indexed by PISA, and each query's analysed terms counted are its weights. The
same analyzer, k1 and b as Anserini; PISA's idf (``ln((N - df + 0.5) / (df + 0.5))``, floored at 1e-6, against
Lucene's ``ln(1 + (N - df + 0.5) / (df + 0.5))``) and exact document lengths (Lucene's are one byte) make its
scores, and a few rankings, differ from Anserini's: it is the same-engine reference of a learned sparse model's
latency, not a second Anserini.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lsr_eval.anserini.analysis import ANALYZER, EnglishAnalyzer, write_term_frequencies
from lsr_eval.anserini.collections import write_json_collection
from lsr_eval.anserini.indexer import build_index
from lsr_eval.anserini.jvm import info
from lsr_eval.anserini.searcher import Bm25Searcher
from lsr_eval.data.datasets import Dataset
from lsr_eval.data.types import Run
from lsr_eval.errors import LsrEvalError
from lsr_eval.evaluation import count_queries, evaluate, write_metrics
from lsr_eval.evaluation.provenance import evaluation_code
from lsr_eval.manifest import completed, prepare_output, write_manifest
from lsr_eval.pipeline.result import SystemResult
from lsr_eval.pipeline.reuse import reevaluate
from lsr_eval.pipeline.settings import Bm25Settings
from lsr_eval.runs.trec import write_run
from lsr_eval.workdir import cache_slot, cached

log = logging.getLogger(__name__)


def _staged(slot: Path, write, verb: str):
    """(the staging folder beside ``slot``, what ``write(folder)`` wrote into it): a collection an index is built
    from, then removed."""
    staging = slot.with_name(slot.name + ".collection")
    shutil.rmtree(staging, ignore_errors=True)
    t0 = time.perf_counter()
    coll = write(staging)
    log.info("%s %d documents into %s in %.1fs", verb, coll.documents, staging, time.perf_counter() - t0)
    return staging, coll


def _corpus_counts(dataset: Dataset) -> dict[str, Any]:
    """The corpus's counts for an index manifest, not the judged documents of the split that happened to build it:
    the index serves every split (each run records its own split's under counts.topics)."""
    return {k: v for k, v in dataset.doc_stats.to_dict().items() if not k.startswith("judged_documents")}


def ensure_bm25_index(dataset: Dataset, work: Path, threads: int = 2, multifield: bool = False
                      ) -> tuple[Path, dict[str, Any]]:
    """Build the ``bm25-flat`` (or ``bm25-multifield``) index of the dataset's corpus, or reuse the cached one;
    returns (folder, manifest)."""
    kind = "bm25-multifield" if multifield else "bm25-flat"
    key = {"kind": kind, "corpus": dataset.corpus_key()}
    slot = cache_slot(work, "indexes", key, f"{kind}-{dataset.corpus_label()}")
    built = []

    def build() -> None:
        staging, coll = _staged(slot, lambda folder: write_json_collection(dataset.docs(), folder,
                                                                         multifield=multifield), "wrote")
        counts = build_index(staging, slot / "index", kind, threads=threads)
        shutil.rmtree(staging)
        read = dataset.doc_stats.read
        if counts.total_indexed != read or coll.documents != read:
            raise LsrEvalError(f"documents read ({read}) != documents indexed ({counts.total_indexed}); Anserini "
                               f"counters: {counts.to_dict()}")
        write_manifest(slot, "index", key, counts={**counts.to_dict(), **_corpus_counts(dataset)}, java=info(),
                       index=str(slot / "index"))
        built.append(slot)

    manifest = cached(slot, key, build=build)  # another process building it is waited for
    if not built:
        log.info("reusing BM25 index %s (%d documents)", slot, manifest["counts"]["total_indexed"])
    return slot, manifest


def ensure_bm25_pisa_index(dataset: Dataset, work: Path, settings: Bm25Settings, threads: int = 2
                           ) -> tuple[Path, dict[str, Any]]:
    """PISA's BM25 index of the dataset's corpus (or the cached one): the flat index's analysed terms counted per
    document (:func:`lsr_eval.anserini.analysis.write_term_frequencies`), indexed with PISA's ``bm25`` scorer;
    returns (folder, manifest)."""
    engine = settings.pisa_engine()
    key = {"kind": "bm25-pisa", "corpus": dataset.corpus_key(), "analyzer": ANALYZER,
           "engine_build": {k: v for k, v in engine.settings.items() if k != "batch_size"}}
    slot = cache_slot(work, "indexes", key, f"bm25-pisa-{dataset.corpus_label()}")

    def build() -> None:
        staging, coll = _staged(slot, lambda folder: write_term_frequencies(dataset.docs(), folder), "analysed")
        counts = engine.build(staging, slot / "index", threads=threads)
        shutil.rmtree(staging)
        read = dataset.doc_stats.read
        if counts.documents_indexed != read or coll.documents != read:
            raise LsrEvalError(f"documents read ({read}) != documents analysed ({coll.documents}) or indexed by "
                               f"PISA ({counts.documents_indexed})")
        write_manifest(slot, "index", key, counts={**counts.to_dict(), **_corpus_counts(dataset)},
                       engine=engine.describe(),
                       analyzer=ANALYZER, java=info(), index=str(slot / "index"))

    return slot, cached(slot, key, build=build)


def open_bm25_pisa(settings: Bm25Settings, index: Path):
    """(a PISA searcher over a BM25 index that :func:`ensure_bm25_pisa_index` built, the analyzer that turns a
    query text into its weights)."""
    return settings.pisa_engine().open(index), EnglishAnalyzer()  # knobs default to the engine's and the index's


def search_bm25(dataset: Dataset, work: Path, settings: Bm25Settings = Bm25Settings(), threads: int = 2
                ) -> tuple[Run, dict[str, Any]]:
    """Index the corpus (or reuse the cached index in ``work``) and search every query in memory; returns the run
    and what a manifest records of it (``index``: path and manifest; ``counts``: topics and search; ``search``;
    ``search_seconds``)."""
    params = settings.resolved(dataset)
    slot, index_manifest = ensure_bm25_index(dataset, work, threads, multifield=bool(settings.fields))
    lucene = slot / "index"   # its term statistics cost every BM25 run (FLOPs, postings), whichever engine scores
    queries = dataset.queries()
    topic_counts = dataset.judged_check()
    if settings.engine == "pisa":
        slot, index_manifest = ensure_bm25_pisa_index(dataset, work, settings, threads)
        t0 = time.perf_counter()
        searcher, analyzer = open_bm25_pisa(settings, slot / "index")
        with searcher:
            run, search_counts = searcher.batch_search({q.id: analyzer.counts(q.text) for q in queries},
                                                       k=params["hits"], threads=threads,
                                                       remove_query=params["remove_query"])
            search_record = {**searcher.describe(), "analyzer": analyzer.name}
    else:
        t0 = time.perf_counter()
        with Bm25Searcher(str(slot / "index"), k1=params["k1"], b=params["b"], fields=settings.fields) as searcher:
            run, search_counts = searcher.batch_search(queries, k=params["hits"], threads=threads,
                                                       remove_query=params["remove_query"])
            search_record = searcher.describe()
    search_s = time.perf_counter() - t0
    if search_counts.queries_without_hits:
        log.warning("%d queries have no hits: %s", len(search_counts.queries_without_hits),
                    ", ".join(search_counts.queries_without_hits[:20]))
    if search_counts.queries != len(queries):
        raise LsrEvalError(f"queries read ({len(queries)}) != queries searched ({search_counts.queries})")
    return run, {"index": (slot / "index", index_manifest), "lucene_index": lucene,
                 "search": search_record, "search_seconds": search_s,
                 "counts": {"index": index_manifest["counts"], "topics": topic_counts,
                            "search": search_counts.to_dict()}}


def run_bm25(dataset: Dataset, out: str | Path, work: Path, settings: Bm25Settings = Bm25Settings(),
             threads: int = 2, overwrite: bool = False) -> SystemResult:
    """Index (or reuse), search every query, evaluate; writes run.trec, metrics.json and manifest.json to ``out``
    and returns them in memory."""
    params = settings.resolved(dataset)
    method = settings.method
    experiment = {"method": method, "dataset": dataset.describe(), **params}
    if not overwrite and (done := completed(out, experiment)):
        log.info("%s already holds this experiment: run reused, metrics recomputed", out)
        return reevaluate(out, dataset.qrels(), dataset.measures, done)
    out = prepare_output(out, experiment, overwrite)
    run, record = search_bm25(dataset, work, settings, threads)
    index_dir, index_manifest = record["index"]
    write_run(run, out / "run.trec", tag=method)
    metrics = evaluate(dataset.qrels(), run, dataset.measures)
    eval_counts = asdict(count_queries(dataset.qrels(), run))
    write_metrics(out, metrics)
    write_manifest(out, "bm25", experiment, evaluation=evaluation_code(),
                   counts={**record["counts"], "evaluation": eval_counts},
                   index={"path": str(index_dir), "manifest": index_manifest.get("created"),
                          "kind": "bm25-pisa" if settings.engine == "pisa" else method,
                          **({"lucene": str(record["lucene_index"])} if settings.engine == "pisa" else {})},
                   search=record["search"],
                   timings={"search_seconds": round(record["search_seconds"], 3)},
                   outputs=["run.trec", "metrics.json"], metrics=metrics)
    return SystemResult(metrics, run, Path(out))
