"""The options of studies/bf16_fidelity/run.py: one SPLADE model on one dataset, run in fp32 then bf16."""

from __future__ import annotations

import argparse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

STAGE = "bench-bf16-fidelity"
PRECISIONS = ("fp32", "bf16")
TOP = 10


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/bf16_fidelity/run.py (``description``: its help's first paragraph)."""
    from lsr_eval.commands.options import add_device
    from lsr_eval.defaults import DEFAULT_SCALE

    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", default=str(REPO.parent / "shared/data/beir/scifact"),
                   help="BEIR folder or registry name")
    p.add_argument("--split", default="test")
    p.add_argument("--model", default="splade-tiny", help="model folder, hub id or offline alias")
    p.add_argument("--doc-top-k", type=int, default=1024, help="as the quickstart benchmark (Lucene's clause limit)")
    p.add_argument("--query-top-k", type=int, default=256)
    p.add_argument("--max-length-d", type=int, default=None, help="document max length (default: the model's)")
    p.add_argument("--max-length-q", type=int, default=None, help="query max length (default: the model's)")
    p.add_argument("--scale", type=float, default=float(DEFAULT_SCALE))
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    add_device(p)
    p.add_argument("--work-dir", type=Path, default=None, help="work folder (default: LSR_EVAL_WORK or work/)")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true")
    return p.parse_args(argv)
