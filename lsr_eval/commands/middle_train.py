"""``lsr-eval middle-train CONFIG``: MLM + FLOPS middle training of a backbone (docs/training.md)."""

from __future__ import annotations

import argparse

from lsr_eval.commands.train import add_training_arguments, execute
from lsr_eval.train.config import MiddleTrainConfig

NAME = "middle-train"
HELP = "middle-train a masked LM with MLM + FLOPS on its SPLADE pooling (Lassance & Clinchant 2022)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_training_arguments(p)


def run(args: argparse.Namespace) -> int:
    from lsr_eval.train.run import middle_train

    return execute(args, MiddleTrainConfig, middle_train)
