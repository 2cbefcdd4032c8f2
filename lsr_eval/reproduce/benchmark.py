"""A committed benchmark (``lsr-eval benchmark``) rerun from its manifest.

Design notes: docs/design.md."""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.benchmark.config import load_config
from lsr_eval.benchmark.run import _label, expand_datasets, run_benchmark
from lsr_eval.data.datasets import load_dataset
from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import read_manifest
from lsr_eval.reproduce.checks import Blocker, check_dataset, check_model, check_run_file, needs_gpu
from lsr_eval.reproduce.compare import COULD_NOT_RUN
from lsr_eval.reproduce.estimate import efficiency_seconds, runs_seconds
from lsr_eval.reproduce.jobs import Job, Options, Rows
from lsr_eval.reproduce.paths import PathMap, locate, search_bases
from lsr_eval.reproduce.records import run_record
from lsr_eval.reproduce.results import Result

#: Table columns of the significance tests (``<measure>_sig``, ``<measure>_p``, ``..._vs_<baseline>``).
SIGNIFICANCE_COLUMNS = ("_sig", "_p", "_sig_vs_", "_p_vs_")


def _cell(v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and math.isnan(v) else v


def rows(folder: Path) -> Rows:
    """The rows of the benchmark in ``folder``: table cells as ``table.<column>``, plus the run's record."""
    import pandas as pd

    table = pd.read_csv(folder / "table.csv", keep_default_na=True)
    out: Rows = {}
    for rec in table.to_dict("records"):
        dataset, system = str(rec["dataset"]), str(rec["system"])
        row = {f"table.{k}": _cell(v) for k, v in rec.items() if k not in ("dataset", "system")}
        row.update(run_record(folder / "runs" / system / dataset))
        out[f"{dataset} {system}"] = row
    return out


def _significance_key(key: str) -> bool:
    column = key[len("table."):] if key.startswith("table.") else ""
    return column in ("baseline", "baselines") or column.endswith(("_sig", "_p")) or any(
        s in column for s in SIGNIFICANCE_COLUMNS[2:])


def _run_manifests(folder: Path, system: str) -> list[dict[str, Any]]:
    return [m for d in sorted((folder / "runs" / system).glob("*")) if (m := read_manifest(d)) is not None]


def _pinned_precision(manifests: list[dict[str, Any]]) -> str | None:
    """The precision a SPLADE system's runs resolved to (``bf16`` or ``fp32``), from their recorded settings."""
    for m in manifests:
        settings = (m.get("experiment") or {}).get("settings") or {}
        if "bf16" in settings:
            return settings.get("precision") or ("bf16" if settings["bf16"] else "fp32")
    return None


def _yaml_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The benchmark YAML of a recorded configuration (the manifest's ``config``: every system with its sweep points
    expanded; the YAML lists the declared systems and the sweeps)."""
    datasets = [{k: v for k, v in d.items() if v not in (None, [], ())} for d in config["datasets"]]
    systems = [{"name": s["name"], "kind": s["kind"], **(s.get("params") or {})}
               for s in config["systems"] if not s.get("sweep")]
    out: dict[str, Any] = {"name": config["name"], "out": config["out"], "datasets": datasets, "systems": systems}
    sweeps = [{k: v for k, v in w.items() if v not in (None, [], ())} for w in config.get("sweep") or []]
    if sweeps:
        out["sweep"] = sweeps
    fusion = []
    for f in config.get("fusion") or []:
        entry = {k: v for k, v in f.items() if v not in (None, {}, False) or k == "tune"}
        fusion.append(entry)
    if fusion:
        out["fusion"] = fusion
    for key in ("significance", "efficiency"):
        if config.get(key):
            out[key] = {k: v for k, v in config[key].items() if v not in (None, [], ())}
    return out


def _located(config: dict[str, Any], result: Result, options: Options, folder: Path) -> dict[str, Any]:
    """The recorded configuration with its paths as on this machine and SPLADE precisions pinned."""
    bases = search_bases(result.repo)
    config = {**config, "datasets": [{**d, "spec": locate(d["spec"], bases, options.paths)}
                                     for d in config["datasets"]]}
    systems = []
    for s in config["systems"]:
        params = dict(s.get("params") or {})
        if s["kind"] == "run":
            params["path"] = locate(params["path"], bases, options.paths)
        if s["kind"] == "splade":
            for key in ("model", "query_model"):
                if params.get(key):
                    params[key] = locate(params[key], bases, options.paths)
            pinned = _pinned_precision(_run_manifests(folder, s["name"]))
            if pinned:
                params.pop("bf16", None)
                params["precision"] = pinned
        systems.append({**s, "params": params})
    return {**config, "systems": systems}


def _load(config: dict[str, Any]):
    """Validate a configuration the way ``lsr-eval benchmark`` does (through its YAML); returns it and the YAML."""
    import yaml

    text = yaml.safe_dump(_yaml_config(config), sort_keys=False, allow_unicode=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "benchmark.yaml"
        path.write_text(text, encoding="utf-8")
        return load_config(path), text


def _blocked_systems(cfg, folder: Path) -> dict[str, Blocker]:
    """Systems that cannot run here: missing or other model or run file, or a GPU asked for (``cfg``'s paths are
    already mapped)."""
    blocked: dict[str, Blocker] = {}
    unmapped = PathMap()
    for s in cfg.all_systems():
        manifests = _run_manifests(folder, s.name)
        b = None
        if s.kind == "run":
            _, b = check_run_file(s.params["path"], manifests[0].get("run") if manifests else None, unmapped)
        elif s.kind == "splade":
            recorded = ((manifests[0].get("experiment") or {}).get("model")) if manifests else None
            _, b = check_model(s.params["model"], recorded, unmapped)
            if b is None and s.params.get("query_model") and s.params["query_model"] != "idf":  # idf: the corpus
                _, b = check_model(s.params["query_model"], None, unmapped)
            b = b or needs_gpu(s.params.get("device"))
        if b is not None:
            blocked[s.name] = b
    return blocked


def _check_datasets(cfg, folder: Path, recorded: Mapping[str, Any]) -> tuple[dict[str, Blocker], dict[str, Any],
                                                                              list[str]]:
    """(blocked dataset labels, the runnable entries (groups expanded) by label, load errors of datasets whose label
    is unknown)."""
    blocked: dict[str, Blocker] = {}
    runnable: dict[str, Any] = {}
    errors: list[str] = []
    tuned = any(f.tune_on_split for f in cfg.fusion)
    for entry in expand_datasets(cfg.datasets):
        try:
            dataset = load_dataset(entry.spec, entry.split)
        except LsrEvalError as e:
            if entry.label:
                blocked[entry.label] = Blocker(COULD_NOT_RUN, f"missing data: {e}")
            else:
                errors.append(str(e))
            continue
        label = _label(entry, dataset)
        manifests = [m for d in sorted((folder / "runs").glob(f"*/{label}")) if (m := read_manifest(d))]
        b = check_dataset(dataset, recorded.get(label), manifests, f"dataset {label} ({entry.spec})")
        if b is None and entry.tune_split and tuned:
            try:
                tune = load_dataset(entry.spec, entry.tune_split)
                b = check_dataset(tune, recorded.get(f"{label}@{entry.tune_split}"), [],
                                  f"tune split {entry.tune_split} of {label}") if recorded else None
            except LsrEvalError as e:
                b = Blocker(COULD_NOT_RUN, f"missing data: tune split {entry.tune_split}: {e}")
        if b is not None:
            blocked[label] = b
        else:
            runnable[label] = entry
    return blocked, runnable, errors


def _command(result: Result) -> str:
    where = os.path.relpath(result.folder, result.repo) if result.repo else str(result.folder)
    return f"lsr-eval reproduce {where}"


def plan(result: Result, options: Options) -> Job:
    folder = result.folder
    committed = rows(folder)
    job = Job(command=_command(result), rows=committed, kind="benchmark")
    try:
        cfg, text = _load(_located(result.manifest["config"], result, options, folder))
    except (LsrEvalError, KeyError, TypeError) as e:
        job.blocked = {r: Blocker(COULD_NOT_RUN, f"the recorded configuration does not load: {e}") for r in committed}
        return job
    systems = _blocked_systems(cfg, folder)
    datasets, runnable, errors = _check_datasets(cfg, folder, result.manifest.get("data") or {})
    fusions = {f.name: Blocker(COULD_NOT_RUN, f"inputs could not run: {', '.join(r for r in f.runs if r in systems)}")
               for f in cfg.fusion if any(r in systems for r in f.runs)}
    reduced_labels: set[str] = set()
    for row in committed:
        label, _, system = row.partition(" ")
        b = datasets.get(label) or systems.get(system) or fusions.get(system)
        if b is None and label not in runnable:
            b = Blocker(COULD_NOT_RUN, "missing data: " + ("; ".join(errors) or f"no dataset labelled {label}"))
        if b is not None:
            job.blocked[row] = b
            reduced_labels.add(label)
    if not runnable:
        return job
    for row in committed:
        if row.partition(" ")[0] in reduced_labels and row not in job.blocked:
            job.skip[row] = {k for k in committed[row] if _significance_key(k)}
    if job.skip:
        job.notes.append("significance not compared: the rerun lacks systems that could not run")
    keep = [s for s in cfg.systems if s.name not in systems]
    keep_sweeps = tuple(w for w in cfg.sweep if w.system not in systems)
    fusion = tuple(f for f in cfg.fusion if f.name not in fusions)
    sig = cfg.significance
    if sig is not None:
        baselines = tuple(b for b in sig.baselines if b not in systems and b not in fusions)
        sig = dataclasses.replace(sig, baseline=baselines if len(baselines) > 1 else baselines[0]) if baselines \
            else None
    entries = tuple(runnable.values())
    reduced = dataclasses.replace(cfg, systems=tuple(keep), sweep=keep_sweeps, fusion=fusion, significance=sig,
                                  datasets=entries)
    job.estimate_s = runs_seconds((m for s in reduced.all_systems() for m in _run_manifests(folder, s.name)),
                                  options.work_dir) + sum(
        efficiency_seconds(d) for s in reduced.all_systems() for d in (folder / "runs" / s.name).glob("*"))

    def run(out: Path, work: Path) -> Rows:
        (out / "benchmark.yaml").write_text(text, encoding="utf-8")
        run_benchmark(dataclasses.replace(reduced, out=str(out / "result")), work, threads=options.threads,
                      runs_dir=out / "runs")
        return rows(out / "result")

    job.run = run
    return job
