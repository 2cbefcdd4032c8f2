"""The stages one at a time on folders, as ``lsr-eval encode``, ``index``, ``search`` and ``carve-dev`` run them:
each writes its output folder with a manifest (the same records the chained pipeline's caches hold) and returns what
it did, for the command to print. Under torchrun, :func:`encode_folder` encodes one share of the shards per process
and rank 0 checks and writes the manifest once every rank is done."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.anserini.indexer import IndexCounts
from lsr_eval.api.inputs import judgments
from lsr_eval.data.datasets import Dataset
from lsr_eval.data.splits import DEV, carve_dev_split
from lsr_eval.engines.base import BuildCounts
from lsr_eval.engines.registry import DEFAULT_ENGINE, ENGINES, configure, get_engine, split_options
from lsr_eval.errors import ConfigError
from lsr_eval.evaluation import count_queries, evaluate, write_metrics
from lsr_eval.evaluation.measures import DEFAULT_MEASURES
from lsr_eval.export.queries import read_query_jsonl
from lsr_eval.manifest import prepare_output, write_manifest
from lsr_eval.pipeline.settings import SpladeSettings
from lsr_eval.runs.trec import write_run
from lsr_eval.search.counts import SearchCounts

__all__ = ["encode_folder", "index_folder", "search_folder", "carve_dev", "FolderEncoding", "FolderIndex",
           "FolderSearch"]

#: The kinds of index ``lsr-eval index`` builds: an impact index (any engine), or Anserini's BM25 flat index.
INDEX_KINDS: tuple[str, ...] = ("impact", "bm25-flat")


@dataclass(frozen=True)
class FolderEncoding:
    """What :func:`encode_folder` did: the documents this process encoded (every rank's, on rank 0 of a
    distributed run once they are all done; None on the other ranks), and its throughput (one process only)."""

    folder: Path
    documents: int | None
    docs_per_s: float | None
    world: int


def encode_folder(settings: SpladeSettings, dataset: Dataset, out: str | os.PathLike,
                  overwrite: bool = False) -> FolderEncoding:
    """Encode ``dataset``'s documents with the document encoder of ``settings`` into sharded vectors in ``out``
    (resumable; ``settings.encode.shard_size`` documents per shard)."""
    from lsr_eval.encode.corpus import resolve_rank
    from lsr_eval.encode.finalize import finalize_encoding
    from lsr_eval.pipeline.splade import encode_documents, encoding_key, load_model

    model = load_model(settings)
    rank, world = resolve_rank(None, None)
    summary = encode_documents(dataset, model, settings, out, encoding_key(dataset, model, settings), overwrite)
    if world == 1:
        manifest = summary.manifest
        return FolderEncoding(Path(out), manifest["counts"]["documents_out"], manifest["throughput"]["docs_per_s"], 1)
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo")
    dist.barrier()
    documents = finalize_encoding(out)["counts"]["documents_out"] if rank == 0 else None
    dist.destroy_process_group()
    return FolderEncoding(Path(out), documents, None, world)


@dataclass(frozen=True)
class FolderIndex:
    """What :func:`index_folder` built: the index folder (``<out>/index``) and the engine's counts (Anserini's
    indexer's for a BM25 flat index)."""

    index: Path
    counts: BuildCounts | IndexCounts


def index_folder(collection: str | os.PathLike, out: str | os.PathLike, kind: str = "impact",
                 engine: str = DEFAULT_ENGINE, options: Mapping[str, Any] | None = None, threads: int = 2,
                 overwrite: bool = False, round_weights: bool = False) -> FolderIndex:
    """Index the collection folder ``collection`` into ``out/index``: an impact index with ``engine`` and its build
    ``options`` (the collection checked first, docs/collections.md; ``round_weights``: an integer engine's
    fractional weights rounded half to even, and counted), or (``kind="bm25-flat"``) Anserini's BM25 flat index of
    a JsonCollection."""
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.anserini.jvm import info

    if kind not in INDEX_KINDS:
        raise ConfigError(f"index kind {kind!r}: expected one of {', '.join(INDEX_KINDS)}")
    src = Path(collection)
    experiment: dict[str, Any] = {"stage": "index", "kind": kind, "collection": str(src.resolve())}
    if kind == "bm25-flat":
        if engine != "anserini" or options or round_weights:
            raise ConfigError("--kind bm25-flat is an Anserini index: --engine anserini, no --engine-option, no "
                              "--round-weights")
        folder = prepare_output(out, experiment, overwrite)
        counts = build_index(src, folder / "index", kind, threads=threads)
        write_manifest(folder, "index", experiment, counts=counts.to_dict(), java=info(), index=str(folder / "index"))
        return FolderIndex(folder / "index", counts)
    build, search = split_options(engine, dict(options or {}))
    if search:
        raise ConfigError(f"{', '.join(search)}: search options of {engine}; give them to `lsr-eval search`")
    eng = get_engine(engine, **build)
    if engine != "anserini":
        experiment.update(engine=engine, engine_build=build)
    if round_weights:
        experiment["round_weights"] = True
    folder = prepare_output(out, experiment, overwrite)
    counts = eng.build(src, folder / "index", threads=threads, round_weights=round_weights)
    write_manifest(folder, "index", experiment, counts=counts.to_dict(), engine=eng.describe(),
                   index=str(folder / "index"))
    return FolderIndex(folder / "index", counts)


