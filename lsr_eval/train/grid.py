"""Training grids: a list of ``lsr-eval train`` configs run after run on this node, or as one SLURM array.

Each run is the ordinary ``lsr-eval train CONFIG --resume`` command (under ``torchrun --standalone
--nproc_per_node N`` when N > 1), so a grid run is bit for bit the run a user would start by hand. A run whose
manifest says ``done`` (same config, final model present) is skipped; any other run is started with ``--resume``,
which continues from its newest checkpoint or starts at step 0. On SLURM the pending runs become the tasks of one
``sbatch --array`` script (task i runs run i); SLURM does the scheduling.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.manifest import read_manifest
from lsr_eval.settings import Setting, Validated, check, setting
from lsr_eval.train.config import SpladeTrainConfig, load_configs, result_keys

Status = Literal["done", "partial", "new"]


#: Training processes per run (torchrun's --nproc-per-node; one per GPU).
PROCESSES = Setting(help="training processes per run (torchrun; one per GPU)", ge=1, unit="processes")
#: A training step's time, when no run of the grid has measured one.
STEP_TIME = Setting(help="seconds per training step, for runs without a measured one", gt=0, unit="seconds")


@dataclass
class GridRun:
    """One training run of a grid: a config file and the ``--set`` overrides it is run with."""

    config: Path
    overrides: list[str]
    name: str
    output_dir: Path
    model_dir: Path
    steps: int
    batch_size: int
    status: Status
    step_s: float | None = None          # median logged step time of this run, if it has a log
    world_size: int | None = None        # processes of the logged run
    shape: tuple = ()                     # what a step's time depends on: encoders, batch, lengths, negatives

    @property
    def steps_done(self) -> int:
        """Optimizer steps already in the log (all of them for a finished run)."""
        if self.status == "done":
            return self.steps
        return _last_logged_step(self.output_dir / "log.jsonl")


def _last_logged_step(log_file: Path) -> int:
    if not log_file.is_file():
        return 0
    last = 0
    for line in log_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            last = max(last, int(json.loads(line).get("step", 0)))
    return last


def _median_step_time(log_file: Path) -> float | None:
    """The median ``step_time`` of ``log.jsonl`` (the median: the first steps carry warm-up)."""
    if not log_file.is_file():
        return None
    times = [r["step_time"] for line in log_file.read_text(encoding="utf-8").splitlines() if line.strip()
             if isinstance((r := json.loads(line)).get("step_time"), (int, float))]
    return float(statistics.median(times)) if times else None


def runs_of_config(path: Path, overrides: list[str]) -> list[tuple[Any, list[str]]]:
    """The runs one config file stands for, each as (validated config, the ``--set`` overrides that select it): one,
    or one per seed of a ``seeds:`` list, selected by ``seeds=[N]`` (the grid's plan, array tasks, skipping and
    resuming work per entry)."""
    configs = load_configs(path, overrides, SpladeTrainConfig)
    if len(configs) == 1:
        return [(configs[0], list(overrides))]
    return [(c, [*overrides, f"seeds=[{c.train.seed}]"]) for c in configs]


def plan(configs: list[str | os.PathLike], overrides: list[str] | None = None) -> list[GridRun]:
    """Load and validate every config (with ``overrides``) and say where each run stands.

    Two runs writing the same output folder are refused (they would overwrite each other).
    """
    from lsr_eval.train.trainer import FINAL_MODEL

    if not configs:
        raise ConfigError("no training config given: name one or more YAML files (e.g. pipelines/train/rescale-*.yaml)")
    runs: list[GridRun] = []
    seen: dict[Path, Path] = {}
    for path in map(Path, configs):
        if not path.is_file():
            raise InputError(f"{path}: no such training config")
        for cfg, run_overrides in runs_of_config(path, list(overrides or [])):
            out, model_dir = Path(cfg.output.dir), Path(cfg.output.model_dir)
            key = out.resolve()
            if key in seen:
                raise ConfigError(f"{path} and {seen[key]} both write {out}: give each run its own output.dir")
            seen[key] = path
            manifest = read_manifest(out) if out.is_dir() else None
            same = manifest is not None and manifest.get("experiment", {}).get("config") == json.loads(
                json.dumps(dict(sorted(result_keys(cfg.to_dict()).items())), default=str))
            if same and manifest.get("status") == "done" and (model_dir / FINAL_MODEL).exists():
                status: Status = "done"
            elif (out / "log.jsonl").exists() or (model_dir / "checkpoints").is_dir():
                status = "partial"
            else:
                status = "new"
            runs.append(GridRun(config=path.resolve(), overrides=run_overrides, name=cfg.name or path.stem,
                                output_dir=out, model_dir=model_dir, steps=cfg.train.steps,
                                batch_size=cfg.train.batch_size, status=status,
                                step_s=_median_step_time(out / "log.jsonl"),
                                world_size=(manifest or {}).get("world_size"), shape=_shape(cfg)))
    return runs


def _shape(cfg) -> tuple:
    """The settings a step's time depends on (runs that differ only in k, lambdas or seeds share it)."""
    query = cfg.model.query
    return (cfg.model.path, None if query is None else (query.path, str(query.build)), cfg.train.batch_size,
            cfg.train.grad_accum, cfg.model.max_length_q, cfg.model.max_length_d, cfg.data.n_negatives,
            cfg.train.bf16)


