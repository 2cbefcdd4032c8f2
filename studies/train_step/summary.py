"""The training-step benchmark's summary (studies/train_step/run.py), which tests/integration/test_committed_results.py
makes again from a committed ``bench_train_step.json``."""

from __future__ import annotations

import json
from pathlib import Path


def summary_md(result: dict) -> str:
    """The summary of :func:`main`'s result (``bench_train_step.json``)."""
    fs = result["first_step"]
    # results made before devices and precisions were recorded ran fp32 on the CPU and said "(fp32)"
    how = (f"fp32 weights, forward pass in {result['precision']['name']} on {result['device']}" if "device" in result
           else "fp32")
    load = f" Load average (1 / 5 / 15 min) at the end: {' / '.join(f'{x:.1f}' for x in result['load_average'])}." \
        if "load_average" in result else ""
    md = [f"# SPLADE training step: chunked head vs full logits ({result['model']})", "",
          f"{result['steps']} AdamW steps ({how}) on one fixed batch: {result['queries']} queries, "
          f"{result['documents']} documents (padded shape {result['doc_shape']}, {result['doc_tokens']} real tokens), "
          f"{result['threads']} threads; the two paths alternate step by step (shared machine: compare the ratio)."
          + load, "",
          "| path | median step (s) | steps (s) |", "|---|---|---|"]
    for n, times in result["step_seconds"].items():
        md.append(f"| {n} | {result['median_step_s'][n]:.3f} | {', '.join(f'{t:.2f}' for t in times)} |")
    md += ["", f"Speed-up: **{result['speedup']:.2f}x**. First step: loss {fs['loss_chunked']:.6f} vs "
           f"{fs['loss_full']:.6f} (|diff| {fs['loss_abs_diff']:.2e}); gradients of {fs['params_compared']} "
           f"parameters, max |diff| {fs['grad_max_abs_diff']:.2e} ({fs['grad_max_abs_diff_param']}), largest relative "
           f"to the gradient's scale {fs['worst_relative_diff']:.2e} ({fs['worst_relative_param']})."]
    return "\n".join(md) + "\n"


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/train_step/run.py, made again from its raw file
    (``bench_train_step.json``): what tests/integration/test_committed_results.py compares with the committed one."""
    return {"summary.md": summary_md(json.loads((folder / "bench_train_step.json").read_text(encoding="utf-8")))}