@dataclass(frozen=True)
class FolderSearch:
    """What :func:`search_folder` wrote: the run file, the search counts, and the metrics (empty when not
    evaluated)."""

    run_file: Path
    counts: SearchCounts
    metrics: dict[str, float]
    #: queries of the file without a term (searched: no hits)
    without_terms: int = 0


def search_folder(index: str | os.PathLike, queries: str | os.PathLike, out: str | os.PathLike, hits: int = 1000,
                  threads: int = 2, remove_query: bool = False, engine: str = DEFAULT_ENGINE,
                  options: Mapping[str, Any] | None = None, max_clauses: int | None = None,
                  dataset: str | None = None, split: str | None = None, overwrite: bool = False) -> FolderSearch:
    """Search the index folder ``index`` of ``engine`` with the query vectors of ``queries`` (``queries.jsonl``,
    each line checked against the weights the engine takes, docs/collections.md, before any output is made) into
    ``out/run.trec``; with ``dataset`` (a dataset spec or a qrels file) also evaluate the run on its official
    measures (the default measures for a qrels file)."""
    experiment: dict[str, Any] = {"stage": "search", "index": str(Path(index).resolve()),
                                  "queries": str(Path(queries).resolve()), "hits": hits, "remove_query": remove_query}
    searching, _, knobs = configure(engine, options, max_clauses)
    if engine != "anserini":   # as recorded before: None without options
        experiment.update(engine=engine, engine_options=dict(options) if options else None)
    maps = read_query_jsonl(queries, ENGINES[engine].weights)
    read = {"queries": len(maps), "queries_without_terms": sum(not m for m in maps.values())}
    folder = prepare_output(out, experiment, overwrite)
    with searching.open(Path(index), **knobs) as searcher:
        run, counts = searcher.batch_search(maps, k=hits, threads=threads, remove_query=remove_query)
        engine_record = searcher.describe()
    write_run(run, folder / "run.trec", tag="impact")
    sections: dict[str, Any] = {"counts": {"queries_file": read, "search": counts.to_dict()}, "search": engine_record}
    metrics: dict[str, float] = {}
    if dataset:
        qrels, _, official = judgments(dataset, split)
        metrics = evaluate(qrels, run, official or DEFAULT_MEASURES)
        write_metrics(folder, metrics)
        sections = {"counts": {"queries_file": read, "search": counts.to_dict(),
                               "evaluation": asdict(count_queries(qrels, run))},
                    "metrics": metrics, "search": engine_record}
    write_manifest(folder, "search", experiment, **sections)
    return FolderSearch(folder / "run.trec", counts, metrics, read["queries_without_terms"])


def carve_dev(source: str | os.PathLike, out: str | os.PathLike, *, n: int, split: str = "train",
              seed: int = 0) -> dict[str, Any]:
    """A BEIR folder ``out`` whose qrels add ``dev`` (``n`` queries of ``split``, drawn with ``seed``) and ``fit``
    (the rest), with its manifest (the dev query ids); returns the counts."""
    counts = carve_dev_split(source, out, split=split, n=n, seed=seed)
    summary = {k: v for k, v in counts.items() if k != "dev_qids"}
    experiment = {k: counts[k] for k in ("source", "split", "seed", DEV)}  # DEV: the number of dev queries
    write_manifest(Path(out), stage="carve-dev", experiment=experiment, counts=summary,
                   outputs={"dev_qids": counts["dev_qids"]})
    return summary
