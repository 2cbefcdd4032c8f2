"""The encoding-speed benchmark's summary (:mod:`studies.encode_speed.measure`), made again from a results
folder's raw ``bench.json`` by :func:`summaries`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _load_text(load: dict[str, list[float]] | None) -> str:
    if not load:
        return ""
    return "Load average (1 / 5 / 15 min): " + ", ".join(
        f"{when} " + " / ".join(f"{x:.1f}" for x in v) for when, v in load.items()) + ". "


def machine_text(result: dict[str, Any]) -> str:
    """The machine as recorded (:func:`lsr_eval.hardware.describe`; results made before it hold a string)."""
    m = result["machine"]
    if isinstance(m, str):
        return m
    gpus = "; GPUs " + ", ".join(g["name"] for g in m["gpus"]) if m.get("gpus") else ""
    return (f"{m['cpu']}, {m['cores']} cores, flags {' '.join(m['cpu_flags']) or 'none recorded'}, torch threads "
            f"{result['torch_threads']}{gpus}")


def bf16_note(result: dict[str, Any], device: str) -> str:
    """Whether bf16 is native where the documents were encoded, from the recorded machine (not assumed)."""
    from lsr_eval.hardware import CPU_BF16_FLAGS

    m = result["machine"]
    if device.startswith("cuda"):
        return f"bf16 ran on {device} (the GPU's own bf16 units)."
    flags = m.get("cpu_flags", [])
    native = sorted(set(flags) & set(CPU_BF16_FLAGS))
    if native:
        return f"This CPU has {', '.join(native)}: bf16 is native here."
    return (f"This CPU's recorded flags ({' '.join(flags) or 'none'}) include neither {' nor '.join(CPU_BF16_FLAGS)}: "
            "bf16 is emulated here (PyTorch converts to fp32 for the products), so its speed is not that of a bf16 "
            "CPU; its vectors are.")


def precision_lines(result: dict[str, Any]) -> list[str]:
    """The side-by-side precisions (when more than one was measured)."""
    from studies.harness.agreement import vector_agreement_text as agreement_text

    docs = [d for d in result["documents"] if len(d.get("precisions", {})) > 1]
    if not docs:
        return []
    lines = ["", "Precisions side by side (same weights, same parts, one after the other in each part; the first "
             "listed is the reference):", "",
             "| model | precision (resolved: reason) | device | docs/s | speed vs the first |", "|---|---|---|---|---|"]
    for d in docs:
        for p, x in d["precisions"].items():
            lines.append(f"| {d['model']} | {p} ({x['precision']['name']}: {x['precision']['reason']}) "
                         f"| {x['device']} | {x['docs_per_s']:.1f} | {x['speed_vs_first']:.2f}x |")
    lines.append("")
    for d in docs:
        for p, x in d["precisions"].items():
            if x["agreement_with_first"] is not None:
                lines.append(f"- {d['model']}, {p} vs {next(iter(d['precisions']))}: "
                             f"{agreement_text(x['agreement_with_first'])}")
    lines += ["", bf16_note(result, docs[0]["device"])]
    return lines


def summary_md(result: dict[str, Any]) -> str:
    load = result.get("load_average")
    shared = (_load_text(load) + "Other processes may share the machine: the ratios, measured in the same run, are "
              "the comparable figures.") if load else ("The machine was shared with other jobs: the ratios, measured "
                                                       "in the same run, are the comparable figures.")
    lines = ["# SPLADE encoding: lsr-eval vs Pyserini, roofline, query latency", "",
             f"One run, same models and documents (first {result['parameters']['docs']} SciFact documents, "
             f"{result['parameters']['max_length']} tokens max, batches of {result['parameters']['batch_size']}). "
             f"Machine: {machine_text(result)}. " + shared, "",
             "| model | precision | lsr-eval docs/s | Pyserini docs/s | ratio (target >= 3) | roofline GFLOP/s "
             "| head-bound docs/s | % of roofline (target >= 50) | identical vectors vs Pyserini |",
             "|---|---|---|---|---|---|---|---|---|"]
    for d in result["documents"]:
        lines.append(
            f"| {d['model']} | {d['precision']['name']} ({d['precision']['reason']}) "
            f"| {d['lsr_eval']['docs_per_s']:.1f} "
            f"| {d['pyserini']['docs_per_s']:.1f} | {d['ratio_vs_pyserini']:.2f}x "
            f"{'(met)' if d['met']['ratio_vs_pyserini'] else '(**missed**)'} | {d['roofline']['gflops']:.0f} "
            f"| {d['roofline']['head_bound_docs_per_s']:.1f} | {100 * d['fraction_of_roofline']:.0f}% "
            f"{'(met)' if d['met']['fraction_of_roofline'] else '(**missed**)'} "
            f"| {d['fidelity_vs_pyserini']['identical_docs']}/{d['fidelity_vs_pyserini']['docs']} |")
    if all("backbone" in d for d in result["documents"]):   # results made before the backbone was measured: none
        lines += ["", "Roofline = the faster of the head's product in 8,192-token blocks and in L2-sized blocks "
                  "(GFLOP/s of "
                  "each below). Backbone = the model without its decoder on the same batches (tokeniser included): "
                  "no head kernel can make encoding faster than the backbone plus the head at the roofline.", "",
                  "| model | roofline GFLOP/s (large / cache blocks) | backbone docs/s | backbone share of lsr-eval "
                  "time | limit with this backbone, docs/s | lsr-eval % of that limit |", "|---|---|---|---|---|---|"]
        for d in result["documents"]:
            g, b = d["roofline"]["gflops_by_shape"], d["backbone"]
            lines.append(f"| {d['model']} | {g['large']:.0f} / {g['cache']:.0f} | {b['docs_per_s']:.1f} "
                         f"| {100 * b['share_of_lsr_eval_time']:.0f}% | {b['limit_docs_per_s']:.1f} "
                         f"| {100 * b['fraction_of_limit']:.0f}% |")
    lines += precision_lines(result)
    for q in result["queries"]:
        lat = q["latency"]
        fid = q["fidelity"]
        lines += ["", f"Query encoding, {q['model']}, one thread, {q['queries']} SciFact test + train queries "
                  "(interleaved query by query):", "",
                  "| path | p50 ms | mean ms | p90 ms |", "|---|---|---|---|"]
        for k in ("lean", "reference", "pyserini"):
            lines.append(f"| {k} | {lat[k]['p50_ms']:.2f} | {lat[k]['mean_ms']:.2f} | {lat[k]['p90_ms']:.2f} |")
        lines += ["", f"Target p50 <= 1 ms: {'met' if q['met']['p50_ms'] else '**missed**'} "
                  f"({lat['lean']['p50_ms']:.2f} ms). Identical integer vectors (lean vs batched full-logits "
                  f"reference): {fid['identical_integer_vectors']}/{fid['queries']} ({100 * fid['fraction']:.2f}%, "
                  f"target >= 99%: {'met' if q['met']['fidelity'] else '**missed**'})."]
        for d in fid["differing"][:20]:
            lines.append(f"- {d['id']}: {d['differences']} (reference, lean)")
    return "\n".join(lines) + "\n"


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/encode_speed/run.py, made again from its raw file
    (``bench_encode.json``): what tests/integration/test_committed_results.py compares with the committed one."""
    return {"summary.md": summary_md(json.loads((folder / "bench_encode.json").read_text(encoding="utf-8")))}

