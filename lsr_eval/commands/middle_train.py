"""``lsr-eval middle-train CONFIG``: MLM + FLOPS middle training of a backbone (docs/training.md)."""

from __future__ import annotations

import argparse
import os

from lsr_eval.commands.train import add_training_arguments, load

NAME = "middle-train"
HELP = "middle-train a masked LM with MLM + FLOPS on its SPLADE pooling (Lassance & Clinchant 2022)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p)


def run(args: argparse.Namespace) -> int:
    from lsr_eval.train.config import MiddleTrainConfig
    from lsr_eval.train.run import middle_train

    cfg = load(args, MiddleTrainConfig)
    if cfg is None:
        return 0
    result = middle_train(cfg, resume=args.resume, overwrite=args.overwrite, stop_after=args.stop_after)
    if os.environ.get("RANK", "0") == "0":  # one line under torchrun
        print(f"{result.status}: step {result.step}; log {result.log_file}"
              + (f"; model {result.final_model}" if result.final_model else ""))
    return 0
