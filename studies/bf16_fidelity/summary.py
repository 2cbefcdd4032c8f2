"""The bf16 fidelity benchmark's summary (studies/bf16_fidelity/run.py), which
tests/integration/test_committed_results.py makes again from a committed ``fidelity.json`` and its manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studies.bf16_fidelity.measure import parse_args


def speed_note(fid: dict[str, Any]) -> str:
    """What the wall times say about speed, from the recorded device and CPU flags (not assumed)."""
    from lsr_eval.hardware import CPU_BF16_FLAGS

    device = fid.get("device", "cpu")   # fidelity.json before devices were recorded: the CPU
    if not device.startswith("cpu"):
        return f" (on {device}: the GPU's bf16 is native)"
    native = sorted(set(CPU_BF16_FLAGS) & set(fid["cpu"]["flags"]))
    if native:
        return f" (bf16 is native on this CPU: {', '.join(native)})"
    return " (bf16 without native instructions is slow on this CPU: the figure is not a speed comparison)"


def summary_text(fid: dict[str, Any], dataset: str, model: str) -> str:
    top, vec = fid["top10"], fid["query_vectors"]
    lines = [f"# bf16 against fp32: {model} on {dataset}", "",
             "The same chain run twice, only the precision differs (bf16 forced; CPU flags in fidelity.json).", "",
             "| measure | fp32 | bf16 | bf16 - fp32 |", "|---|---|---|---|"]
    for m, v in fid["metrics"].items():
        diff = "" if v["difference"] is None else f"{v['difference']:+.4f}"
        bf16 = "missing" if v["bf16"] is None else f"{v['bf16']:.4f}"
        lines.append(f"| {m} | {v['fp32']:.4f} | {bf16} | {diff} |")
    lines += ["", f"Identical top {top['k']}: {top['identical_ordered']}/{top['queries']} queries in order "
                  f"({100 * top['share_ordered']:.1f}%), {top['identical_set']}/{top['queries']} as sets "
                  f"({100 * top['share_set']:.1f}%).",
              f"Identical integer query vectors: {vec['identical']}/{vec['queries']} "
              f"({100 * vec['share']:.1f}%).",
              "Wall time of each chain (encode, export, index, search): "
              + ", ".join(f"{p} {s} s" for p, s in fid["seconds"].items()) + speed_note(fid) + ".",
              ""]
    return "\n".join(lines)


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of studies/bf16_fidelity/run.py, made again from its raw files
    (``fidelity.json``, the manifest): what tests/integration/test_committed_results.py compares with the committed
    one."""
    fid = json.loads((folder / "fidelity.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    model = fid.get("model") or parse_args(manifest["command"][1:]).model   # older files: the command's --model
    return {"summary.md": summary_text(fid, manifest["experiment"]["dataset"]["name"], model)}
