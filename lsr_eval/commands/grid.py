"""``lsr-eval grid CONFIGS...``: train a grid of configs, run after run here or as one SLURM array."""

from __future__ import annotations

import argparse
import sys

from lsr_eval.train import grid

NAME = "grid"
HELP = ("train a list of training configs: run after run on this node (torchrun when --nproc > 1) or as a SLURM "
        "array; finished runs are skipped, killed ones resume")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("configs", nargs="+", metavar="CONFIG",
                   help="training YAML files (e.g. pipelines/train/rescale-*.yaml)")
    p.add_argument("--launcher", choices=("local", "torchrun", "slurm"), default="local",
                   help="local: one run after the other on this node (torchrun when --nproc > 1); torchrun: always "
                        "under torchrun; slurm: one sbatch array task per pending run (default: local)")
    p.add_argument("--nproc", type=int, metavar="N",
                   help="processes per run (torchrun --nproc_per_node; default 1 locally, --gpus on SLURM)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a value in every config, as lsr-eval train --set (repeatable)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and the commands (or write and print the sbatch script) without running")
    p.add_argument("--estimate", action="store_true",
                   help="print the estimated GPU-hours of the grid (config steps x measured step time) and exit")
    p.add_argument("--step-time", type=float, metavar="SECONDS",
                   help="measured seconds per optimizer step for runs without a log of their own (--estimate)")
    s = p.add_argument_group("SLURM (--launcher slurm)")
    s.add_argument("--gpus", type=int, default=1, help="GPUs per task (--gres=gpu:N; 0 on CPU nodes; default 1)")
    s.add_argument("--time", help="time limit per task (--time, e.g. 24:00:00)")
    s.add_argument("--partition", help="partition (--partition)")
    s.add_argument("--cpus", type=int, help="CPUs per task (--cpus-per-task)")
    s.add_argument("--mem", help="memory per node (--mem, e.g. 64G)")
    s.add_argument("--job-name", default="lsr-grid", help="job name (default lsr-grid)")
    s.add_argument("--sbatch-option", dest="sbatch_extra", action="append", default=[], metavar="OPTION",
                   help="a further #SBATCH line, e.g. --sbatch-option=--account=proj (repeatable)")
    s.add_argument("--slurm-dir", default="work/grid",
                   help="where the script and the tasks' logs go (default work/grid)")
    s.add_argument("--wait", action="store_true", help="wait until every task of the array has ended (sbatch --wait)")


def _print_plan(runs) -> None:
    counts = grid.summary(runs)
    print(f"grid: {counts['runs']} runs: {counts.get('done', 0)} done, {counts.get('partial', 0)} to resume, "
          f"{counts.get('new', 0)} new")


def _report(configs, overrides) -> int:
    """Statuses after training; 1 when a run is not done."""
    runs = grid.plan(configs, overrides)
    missing = [r for r in runs if r.status != "done"]
    for r in runs:
        print(f"  {r.name}: {r.status} ({r.output_dir})")
    if missing:
        print(f"lsr-eval grid: {len(missing)} of {len(runs)} runs are not done: "
              + ", ".join(r.name for r in missing), file=sys.stderr)
        return 1
    print(f"grid: all {len(runs)} runs done")
    return 0


def run(args: argparse.Namespace) -> int:
    runs = grid.plan(args.configs, args.overrides)
    _print_plan(runs)
    if args.estimate:
        procs = args.nproc or (max(args.gpus, 1) if args.launcher == "slurm" else 1)
        print(grid.format_cost(grid.estimate_cost(runs, step_s=args.step_time, processes=procs)))
        return 0
    pending = [r for r in runs if r.status != "done"]
    if args.launcher in ("local", "torchrun"):
        nproc = args.nproc or 1
        if args.dry_run:
            for r in runs:
                print(f"  {r.name}: " + ("done, skipped" if r.status == "done" else
                                         " ".join(grid.train_command(r, nproc, torchrun=args.launcher == "torchrun"))))
            return 0
        grid.run_local(runs, nproc, torchrun=args.launcher == "torchrun")
        return _report(args.configs, args.overrides)

    if not pending:
        print("grid: nothing to submit")
        return 0
    options = grid.SlurmOptions(gpus=args.gpus, time=args.time, partition=args.partition, cpus=args.cpus,
                                mem=args.mem, nproc=args.nproc, job_name=args.job_name,
                                extra=tuple(args.sbatch_extra))
    script = grid.write_slurm_script(pending, options, args.slurm_dir, args.job_name)
    folder = script.parent
    if args.dry_run:
        print(f"script: {script} ({len(pending)} tasks)")
        print(script.read_text(encoding="utf-8"), end="")
        return 0
    job, rc = grid.submit(script, wait=args.wait)
    print(f"submitted job {job}: {len(pending)} array tasks ({script}); "
          f"task logs: {folder}/{args.job_name}-{job}_*.out")
    if not args.wait:
        return 0
    if rc:
        print(f"lsr-eval grid: job {job} ended with exit status {rc} (the highest of its tasks); see the task logs",
              file=sys.stderr)
    return _report(args.configs, args.overrides) or (1 if rc else 0)
