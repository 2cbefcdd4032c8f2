"""The options of studies/query_filter_bounds/run.py: the model, queries and cluster settings of the bounds."""

from __future__ import annotations

import argparse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/query_filter_bounds/run.py (``description``: its help's first paragraph)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", default=str(REPO.parent / "shared/data/beir/scifact"))
    p.add_argument("--split", default="test")
    p.add_argument("--model", default="splade-tiny")
    p.add_argument("--max-length-q", type=int, default=64)
    p.add_argument("--clusters", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--groups", type=int, nargs="+", default=[2, 8])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work-dir", default=None, help="cache of the ONNX export (default: LSR_EVAL_WORK or work/)")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true")
    return p.parse_args(argv)
