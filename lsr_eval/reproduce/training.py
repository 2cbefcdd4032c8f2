"""A committed training run (``lsr-eval train``: ``results/train/<run>/``, its dev evaluations in ``dev-*/``).

Training is long (the committed splade-tiny run took ~56 minutes on 2 cores), so by default only its saved
evaluation is rerun and checked: each ``dev-*`` run (:mod:`lsr_eval.reproduce.stage`) with the checkpoint it
recorded (kept in the git-ignored work folder, so on a fresh clone "could not run: missing model"). With ``--train``
the training reruns from the recorded configuration and seed (its data paths mapped and checked, its outputs in
fresh folders), its log is compared step by step, and the dev runs that evaluated its checkpoint evaluate the new
one.

Rows: ``training`` (status, steps, data counts and every logged value of every step; step times are timings) and
one per ``dev-*`` folder.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import read_manifest
from lsr_eval.reproduce.checks import Blocker, check_model
from lsr_eval.reproduce.compare import COULD_NOT_RUN, flatten
from lsr_eval.reproduce.estimate import recorded_seconds
from lsr_eval.reproduce.jobs import Job, Options, Rows
from lsr_eval.reproduce.records import run_record
from lsr_eval.reproduce.results import Result
from lsr_eval.reproduce.stage import stage_job
from lsr_eval.train.config import SpladeTrainConfig, load_config

TRAINING = "training"
LOG = "log.jsonl"
#: Manifest sections of a training run that are its results.
SECTIONS = ("status", "steps", "data", "head_norm_before")


def log_row(folder: Path) -> dict[str, Any]:
    """The ``training`` row of the run in ``folder``: its manifest's results and every logged step."""
    manifest = read_manifest(folder) or {}
    row = flatten({k: manifest[k] for k in SECTIONS if k in manifest}, "train.")
    path = folder / LOG
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        if line.strip():
            record = json.loads(line)
            row.update(flatten({k: v for k, v in record.items() if k != "step"}, f"log.step{record.get('step')}."))
    return row


def _dev_folders(folder: Path) -> list[Path]:
    return sorted(d for d in folder.iterdir() if d.is_dir() and (d / "manifest.json").is_file())


def _data_blocker(config: Mapping[str, Any], options: Options) -> Blocker | None:
    """The training data and starting model of ``config`` exist here (after ``--path-map``)."""
    data, model = config.get("data") or {}, config.get("model") or {}
    files = [data.get("dataset") if data.get("source", "dataset") == "dataset" else None, data.get("teacher_scores"),
             *(data.get("negatives") if isinstance(data.get("negatives"), list) else [data.get("negatives")])]
    missing = [options.paths.here(f) for f in files if f and not Path(options.paths.here(str(f))).exists()]
    if missing:
        return Blocker(COULD_NOT_RUN, f"missing data: {', '.join(missing)} (made by the steps before training, "
                                      "see pipelines/finetune_splade_tiny.sh; --path-map points to copies)")
    for key in ("path", "query"):
        if model.get(key):
            _, b = check_model(model[key], None, options.paths)
            if b is not None:
                return b
    return None


def _mapped(config: dict[str, Any], options: Options) -> dict[str, Any]:
    config = json.loads(json.dumps(config))
    data, model = config.get("data") or {}, config.get("model") or {}
    for section, key in ((data, "dataset"), (data, "teacher_scores"), (model, "path"), (model, "query")):
        if isinstance(section.get(key), str):
            section[key] = options.paths.here(section[key])
    if isinstance(data.get("negatives"), list):
        data["negatives"] = [options.paths.here(str(n)) for n in data["negatives"]]
    elif isinstance(data.get("negatives"), str):
        data["negatives"] = options.paths.here(data["negatives"])
    return config


def _train(config: dict[str, Any], out: Path, work: Path, name: str) -> Path:
    """Train as ``config`` says into ``out`` (log, manifest) and ``work`` (checkpoints); the final model's folder."""
    import yaml

    from lsr_eval.train.run import train

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        cfg = load_config(path, [f"output.dir={out}", f"output.model_dir={work / 'train' / name}"],
                          SpladeTrainConfig)
    result = train(cfg, overwrite=True)
    if result.final_model is None:
        raise LsrEvalError(f"training stopped at step {result.step} ({result.status}) without a final model")
    return Path(result.final_model)


def plan(result: Result, options: Options) -> Job:
    folder, manifest = result.folder, result.manifest
    where = os.path.relpath(folder, result.repo) if result.repo else str(folder)
    committed: Rows = {TRAINING: log_row(folder)}
    trained_model = str((manifest.get("outputs") or {}).get("model") or "")
    devs = []
    for d in _dev_folders(folder):
        dev = read_manifest(d) or {}
        evaluates_training = bool(trained_model) and ((dev.get("experiment") or {}).get("settings") or {}).get(
            "model") == trained_model
        devs.append((d, dev, evaluates_training))
        committed[d.name] = run_record(d, metrics=True)
    job = Job(command=f"lsr-eval reproduce {where}" + (" --train" if options.train else ""), rows=committed,
              kind="training")
    elapsed = recorded_seconds(manifest) or 0.0
    config = _mapped(dict(manifest.get("config") or {}), options)
    if not options.train:
        job.blocked[TRAINING] = Blocker(COULD_NOT_RUN, f"training reruns only with --train (recorded "
                                                       f"{elapsed / 60:.0f} min); its saved evaluation is checked")
    elif not config:
        job.blocked[TRAINING] = Blocker(COULD_NOT_RUN, "the manifest records no training configuration")
    elif (b := _data_blocker(config, options)) is not None:
        job.blocked[TRAINING] = b
    training = TRAINING not in job.blocked
    reruns = {}
    estimate = elapsed if training else 0.0
    for d, dev, evaluates_training in devs:
        if evaluates_training and training:
            reruns[d.name] = (dev, True)  # checked and run after training, with the new checkpoint
            continue
        sub, rerun = stage_job(d, dev, result.repo, options, d.name)
        if evaluates_training and d.name in sub.blocked:
            b = sub.blocked[d.name]
            sub.blocked[d.name] = Blocker(b.status, f"{b.reason} (this training's checkpoint: rerun with --train)")
        job.blocked.update(sub.blocked)
        if rerun is not None:
            reruns[d.name] = (rerun, False)
        estimate += sub.estimate_s or 0.0
    job.estimate_s = estimate
    if not training and not reruns:
        return job

    def run(out: Path, work: Path) -> Rows:
        new: Rows = {}
        model = None
        if training:
            model = _train(config, out / "train", work, str(manifest.get("experiment", {}).get("name") or "run"))
            new[TRAINING] = log_row(out / "train")
        for name, (rerun, after_training) in reruns.items():
            if after_training:
                sub, rerun = stage_job(folder / name, rerun, result.repo, options, name, model=str(model))
                if rerun is None:
                    continue  # its row stays unmatched: "the rerun made no such row"
            new[name] = run_record(rerun(out / name, work), metrics=True)
        return new

    job.run = run
    return job