def find_torchrun() -> str:
    """``torchrun`` beside the running interpreter (a virtual environment need not be on PATH), else on PATH."""
    beside = Path(sys.executable).with_name("torchrun")
    found = str(beside) if beside.is_file() else shutil.which("torchrun")
    if found is None:
        raise InputError(f"torchrun is neither beside {sys.executable} nor on PATH: install torch's console scripts "
                         f"or run with --nproc 1")
    return found


def train_command(run: GridRun, nproc: int = 1, *, torchrun: bool = False) -> list[str]:
    """The command that trains (or resumes) ``run``: ``lsr-eval train --resume``, under torchrun when ``nproc`` > 1
    or ``torchrun`` is asked."""
    check("nproc", nproc, int, PROCESSES)
    train = ["-m", "lsr_eval.cli", "train", str(run.config), "--resume"]
    for item in run.overrides:
        train += ["--set", item]
    if nproc > 1 or torchrun:
        return [find_torchrun(), "--standalone", "--nproc_per_node", str(nproc)] + train
    return [sys.executable] + train


@dataclass
class LocalResult:
    """What :func:`run_local` did with each run: ``skipped`` (done before), ``trained`` or ``failed``."""

    outcome: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        return [name for name, what in self.outcome.items() if what.startswith("failed")]


def run_local(runs: list[GridRun], nproc: int = 1, *, torchrun: bool = False, env: dict[str, str] | None = None,
              echo=print) -> LocalResult:
    """Train the runs one after the other on this node; a failed run is reported and the next one starts."""
    result = LocalResult()
    for i, run in enumerate(runs, 1):
        if run.status == "done":
            echo(f"[{i}/{len(runs)}] {run.name}: done before, skipped ({run.output_dir})")
            result.outcome[run.name] = "skipped"
            continue
        cmd = train_command(run, nproc, torchrun=torchrun)
        echo(f"[{i}/{len(runs)}] {run.name}: {'resuming' if run.status == 'partial' else 'training'}: "
             f"{shlex.join(cmd)}")
        rc = subprocess.run(cmd, env=env).returncode
        result.outcome[run.name] = "trained" if rc == 0 else f"failed (exit {rc})"
        if rc:
            echo(f"[{i}/{len(runs)}] {run.name}: failed (exit {rc}); continuing with the next run")
    return result


@dataclass(frozen=True)
class SlurmOptions(Validated):
    """Resources of each array task. ``gpus`` per task (one torchrun process each when > 1; ``nproc`` overrides
    the process count, e.g. on CPU nodes); ``extra``: further ``#SBATCH`` options, as written."""

    gpus: int = setting(1, ge=0, help="GPUs per array task")
    time: str | None = None
    partition: str | None = None
    cpus: int | None = setting(None, ge=1, help="CPUs per array task")
    mem: str | None = None
    nproc: int | None = setting(None, like=PROCESSES)
    job_name: str = "lsr-grid"
    extra: tuple[str, ...] = ()

    def processes(self) -> int:
        return self.nproc if self.nproc is not None else max(self.gpus, 1)


def slurm_script(runs: list[GridRun], options: SlurmOptions, *, log_dir: Path, workdir: Path | None = None,
                 python_env: dict[str, str] | None = None) -> str:
    """The ``sbatch`` script of ``runs``: one array task per run, ``SLURM_ARRAY_TASK_ID`` picks the command.

    ``workdir``: where each task runs (relative config paths such as ``results/train/...`` resolve there;
    default: the current folder). ``python_env``: variables exported before the command (the batch environment
    is otherwise the submitter's, sbatch's default ``--export=ALL``).
    """
    if not runs:
        raise ConfigError("no run to submit")
    lines = ["#!/bin/bash", f"#SBATCH --job-name={options.job_name}", f"#SBATCH --array=0-{len(runs) - 1}",
             "#SBATCH --nodes=1", "#SBATCH --ntasks=1", f"#SBATCH --output={log_dir}/%x-%A_%a.out"]
    lines += [f"#SBATCH --{flag}{value}" for flag, value in (
        ("gres=gpu:", options.gpus), ("cpus-per-task=", options.cpus), ("time=", options.time),
        ("partition=", options.partition), ("mem=", options.mem)) if value]
    lines += [f"#SBATCH {x}" for x in options.extra]
    lines += ["# written by lsr-eval grid: one task per training run (lsr-eval train CONFIG --resume)",
              "set -euo pipefail", f"cd {shlex.quote(str(workdir or Path.cwd()))}"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted((python_env or {}).items())]
    lines.append('case "${SLURM_ARRAY_TASK_ID:?run this script with sbatch}" in')
    for i, run in enumerate(runs):
        lines.append(f"  {i}) exec {shlex.join(train_command(run, options.processes()))} ;;  # {run.name}")
    lines += ['  *) echo "no run for array task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;', "esac", ""]
    return "\n".join(lines)


