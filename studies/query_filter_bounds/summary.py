"""The query-filter bounds benchmark's summary (studies/query_filter_bounds/run.py), which
tests/integration/test_committed_results.py makes again from a committed ``bounds.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studies.query_filter_bounds.measure import parse_args


def summary_md(result: dict[str, Any], model: str, split: str) -> str:
    lines = [f"# Exact query-head filters: {model}, {result['queries']} {split} queries "
             f"(mean {result['mean_tokens']:.1f} tokens, {result['positive_mean']:.1f} positive ids of "
             f"{result['vocab']})", "",
             "| bound | ids kept (mean) | ids kept (max) | first-pass multiply-adds | positive ids missed |",
             "|---|---|---|---|---|"]
    for name, b in result["bounds"].items():
        lines.append(f"| {name} | {b['kept_mean']:.0f} | {b['kept_max']} "
                     f"| {b['first_pass_multiply_adds'] / 1e6:.1f} M | {b['missed_positive_ids']} |")
    return "\n".join(lines) + "\n"


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/query_filter_bounds/run.py, made again from its raw file
    (``bounds.json``; older ones name the model and split only in the manifest's experiment and command): what
    tests/integration/test_committed_results.py compares with the committed one."""
    result = json.loads((folder / "bounds.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    split = result.get("split") or parse_args(manifest["command"][1:]).split
    return {"summary.md": summary_md(result, result.get("model") or manifest["experiment"]["model"], split)}
