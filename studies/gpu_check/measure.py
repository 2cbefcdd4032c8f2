"""The options of studies/gpu_check/run.py: the models, precisions and device it checks."""

from __future__ import annotations

import argparse
from pathlib import Path

from lsr_eval.commands.options import add_device, add_precision

REPO = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/gpu_check/run.py (``description``: its help's first paragraph)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "beir" / "scifact"),
                   help="BEIR folder whose corpus.jsonl gives the documents")
    p.add_argument("--model", default="splade-tiny", help="model folder, hub id or offline alias")
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=32)
    add_device(p, "cuda", "what this check is for")
    p.add_argument("--reference-device", default="cpu", help="where the fp32 reference is encoded (default cpu)")
    add_precision(p, flag="--precisions", nargs="+", default=["fp32", "bf16"],
                  default_text="fp32 bf16, both compared with the reference", note="; on --device")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.docs < 1 or args.batch_size < 1:
        p.error("--docs and --batch-size must be >= 1")
    return args
