"""The options of studies/train_step/run.py: the model, batch, steps, precision and device of the timed
training steps."""

from __future__ import annotations

import argparse
from pathlib import Path

from lsr_eval.commands.options import add_device, add_precision

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/train_step/run.py (``description``: its help, shown as written)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="splade-tiny")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "beir" / "scifact"))
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--queries", type=int, default=16)
    p.add_argument("--negatives", type=int, default=2)
    p.add_argument("--max-length-q", type=int, default=64)
    p.add_argument("--max-length-d", type=int, default=256)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    add_precision(p)
    add_device(p)
    return p.parse_args(argv)
