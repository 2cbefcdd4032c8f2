"""One committed ``lsr-eval bm25`` or ``lsr-eval splade`` run, rerun from its manifest.

The settings are the recorded ones (the experiment: every BM25 setting, engine and fields included; every SPLADE
setting, the precision as resolved then), the dataset the one the recorded command named (its folder located here,
``--path-map`` applied), checked against the recorded data; the model by its recorded sha256 or file sizes. One row,
named after the folder (a training run's ``dev-finetuned``) or the dataset and method: the run's record with its
metrics.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.cli import build_parser
from lsr_eval.data.datasets import load_dataset
from lsr_eval.errors import LsrEvalError
from lsr_eval.reproduce.checks import Blocker, check_dataset, check_model, needs_gpu
from lsr_eval.reproduce.compare import COULD_NOT_RUN
from lsr_eval.reproduce.estimate import runs_seconds
from lsr_eval.reproduce.jobs import Job, Options
from lsr_eval.reproduce.paths import locate, search_bases
from lsr_eval.reproduce.records import run_record
from lsr_eval.reproduce.results import Result


def _recorded_args(manifest: Mapping[str, Any]):
    """The recorded command line parsed by today's ``lsr-eval`` parser (None when it no longer parses)."""
    argv = [str(a) for a in manifest.get("command") or []]
    stage = manifest.get("stage")
    if stage not in argv:
        return None
    try:
        return build_parser().parse_args(argv[argv.index(stage):])
    except SystemExit:
        return None


def _dataset(manifest: Mapping[str, Any], repo: Path | None, options: Options):
    """The dataset of the recorded command (its spec located here), else the recorded corpus's BEIR folder."""
    bases = search_bases(repo)
    args = _recorded_args(manifest)
    if args is not None:
        files = {k: locate(getattr(args, k), bases, options.paths) if getattr(args, k, None) else None
                 for k in ("topics", "qrels")}
        return load_dataset(locate(args.dataset, bases, options.paths), args.split, **files)
    described = (manifest.get("experiment") or {}).get("dataset") or {}
    corpus = (described.get("corpus") or {}).get("path")
    if not corpus:
        raise LsrEvalError("the manifest names neither a command nor a corpus file to find the dataset by")
    split = str(described.get("name", "/test")).rpartition("/")[2] or "test"
    return load_dataset(locate(str(Path(corpus).parent), bases, options.paths), split)


def _rerun(manifest: Mapping[str, Any], dataset, model: str | None, options: Options):
    """The function that reruns the recorded stage on ``dataset`` into a fresh folder."""
    experiment = manifest.get("experiment") or {}

    def run(out: Path, work: Path) -> Path:
        if manifest.get("stage") == "bm25":
            from lsr_eval.pipeline.bm25 import Bm25Settings, run_bm25

            run_bm25(dataset, out, work, Bm25Settings.from_record(experiment), threads=options.threads)
        else:
            from lsr_eval.pipeline.settings import SpladeSettings
            from lsr_eval.pipeline.splade import run_splade

            recorded = dict(experiment.get("settings") or {})
            if recorded.get("query_model"):
                recorded["query_model"] = options.paths.here(recorded["query_model"])
            # as recorded: a run written unevaluated (--no-eval, a test split's before its turn) stays unevaluated
            evaluate = (manifest.get("evaluation") or {}).get("evaluated") is not False
            from lsr_eval.pipeline.splade import RUN_SUFFIXES

            run_file = next((o for o in manifest.get("outputs") or [] if o.endswith(RUN_SUFFIXES)), "run.trec")
            run_splade(dataset, out, work, SpladeSettings.from_record(recorded, model=model), threads=options.threads,
                       evaluate=evaluate, run_file=run_file)
        return out

    return run


def stage_job(folder: Path, manifest: Mapping[str, Any], repo: Path | None, options: Options, row: str,
              model: str | None = None) -> tuple[Job, Any]:
    """The job of the run in ``folder`` (one row named ``row``) and its rerun function ``(out, work) -> folder``
    (None when it cannot run). ``model``: use this model instead of the recorded one (a retrained checkpoint)."""
    job = Job(command="", rows={row: run_record(folder, metrics=True)}, kind=str(manifest.get("stage")),
              estimate_s=runs_seconds([manifest], options.work_dir))
    blocker = None
    if manifest.get("stage") == "splade":
        settings = (manifest.get("experiment") or {}).get("settings") or {}
        name = model or _model_name(manifest)
        model, blocker = check_model(name, None if model else (manifest.get("experiment") or {}).get("model"),
                                     options.paths)
        blocker = blocker or needs_gpu(settings.get("device"))
    dataset = None
    if blocker is None:
        try:
            dataset = _dataset(manifest, repo, options)
            blocker = check_dataset(dataset, None, [manifest], f"dataset {dataset.name}")
        except LsrEvalError as e:
            blocker = Blocker(COULD_NOT_RUN, f"missing data: {e}")
    if blocker is not None:
        job.blocked[row] = blocker
        return job, None
    return job, _rerun(manifest, dataset, model, options)


def _model_name(manifest: Mapping[str, Any]) -> str:
    """The model as the run named it: its offline alias when it was one, else its recorded folder."""
    experiment = manifest.get("experiment") or {}
    offline = (experiment.get("model") or {}).get("offline") or {}
    return offline.get("alias") or str((experiment.get("settings") or {}).get("model"))


def plan(result: Result, options: Options) -> Job:
    dataset = ((result.manifest.get("experiment") or {}).get("dataset") or {}).get("name", "")
    row = f"{dataset} {result.stage}".strip()
    job, rerun = stage_job(result.folder, result.manifest, result.repo, options, row)
    where = os.path.relpath(result.folder, result.repo) if result.repo else str(result.folder)
    job.command = f"lsr-eval reproduce {where}"
    if rerun is not None:
        job.run = lambda out, work: {row: run_record(rerun(out / "run", work), metrics=True)}
    return job
