"""Runs in, runs and tables out: datasets, BM25, evaluation with significance, fusion and benchmarks as Python calls.

Runs are plain ``{qid: {docid: score}}`` dicts (a TREC file's path is read where a run is expected); tables are
pandas DataFrames. Nothing is written unless ``out=`` is given; indexes that Anserini needs live in the work folder.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Sequence

from lsr_eval.benchmark import run as benchmark_run
from lsr_eval.benchmark.config import apply_stand_ins, load_config, read_stand_ins
from lsr_eval.data.datasets import Dataset, load_dataset
from lsr_eval.data.types import Run
from lsr_eval.engines.registry import DEFAULT_ENGINE
from lsr_eval.workdir import work_dir

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_dataset", "bm25", "run_benchmark"]


def bm25(dataset: Dataset | str, out: str | os.PathLike | None = None, work: str | os.PathLike | None = None,
         k1: float = 0.9, b: float = 0.4, hits: int = 1000, fields: Sequence[str] | None = None, threads: int = 2,
         overwrite: bool = False, engine: str = DEFAULT_ENGINE, engine_options: dict | None = None,
         remove_query: bool | None = None) -> Run:
    """BM25 (Pyserini's BEIR regression settings by default) on every query of ``dataset``; the run in memory.

    The Anserini index is built (or reused) in the work folder (``work``, default ``$LSR_EVAL_WORK`` or ./work):
    Lucene needs one on disk. With ``out``, run.trec, metrics.json and manifest.json are written there as
    ``lsr-eval bm25`` writes them. ``engine="pisa"`` scores the same analysed terms with PISA's BM25
    (:mod:`lsr_eval.pipeline.bm25`; ``engine_options``: its query algorithm, index encoding, block size).
    ``remove_query``: drop a query's own id from its hits (None: the dataset's default, on for BEIR).
    """
    from lsr_eval.pipeline.bm25 import Bm25Settings, run_bm25, search_bm25

    settings = Bm25Settings(k1=k1, b=b, hits=hits, remove_query=remove_query, fields=tuple(fields) if fields else None,
                            engine=engine, engine_options=engine_options)   # checked before the data is read
    ds = load_dataset(dataset) if isinstance(dataset, str) else dataset
    if out is not None:
        return run_bm25(ds, out, work_dir(work), settings, threads=threads, overwrite=overwrite).run
    run, _ = search_bm25(ds, work_dir(work), settings, threads)
    return run


def run_benchmark(config: str | os.PathLike, out: str | os.PathLike | None = None,
                  work: str | os.PathLike | None = None, threads: int = 2, device: str | None = None,
                  stand_ins: Sequence[str] = (), map_file: str | os.PathLike | None = None) -> pd.DataFrame:
    """Run (or resume) the benchmark of a YAML file as ``lsr-eval benchmark`` does, and return its table (pandas).
    A benchmark always writes its folder (the config's ``out``, or ``out``): runs, table.csv and a manifest.
    ``stand_ins`` (``ID=PATH``) and ``map_file`` (a YAML mapping ``ID: PATH``) run a hub id or a dataset name on a
    local copy instead (recorded in the manifest); each of ``stand_ins`` must name something of the config.
    (Named ``run_benchmark`` at the package root: ``lsr_eval.benchmark`` is the benchmark package.)"""

    explicit = read_stand_ins(stand_ins)   # each must name something of the config; a map file may hold more
    cfg = apply_stand_ins(load_config(config), {**read_stand_ins((), map_file), **explicit}, list(explicit))
    if out is not None:
        cfg = dataclasses.replace(cfg, out=str(out))
    return benchmark_run.run_benchmark(cfg, work_dir(work), threads=threads, device=device)
