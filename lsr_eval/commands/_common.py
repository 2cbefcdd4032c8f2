"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Mapping, Sequence


def add_dataset_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DATASET",
                   help="registry name (scifact, dl19, msmarco-dev, ...), irds:<ir_datasets id>, or a BEIR folder")
    p.add_argument("--split", help="split of a BEIR folder (default: test)")
    p.add_argument("--topics", help="TREC topics TSV (qid<TAB>text) replacing the dataset's queries")
    p.add_argument("--qrels", help="qrels file (TREC or BEIR TSV) replacing the dataset's judgments")


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output folder (run.trec, metrics.json, manifest.json)")
    p.add_argument("--overwrite", action="store_true", help="replace an output folder holding another experiment")
    p.add_argument("--work-dir", help="cache for indexes and collections (default: $LSR_EVAL_WORK or ./work)")
    p.add_argument("--threads", type=int, default=2, help="Java threads for indexing and search (default: 2)")


def print_metric_rows(rows: Sequence[tuple[str, Mapping[str, float]]], names: Sequence[str],
                      min_width: int = 8) -> None:
    """An aligned table: a header, then one row per run, its label and each measure of ``names`` to four
    decimals."""
    width = max(min_width, *(len(label) for label, _ in rows))
    print(f"{'run':<{width}}  " + "  ".join(f"{n:>10}" for n in names))
    for label, metrics in rows:
        print(f"{label:<{width}}  " + "  ".join(f"{metrics[n]:>10.4f}" for n in names))


def print_metrics(label: str, metrics: Mapping[str, float]) -> None:
    """One run's metrics as a table row under its header."""
    print_metric_rows([(label, metrics)], list(metrics))


def stage_folder(path: str, sub: str) -> Path:
    """``path``, or its ``sub`` folder when it is an lsr-eval output folder holding one (export ``docs/``, index
    ``index/``), so that a command takes a stage's output folder as it is."""
    folder = Path(path)
    return folder / sub if (folder / sub).is_dir() else folder