def _sbatch() -> str:
    found = shutil.which("sbatch")
    if found is None:
        raise InputError("sbatch is not on PATH: run lsr-eval grid on a SLURM login node, or use --launcher local")
    return found


def write_slurm_script(runs: list[GridRun], options: SlurmOptions, folder: str | os.PathLike,
                       job_name: str) -> Path:
    """``<folder>/<job_name>.sbatch`` (:func:`slurm_script`; its task logs go to ``folder``), executable, run from
    the current folder; returns its path."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"{job_name}.sbatch"
    script.write_text(slurm_script(runs, options, log_dir=folder, workdir=Path.cwd()), encoding="utf-8")
    os.chmod(script, 0o755)
    return script


def submit(script: Path, *, wait: bool = False, env: dict[str, str] | None = None) -> tuple[str, int]:
    """``sbatch [--wait] SCRIPT`` -> (job id, exit status). With ``wait`` the status is the highest exit code of
    the array's tasks (sbatch's rule), else 0 once submitted."""
    cmd = [_sbatch(), "--parsable"] + (["--wait"] if wait else []) + [str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    job = proc.stdout.strip().split(";")[0].splitlines()[0] if proc.stdout.strip() else ""
    if not job:
        raise InputError(f"sbatch {script} failed (exit {proc.returncode}): "
                         f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'no output'}")
    return job, proc.returncode


# -- cost -------------------------------------------------------------------------------------------------------
@dataclass
class CostRow:
    """The estimated cost of one run: ``steps`` x ``step_s`` x ``processes`` device-seconds."""

    name: str
    steps: int
    steps_left: int
    step_s: float | None
    source: str                  # where step_s comes from: "measured: <log>", "given (--step-time)", "unknown"
    processes: int

    @property
    def gpu_hours(self) -> float | None:
        return None if self.step_s is None else self.steps * self.step_s * self.processes / 3600

    @property
    def gpu_hours_left(self) -> float | None:
        return None if self.step_s is None else self.steps_left * self.step_s * self.processes / 3600


def estimate_cost(runs: list[GridRun], *, step_s: float | None = None, processes: int = 1) -> list[CostRow]:
    """GPU-hours per run, an estimate: the config's steps times a measured step time: the run's own ``log.jsonl``
    median with the process count it ran with, else that of a run of the grid with the same shape (backbone,
    batch, lengths, negatives: e.g. another k of the same backbone), else ``step_s`` on ``processes`` devices."""
    check("step_time", step_s, float | None, STEP_TIME)
    measured = {run.shape: run for run in runs if run.step_s is not None}
    rows = []
    for run in runs:
        left = max(run.steps - run.steps_done, 0)
        twin = run if run.step_s is not None else measured.get(run.shape)
        if twin is not None:
            where = (f"measured: {twin.output_dir / 'log.jsonl'}"
                     + ("" if twin is run else f" ({twin.name}, same shape)"))
            rows.append(CostRow(run.name, run.steps, left, twin.step_s, where, twin.world_size or processes))
        else:
            rows.append(CostRow(run.name, run.steps, left, step_s, "given (--step-time)" if step_s else "unknown",
                                processes))
    return rows


def format_cost(rows: list[CostRow]) -> str:
    """The estimate as a table, labelled as an estimate, with the total of the runs whose step time is known."""
    width = max([len(r.name) for r in rows] + [3])
    out = ["GPU-hours (estimate: config steps x measured step time x processes; not a measurement)",
           f"{'run':<{width}}  {'steps':>8}  {'left':>8}  {'step_s':>8}  {'procs':>5}  {'GPU-h':>8}  {'left GPU-h':>10}"
           "  step time from"]
    def num(v: float | None) -> str:
        return "?" if v is None else f"{v:.3f}"

    for r in rows:
        out.append(f"{r.name:<{width}}  {r.steps:>8}  {r.steps_left:>8}  {num(r.step_s):>8}  {r.processes:>5}  "
                   f"{num(r.gpu_hours):>8}  {num(r.gpu_hours_left):>10}  {r.source}")
    known = [r for r in rows if r.gpu_hours is not None]
    total = sum(r.gpu_hours for r in known)
    left = sum(r.gpu_hours_left for r in known)
    out.append(f"total (estimate): {total:.3f} GPU-h, {left:.3f} GPU-h left, over {len(known)} of {len(rows)} runs"
               + ("" if len(known) == len(rows) else
                  "; the others have no step time: pass --step-time SECONDS (e.g. from lsr-eval train CONFIG "
                  "--stop-after 20, whose log this estimate then reads)"))
    return "\n".join(out)


def summary(runs: list[GridRun]) -> dict[str, Any]:
    """Counts of the runs by status (what goes in and where it stands)."""
    counts: dict[str, int] = {"runs": len(runs)}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    return counts
