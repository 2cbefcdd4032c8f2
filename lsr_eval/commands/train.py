"""``lsr-eval train CONFIG``: train a SPLADE model from a YAML recipe (docs/training.md)."""

from __future__ import annotations

import argparse
import os

from lsr_eval.settings import check
from lsr_eval.train.config import STOP_AFTER, SpladeTrainConfig, load_configs

NAME = "train"
HELP = "train a SPLADE model from a YAML config (single process or under torchrun)"


def add_training_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments shared with ``middle-train``."""
    p.add_argument("config", metavar="CONFIG", help="YAML config (see pipelines/train/)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.steps=100 (value parsed as YAML; repeatable)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in output.model_dir")
    p.add_argument("--overwrite", action="store_true",
                   help="start again, removing the checkpoints, final model and log of a previous run")
    p.add_argument("--stop-after", type=int, metavar="STEP",
                   help="stop after this step with a checkpoint (resume later with --resume)")
    p.add_argument("--check", action="store_true", help="validate the config, print it, and exit")


def load(args: argparse.Namespace, cls) -> list:
    """The validated configs, one per seed of a ``seeds`` list (none after printing them with ``--check``)."""
    check("stop_after", args.stop_after, int | None, STOP_AFTER)
    configs = load_configs(args.config, args.overrides, cls)
    if args.check:
        import yaml

        print(yaml.safe_dump_all([cfg.to_dict() for cfg in configs], sort_keys=False), end="")
        for cfg in configs:
            reg = getattr(cfg, "regularizer", None)
            if reg is not None and reg.naver_sum:   # a YAML comment: the output stays one YAML document per seed
                print(f"# {cfg.name or cfg.output.dir}: regularizer.naver_sum: the document regulariser is counted "
                      f"{reg.doc_count} times (naver/splade's sum): effective lambda_d {reg.effective_lambda_d:g} "
                      f"= {reg.doc_count} x {reg.lambda_d:g}")
        return []
    return configs


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p)


def execute(args: argparse.Namespace, cls, fn) -> int:
    """Load and validate the config as ``cls`` (every seed's before any is trained), run ``fn`` (train or
    middle_train) on each seed's in turn, print one line per run (rank 0)."""
    for cfg in load(args, cls):
        result = fn(cfg, resume=args.resume, overwrite=args.overwrite, stop_after=args.stop_after)
        if os.environ.get("RANK", "0") == "0":  # one line under torchrun
            print(f"{cfg.name or cfg.output.dir}: {result.status}: step {result.step}; log {result.log_file}"
                  + (f"; model {result.final_model}" if result.final_model else ""))
    return 0


def run(args: argparse.Namespace) -> int:
    from lsr_eval.train.run import train

    return execute(args, SpladeTrainConfig, train)
