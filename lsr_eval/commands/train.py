"""``lsr-eval train CONFIG``: train a SPLADE model from a YAML recipe (docs/training.md)."""

from __future__ import annotations

import argparse
import os

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


def load(args: argparse.Namespace, cls):
    """The validated config, or None after printing it with ``--check``."""
    from lsr_eval.errors import ConfigError
    from lsr_eval.train.config import load_config

    if args.stop_after is not None and args.stop_after < 1:
        raise ConfigError(f"--stop-after {args.stop_after}: expected a step >= 1")
    cfg = load_config(args.config, args.overrides, cls)
    if args.check:
        import yaml

        print(yaml.safe_dump(cfg.to_dict(), sort_keys=False), end="")
        return None
    return cfg


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p)


def execute(args: argparse.Namespace, cls, fn) -> int:
    """Load and validate the config as ``cls``, run ``fn`` (train or middle_train), print one line (rank 0)."""
    cfg = load(args, cls)
    if cfg is None:
        return 0
    result = fn(cfg, resume=args.resume, overwrite=args.overwrite, stop_after=args.stop_after)
    if os.environ.get("RANK", "0") == "0":  # one line under torchrun
        print(f"{result.status}: step {result.step}; log {result.log_file}"
              + (f"; model {result.final_model}" if result.final_model else ""))
    return 0


def run(args: argparse.Namespace) -> int:
    from lsr_eval.train.config import SpladeTrainConfig
    from lsr_eval.train.run import train

    return execute(args, SpladeTrainConfig, train)
