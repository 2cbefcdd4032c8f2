"""bf16 against fp32 for one SPLADE model on one dataset: what the cheaper precision changes in the results.

    python pipelines/bench_bf16_fidelity.py --out results/bf16-fidelity        # splade-tiny, SciFact test

The same chain (:func:`lsr_eval.experiments.splade.run_splade`: encode the corpus, export, index with Anserini,
encode and search the queries) runs twice with the same settings but ``precision`` (``fp32``, then ``bf16``, forced:
``auto`` would pick fp32 on a CPU without avx512_bf16/AMX). Compared, in memory:

* every measure of the dataset (nDCG@10 first) and its difference bf16 - fp32;
* the share of queries whose top 10 is identical: the same documents in the same order (``ordered``) and the same
  set of documents (``as_set``); ranks are by score, then docid ascending (the engines' order; run files list ties
  by docid descending, as trec_eval sorts them); the differing queries are listed with their overlap;
* the share of queries whose integer query vectors (``rint(weight * scale)``, as searched) are identical, with the
  differing terms of the first few.

On a CPU without native bf16 (AVX2, or AVX-512 without avx512_bf16) PyTorch's oneDNN kernels convert bf16 operands
to float32 and accumulate in float32, as the native instructions do, so the numbers (not the speed) are those of a
bf16 machine up to summation order. The encoding time of each precision is recorded, with the machine
(:func:`lsr_eval.hardware.describe`: CPU flags, GPUs) and the device (``--device``, default auto: CUDA when present).

Outputs in ``--out``: ``fidelity.json``, ``summary.md`` and ``manifest.json``; the two runs' folders (runs, metrics,
manifests) in ``WORK/bench-bf16-fidelity/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from lsr_eval.evaluation.agreement import top_agreement, weight_map_agreement

REPO = Path(__file__).resolve().parents[1]

STAGE = "bench-bf16-fidelity"
PRECISIONS = ("fp32", "bf16")
TOP = 10
log = logging.getLogger("bench_bf16_fidelity")


def _label(name: str) -> str:
    """A folder name for a dataset name (which may be a path)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in Path(name).name or name)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from lsr_eval.defaults import DEFAULT_SCALE
    from lsr_eval.models.arguments import add_device

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.experiments.splade import SpladeSettings, run_splade
    from lsr_eval.workdir import work_dir
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval import hardware
    from lsr_eval.manifest import machine, prepare_output, write_manifest
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.precision import resolve_precision

    dataset = load_dataset(args.dataset, args.split)
    base = dict(model=resolve_model(args.model), doc_top_k=args.doc_top_k, query_top_k=args.query_top_k,
                scale=args.scale,
                batch_size=args.batch_size, max_length_d=args.max_length_d, max_length_q=args.max_length_q)
    device = resolve_device(args.device)
    # the device is not the experiment's identity (as in run_splade): it is recorded in fidelity.json
    experiment = {"benchmark": STAGE, "dataset": dataset.describe(), "settings": base, "precisions": PRECISIONS,
                  "top": TOP, "threads": args.threads}
    out = prepare_output(args.out, experiment, overwrite=args.overwrite)
    work = work_dir(args.work_dir)
    systems: dict[str, dict[str, Any]] = {}
    for precision in PRECISIONS:
        settings = SpladeSettings(**base, precision=precision, device=args.device)
        t0 = time.perf_counter()
        result = run_splade(dataset, work / STAGE / _label(dataset.describe()["name"]) / precision, work,
                            settings, threads=args.threads, overwrite=args.overwrite)
        seconds = time.perf_counter() - t0
        model = result.model
        if model is None:    # a finished run was reused: load the model for the query vectors
            from lsr_eval.experiments.splade import load_model

            model = load_model(settings)
        encoded = encode_queries(dataset.queries(), SpladeTextEncoder(model.query), batch_size=args.batch_size)
        systems[precision] = {"result": result, "seconds": seconds,
                              "maps": query_weight_maps(encoded.vectors, args.scale),
                              "resolved": model.document.resolved_precision().to_dict()}
        log.info("%s: %s in %.0f s (%s)", precision, result.metrics, seconds,
                 "reused" if result.reused else "computed")
    ref, low = systems["fp32"], systems["bf16"]
    metrics = {m: {"fp32": ref["result"].metrics[m], "bf16": low["result"].metrics.get(m),
                   "difference": (low["result"].metrics[m] - ref["result"].metrics[m])
                   if m in low["result"].metrics else None} for m in ref["result"].metrics}
    fidelity = {
        "metrics": metrics,
        "top10": top_agreement(ref["result"].run, low["result"].run, TOP),
        "query_vectors": weight_map_agreement(ref["maps"], low["maps"]),
        "precision": {p: s["resolved"] for p, s in systems.items()},
        "seconds": {p: round(s["seconds"], 1) for p, s in systems.items()},
        "reused": {p: s["result"].reused for p, s in systems.items()},
        "model": args.model, "device": str(device), "machine": machine(),
        "cpu": {"flags": sorted(hardware.cpu_flags()), "auto_resolves_to": resolve_precision("auto", device).to_dict()},
        "folders": {p: str(s["result"].folder) for p, s in systems.items()},
    }
    with open(out / "fidelity.json", "w", encoding="utf-8") as f:
        json.dump(fidelity, f, indent=2, default=str)
        f.write("\n")
    (out / "summary.md").write_text(summary_text(fidelity, dataset.describe()["name"], args.model), encoding="utf-8")
    write_manifest(out, STAGE, experiment, outputs=["fidelity.json", "summary.md"],
                   counts={"queries": fidelity["top10"]["queries"]}, timings=fidelity["seconds"],
                   load_average_end=list(os.getloadavg()))
    print((out / "summary.md").read_text(encoding="utf-8"))
    return 0


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
              f"Wall time of each chain (encode, export, index, search): "
              + ", ".join(f"{p} {s} s" for p, s in fid["seconds"].items()) + speed_note(fid) + ".",
              ""]
    return "\n".join(lines)


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of this script, made again from its raw files (``fidelity.json``, the
    manifest): what tests/test_committed_results.py compares with the committed one."""
    fid = json.loads((folder / "fidelity.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    model = fid.get("model") or parse_args(manifest["command"][1:]).model   # older files: the command's --model
    return {"summary.md": summary_text(fid, manifest["experiment"]["dataset"]["name"], model)}


if __name__ == "__main__":
    sys.exit(main())
