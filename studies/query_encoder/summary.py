"""The query-encoder benchmark's summary (:mod:`studies.query_encoder.measure`), made again from a
results folder's raw ``bench.json`` by :func:`summaries`."""

from __future__ import annotations

import json
from pathlib import Path


def summary_md(b: dict) -> str:
    """The benchmark's summary.md from its ``bench.json``."""
    p = b["protocol"]
    lines = [f"# Query encoder, one query, one thread: {p['queries']} queries x {p['passes']} passes "
             f"({p['machine']['cpu']}, {p['machine']['cores']} cores; onnxruntime {p['versions']['onnxruntime']}, "
             f"torch {p['versions']['torch']})", "",
             "Load average (1 / 5 / 15 min; other processes shared the CPUs): " + ", ".join(
                 f"{when} {' / '.join(f'{x:.1f}' for x in v)}" for when, v in p["load_average_1_5_15min"].items()),
             "", "ms, tokenizer included; p50 = median of the passes' p50 (fastest pass's p50), p99 = median of the "
             "passes' p99; cpu = thread CPU time", "",
             "| path | encode p50 | encode p99 | weights p50 | weights p99 | weights cpu p50 |",
             "|---|---|---|---|---|---|"]
    for name, x in b["latency_ms"].items():
        e, w, wc = x["encode"], x["weights"], x["weights_cpu"]
        lines.append(f"| {name} | {e['p50_ms_median_of_passes']:.3f} ({e['p50_ms_fastest_pass']:.3f}) | "
                     f"{e['p99_ms_median_of_passes']:.3f} | {w['p50_ms_median_of_passes']:.3f} "
                     f"({w['p50_ms_fastest_pass']:.3f}) | {w['p99_ms_median_of_passes']:.3f} | "
                     f"{wc['p50_ms_median_of_passes']:.3f} ({wc['p50_ms_fastest_pass']:.3f}) |")
    lines += ["", "ONNX steps of `weights` (mean ms per query; candidates = mean vocabulary ids scored exactly):", ""]
    for name, s in b["onnx_steps_mean_ms"].items():
        lines.append(f"* {name}: " + ", ".join(f"{k} {v:.3f}" if k != "candidates" else f"{k} {v:.0f}"
                                               for k, v in s.items()))
    if b.get("pruned_floor_mean_ms"):
        f = b["pruned_floor_mean_ms"]
        lines += ["", "Floor of the pruned design (mean ms per query, each part run alone on the query's tokens): "
                  + ", ".join(f"{k} {v:.3f}" for k, v in f.items() if k != "sum")
                  + f"; sum **{f['sum']:.3f}** (target p50 <= 1 ms)."]
    lines += ["", "Fidelity (integer query vectors identical to the torch path):", ""]
    for name, f in b["fidelity"].items():
        lines.append(f"* {name}: {f['identical']}/{f['queries']}" + ("; differing: " + "; ".join(
            f"{qid} " + ", ".join(f"{t} {d['torch']} vs {d['onnx']} (w x scale {d['torch_w_x_scale']:.5f})"
                                  for t, d in diff.items()) for qid, diff in f["differing"].items())
            if f["differing"] else ""))
    return "\n".join(lines) + "\n"


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/query_encoder/run.py, made again from its raw file
    (``bench.json``): what tests/integration/test_committed_results.py compares with the committed one
    (``per_query.csv`` holds the raw timings)."""
    return {"summary.md": summary_md(json.loads((folder / "bench.json").read_text(encoding="utf-8")))}

