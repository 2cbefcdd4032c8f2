"""Side-by-side single-query latency of the SPLADE query encoder on one thread: lsr-eval's torch path
(:meth:`SpladeEncoder.encode` on one text, the lean ``_encode_single`` path) against ONNX Runtime
(:class:`lsr_eval.models.onnx_query.OnnxQueryEncoder`, ``pruned`` and ``dense`` graphs), with fidelity of the integer
query vectors.

    python pipelines/bench_query_encoder.py --out work/bench-qenc          # SciFact test, splade-tiny

Protocol: ``torch.set_num_threads(1)`` and ONNX Runtime sessions with one intra-op and one inter-op thread; the first
``--warmup`` queries are run on every path first (not counted); then ``--passes`` passes over all queries, the paths
interleaved query by query with the order rotating at each query, so machine load drifts evenly over them. Two
figures per path and query, both wall-clock (``time.perf_counter``) with the tokenizer included: ``encode`` (text ->
sparse float vector, ``encode([text], sparse=True)``) and ``weights`` (text -> ``{term: rint(w * scale)}``,
:class:`lsr_eval.efficiency.latency.QueryWeights`: what ``measure_latency`` reports as "encode"). The CPU time of the
calling thread (``time.thread_time``) is recorded beside wall time: other processes share the CPUs, and the gap
between the two is time spent waiting for a core. Per pass p50 / p99 over all queries; the summary gives the median
and the fastest of the passes' p50s. For the ONNX paths a separate pass splits the ``weights`` time into tokenizer,
session run(s), candidate selection (numpy) and the rest (sparsification, CSR row, quantisation, term map).
Fidelity: integer vectors of each ONNX path against the torch path on every query, differences listed with the torch
float weight times the scale (a difference at a rounding boundary shows as x.5000).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import sys
import time
from typing import Any

from lsr_eval.efficiency.measure import rotation
from lsr_eval.models.options import DEFAULT_PRECISION
from lsr_eval.experiments.query_encoder_speed import PATHS, breakdown, floor_parts, parse_args
from lsr_eval.report.query_encoder_speed import summary_md
from lsr_eval.models.arguments import encoder_record

STAGE = "bench-query-encoder"

log = logging.getLogger("bench_query_encoder")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = sorted(set(paths) - set(PATHS))
    if unknown or "torch" not in paths:
        raise SystemExit(f"--paths: {unknown or 'torch missing'}; expected torch plus any of {', '.join(PATHS)}")
    if args.device != "cpu" and paths != ["torch"]:
        raise SystemExit(f"--device {args.device}: the ONNX paths run on the CPU; pass --paths torch to time the "
                         "torch path alone on another device")
    import numpy as np

    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.efficiency.latency import LatencySummary, QueryWeights, torch_threads
    from lsr_eval.manifest import installed_version, machine, prepare_output, write_manifest
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.encoder import SpladeEncoder
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.onnx_query import OnnxQueryEncoder
    from lsr_eval.models.sparsify import Sparsify

    t_start = time.perf_counter()
    load = {"start": list(os.getloadavg())}
    dataset = load_dataset(args.dataset, args.split)
    queries = dataset.queries()[:args.limit] if args.limit else dataset.queries()
    versions = {name: installed_version(name) for name in ("onnxruntime", "onnx", "torch", "transformers",
                                                            "tokenizers", "numpy")}
    experiment = {"benchmark": STAGE, "dataset": dataset.describe(), "split": args.split, "queries": len(queries),
                  "model": args.model, "max_length_q": args.max_length_q, "query_top_k": args.query_top_k,
                  "scale": args.scale, "paths": paths, "warmup": args.warmup, "passes": args.passes}
    # earlier results (fp32 on the CPU, before the options) keep their identity; what ran is in bench.json
    if args.precision != DEFAULT_PRECISION:
        experiment["precision"] = args.precision
    if args.device != "cpu":
        experiment["device"] = args.device
    out = prepare_output(args.out, experiment, overwrite=True)
    encoder = SpladeEncoder.from_pretrained(resolve_model(args.model), args.max_length_q,
                                            sparsify=Sparsify(top_k=args.query_top_k), precision=args.precision
                                            ).to(resolve_device(args.device))
    encoders: dict[str, Any] = {"torch": encoder}
    export_s = {}
    for name in paths:
        if name != "torch":
            t0 = time.perf_counter()
            mode = "dense" if name == "onnx-dense" else "pruned"
            encoders[name] = OnnxQueryEncoder(encoder, args.work_dir, mode=mode)
            export_s[name] = {"seconds": time.perf_counter() - t0, "exported": encoders[name].exported,
                              "folder": str(encoders[name].folder)}
    weights = {name: QueryWeights(enc, args.scale) for name, enc in encoders.items()}

    def encode(name, text):
        return encoders[name].encode([text], batch_size=1, sparse=True)

    clock, cpu = time.perf_counter, time.thread_time
    samples = {name: {k: [[] for _ in range(args.passes)] for k in ("encode", "weights", "encode_cpu", "weights_cpu")}
               for name in paths}
    maps: dict[str, dict[str, dict[str, int]]] = {name: {} for name in paths}
    with torch_threads(1):
        for q in queries[:args.warmup]:
            for name in paths:
                encode(name, q.text)
                weights[name](q.text, q.id)
        for p in range(args.passes):
            log.info("pass %d/%d: %d queries x %d paths", p + 1, args.passes, len(queries), len(paths))
            for i, q in enumerate(queries):
                for name in rotation(paths, i + p):
                    s = samples[name]
                    t0, c0 = clock(), cpu()
                    encode(name, q.text)
                    t1, c1 = clock(), cpu()
                    m = weights[name](q.text, q.id)
                    t2, c2 = clock(), cpu()
                    s["encode"][p].append((t1 - t0) * 1e3)
                    s["encode_cpu"][p].append((c1 - c0) * 1e3)
                    s["weights"][p].append((t2 - t1) * 1e3)
                    s["weights_cpu"][p].append((c2 - c1) * 1e3)
                    maps[name][q.id] = m
        load["after_side_by_side"] = list(os.getloadavg())
        steps = {name: breakdown(encoders[name], queries, args.scale) for name in paths if name != "torch"}
        floor = floor_parts(encoders["onnx"], queries) if "onnx" in encoders else None

    latency = {}
    for name in paths:
        latency[name] = {}
        for k, per_pass in samples[name].items():
            passes = [LatencySummary.from_ms(x).to_dict() for x in per_pass]
            p50s = [x["p50_ms"] for x in passes]
            latency[name][k] = {"passes": passes, "p50_ms_median_of_passes": float(np.median(p50s)),
                                "p50_ms_fastest_pass": min(p50s),
                                "p99_ms_median_of_passes": float(np.median([x["p99_ms"] for x in passes]))}
    fidelity = {}
    for name in paths:
        if name == "torch":
            continue
        differ = {}
        for q in queries:
            a, b = maps["torch"][q.id], maps[name][q.id]
            if a != b:
                row = encoder.encode([q.text], sparse=True).weights.tocsr()
                w = {encoder.terms[i]: float(v) for i, v in zip(row.indices, row.data)}
                differ[q.id] = {t: {"torch": a.get(t), "onnx": b.get(t), "torch_w_x_scale": w.get(t, 0.0) * args.scale}
                                for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t)}
        fidelity[name] = {"queries": len(queries), "identical": len(queries) - len(differ), "differing": differ}
    load["end"] = list(os.getloadavg())
    bench = {
        "protocol": {"queries": len(queries), "warmup_queries": args.warmup, "passes": args.passes,
                     "threads": {"torch": 1, "onnxruntime_intra_op": 1, "onnxruntime_inter_op": 1},
                     "order": "interleaved, rotating per query", "machine": machine(), "versions": versions,
                     "inference": encoder_record(encoder),
                     "load_average_1_5_15min": load},
        "export": export_s, "latency_ms": latency, "onnx_steps_mean_ms": steps,
        "pruned_floor_mean_ms": floor, "fidelity": fidelity,
        "seconds": time.perf_counter() - t_start,
    }
    with open(out / "bench.json", "w", encoding="utf-8") as f:
        json.dump(bench, f, indent=2)
        f.write("\n")
    with open(out / "per_query.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["qid", "pass"] + [f"{n}:{k}_ms" for n in paths for k in ("encode", "weights")])
        for p in range(args.passes):
            for i, q in enumerate(queries):
                w.writerow([q.id, p] + [f"{samples[n][k][p][i]:.4f}" for n in paths for k in ("encode", "weights")])
    text = summary_md(bench)
    (out / "summary.md").write_text(text, encoding="utf-8")
    write_manifest(out, STAGE, experiment, versions=versions, export=export_s,
                   outputs=["bench.json", "per_query.csv", "summary.md"], seconds=bench["seconds"])
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
