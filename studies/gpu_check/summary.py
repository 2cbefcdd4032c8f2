"""The GPU check's summary (studies/gpu_check/run.py), which tests/integration/test_committed_results.py makes again
from a committed ``gpu_check.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def summary_md(r: dict[str, Any]) -> str:
    from studies.harness.agreement import vector_agreement_text as agreement_text

    m = r["machine"]
    gpus = ", ".join(f"{g['name']} (CUDA {g['cuda']})" for g in m.get("gpus") or []) or "none"
    lines = [f"# GPU check: {r['model']}, {r['docs']} SciFact documents ({r['max_length']} tokens max, batches of "
             f"{r['batch_size']})", "",
             f"Machine: {m['cpu']} ({m['cores']} cores, flags {' '.join(m['cpu_flags']) or 'none recorded'}); GPUs: "
             f"{gpus}; torch {r['torch']['version']}, float32 matmul precision "
             f"{r['torch']['float32_matmul_precision']}, TF32 matmul {r['torch']['cuda_matmul_allow_tf32']}.", "",
             "| encoding | device | precision | docs/s |", "|---|---|---|---|"]
    for name, e in r["encodings"].items():
        lines.append(f"| {name} | {e['device']} | {e['precision']['name']} | {e['docs_per_s']:.1f} |")
    lines += ["", "Agreement (reference: fp32 on " + r["encodings"]["reference"]["device"] + "):", ""]
    lines += [f"- {name.replace('_', ' ')}: {agreement_text(a)}" for name, a in r["agreement"].items()]
    if r["fp32_within_tolerance"] is not None:
        lines += ["", f"fp32 on {r['encodings']['fp32']['device']} "
                  + ("agrees" if r["fp32_within_tolerance"] else "**does not agree**")
                  + f" with the reference within {r['fp32_tolerance']:g} (largest weight difference "
                  f"{r['agreement']['fp32_vs_reference']['max_abs_weight_difference']:.2e})."]
    return "\n".join(lines) + "\n"


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/gpu_check/run.py, made again from its raw file
    (``gpu_check.json``)."""
    return {"summary.md": summary_md(json.loads((folder / "gpu_check.json").read_text(encoding="utf-8")))}
