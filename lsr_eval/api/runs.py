"""Runs in, runs and tables out: datasets, BM25, evaluation with significance, fusion and benchmarks as Python calls.

Runs are plain ``{qid: {docid: score}}`` dicts (a TREC file's path is read where a run is expected); tables are
pandas DataFrames. Nothing is written unless ``out=`` is given; indexes that Anserini needs live in the work folder.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, Union

from lsr_eval.benchmark import run as benchmark_run
from lsr_eval.benchmark.config import apply_stand_ins, load_config, read_stand_ins
from lsr_eval.data.datasets import Dataset, load_dataset
from lsr_eval.data.trec_files import read_qrels
from lsr_eval.data.types import Qrels, Run
from lsr_eval.engines.registry import DEFAULT_ENGINE
from lsr_eval.errors import ConfigError
from lsr_eval.workdir import work_dir

if TYPE_CHECKING:
    import pandas as pd

#: What a run argument may be: a run in memory, or the path of a TREC run file.
RunLike = Union[Mapping[str, Mapping[str, float]], str, os.PathLike]
#: What a judgments argument may be: a dataset, qrels in memory, a qrels file, or a dataset spec.
QrelsLike = Union[Dataset, Mapping[str, Mapping[str, int]], str, os.PathLike]

__all__ = ["load_dataset", "read_qrels_spec", "as_run", "bm25", "evaluate", "per_query_scores", "fuse", "run_benchmark"]


def read_qrels_spec(spec: str | os.PathLike, split: str | None = None
                    ) -> tuple[Qrels, tuple[str, ...] | None, dict[str, Any]]:
    """Qrels from a qrels file (TREC or BEIR TSV) or a dataset spec (registry name, ``irds:<id>``, BEIR folder);
    returns (qrels, the dataset's measures or None for a file, a description for manifests)."""
    path = Path(spec)
    if path.is_file():
        if split is not None:
            raise ConfigError(f"{spec} is a qrels file: a split applies to dataset names and BEIR folders only")
        return read_qrels(path), None, {"qrels_file": str(path.resolve())}
    dataset = load_dataset(str(spec), split)
    return dataset.qrels(), tuple(dataset.measures), {"dataset": dataset.describe()}


def judgments(data: QrelsLike, split: str | None = None
              ) -> tuple[Qrels, dict[str, Any] | None, tuple[str, ...] | None]:
    """(qrels, their description for a manifest or None in memory, the dataset's official measures or None) of any
    :data:`QrelsLike`; ``split`` for a dataset spec."""
    if isinstance(data, Dataset):
        return data.qrels(), {"dataset": data.describe()}, tuple(data.measures)
    if isinstance(data, (str, os.PathLike)):
        qrels, measures, described = read_qrels_spec(data, split)
        return qrels, described, measures
    return {q: dict(j) for q, j in data.items()}, None, None


def as_run(run: RunLike) -> Run:
    """A run in memory: a mapping is returned as a dict, a path is read (:func:`lsr_eval.runs.trec.read_run`)."""
    if isinstance(run, (str, os.PathLike)):
        from lsr_eval.runs.trec import read_run

        return read_run(run)
    return {q: dict(hits) for q, hits in run.items()}


def _is_run(value: Any) -> bool:
    """Whether ``value`` is one run in memory (qid -> docid -> score) rather than a mapping of named runs."""
    if not isinstance(value, Mapping):
        return False
    first = next(iter(value.values()), {})
    return isinstance(first, Mapping) and not any(isinstance(v, (Mapping, str, os.PathLike))
                                                  for v in list(first.values())[:1])


def _named(runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike]) -> dict[str, RunLike]:
    """name -> run: a mapping of runs keeps its names, a path is named by its file name (its path when two file
    names are equal, and its place too when a path is given twice), a run in memory ``run1``, ``run2``, ..."""
    if isinstance(runs, Mapping) and not _is_run(runs):
        return dict(runs)
    if isinstance(runs, (str, os.PathLike)) or _is_run(runs):
        runs = [runs]
    runs = list(runs)
    names = [Path(r).name if isinstance(r, (str, os.PathLike)) else f"run{i + 1}" for i, r in enumerate(runs)]
    if len(set(names)) < len(names):
        names = [str(r) if isinstance(r, (str, os.PathLike)) else n for n, r in zip(names, runs)]
    if len(set(names)) < len(names):  # one file given twice: both kept, told apart by their place
        names = [f"{n} ({i + 1})" if names.count(n) > 1 else n for i, n in enumerate(names)]
    return dict(zip(names, runs))


def per_query_scores(qrels: Qrels, runs: Mapping[str, RunLike], measures: Iterable[str]
                     ) -> dict[str, dict[str, dict[str, float]]]:
    """name -> measure -> qid -> value of each run (trec_eval -c: every judged query, 0 without results)."""
    from lsr_eval.evaluation import evaluate as evaluate_run

    return {name: evaluate_run(qrels, as_run(run), measures, per_query=True) for name, run in runs.items()}


def evaluate(data: QrelsLike, runs: RunLike | Sequence[RunLike] | Mapping[str, RunLike],
             measures: Iterable[str] | None = None, baseline: str | None = None, test: str = "t-test",
             alpha: float = 0.05, correction: str = "bonferroni") -> pd.DataFrame:
    """A DataFrame with one row per run (index: its name) and one column per measure, as ``lsr-eval evaluate``.

    ``data``: a dataset, qrels, a qrels file or a dataset spec; ``measures``: default the dataset's official
    ones (else nDCG@10, RR@10, R@100, R@1000, MAP). With ``baseline`` (a run name), each other run is tested against
    it as ``evaluate --baseline`` does: columns ``<measure>_p`` (p-value corrected by ``correction``: bonferroni,
    holm or bh, over the compared runs x measures) and
    ``<measure>_sig`` (``†`` better, ``↓`` worse, empty otherwise); the test settings are in ``df.attrs``. Per-query
    values and query counts: :func:`lsr_eval.api.evaluation.run_evaluation`, of which this is the table.
    """
    from lsr_eval.api.evaluation import run_evaluation  # it reads this module's runs and judgments

    return run_evaluation(data, runs, measures, baseline, test, alpha, correction).table()


def fuse(runs: Sequence[RunLike] | Mapping[str, RunLike], method: str = "rrf", norm: str | None = None,
         depth: int | None = 1000, *, tune: Any = None, qrels: QrelsLike | None = None, **params: Any) -> Run:
    """The fused run of ``runs`` (two or more) with ranx's ``method`` (:data:`lsr_eval.fusion.METHODS`): ``norm``
    None is the method's default, ``depth`` keeps the first 1,000 documents of each query (None: all), ``params``
    are the method's (``k=60`` for RRF, ``weights=[0.3, 0.7]`` for wsum), or ``tune`` chooses them
    (:class:`~lsr_eval.api.fusion.TuneOn`, or :class:`~lsr_eval.api.fusion.CrossValidate` over ``qrels``). The
    metrics, the chosen parameters and files: :func:`lsr_eval.api.fusion.run_fusion`, of which this is the run."""
    from lsr_eval.api.fusion import run_fusion  # it reads this module's runs and judgments

    return run_fusion(runs, method, norm, depth, params, qrels=qrels, tune=tune).run


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
