"""Query-encoder speed (studies/query_encoder/run.py): the torch and ONNX query paths timed side by side on one
thread, with the fidelity of their integer vectors; the ONNX query path's work per step, done step by step, and the
floor of its pruned head (what remains when the head's product is skipped)."""

from __future__ import annotations

import argparse
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsr_eval.commands.options import add_device, add_precision
from lsr_eval.defaults import DEFAULT_SCALE

REPO = Path(__file__).resolve().parents[2]
STAGE = "bench-query-encoder"
#: the query paths timed (``--paths``): torch is always one
PATHS = ("torch", "onnx", "onnx-dense")

log = logging.getLogger(__name__)


def breakdown(enc, queries, scale: float) -> dict[str, float]:
    """Mean milliseconds per step of :class:`~lsr_eval.efficiency.latency.QueryWeights`' work on the ONNX path, done
    step by step (studies/query_encoder/run.py)."""
    import scipy.sparse as sp

    from lsr_eval.export.quantize import VocabCheck, quantize_rows

    vocab = VocabCheck(enc.terms)
    total: dict[str, float] = {}
    clock = time.perf_counter
    for q in queries:
        t0 = clock()
        e = enc.tokenize(q.text)
        t1 = clock()
        stats: dict[str, float] = {}
        idx, val = enc.pooled(e.ids, stats)
        t2 = clock()
        idx, val = enc.sparse_row(idx, val)
        row = sp.csr_matrix((val, idx.astype("int32"), [0, len(val)]), shape=(1, enc.vocab_size))
        qr = quantize_rows(row, [q.id], vocab, scale, what="query")
        dict(zip(vocab.tokens[qr.indices].tolist(), qr.values.tolist()))
        t3 = clock()
        for k, v in {"tokenizer": t1 - t0, "pooled_other": t2 - t1 - sum(v for k, v in stats.items()
                                                                          if k != "candidates"),
                     "post": t3 - t2, **stats}.items():
            total[k] = total.get(k, 0.0) + v
    n = len(queries)
    return {k: (v / n if k == "candidates" else v / n * 1e3) for k, v in total.items()}


def floor_parts(enc, queries) -> dict[str, float]:
    """Mean milliseconds per query of the parts the ``pruned`` design cannot avoid, each run alone on the query's
    tokens (:func:`lsr_eval.models.onnx_query.part_sessions`): tokenizer, transformer, int8 vocabulary product; and
    their sum, the floor of this design on this machine."""
    import numpy as np

    from lsr_eval.models.onnx_query import part_sessions

    sessions = part_sessions(enc)
    clock = time.perf_counter
    total = {"tokenizer": 0.0, "transformer": 0.0, "int8_product": 0.0}
    zero = np.array(0, dtype=np.uint8)
    hidden = enc.encoder.mlm.get_output_embeddings().in_features
    for q in queries:
        t0 = clock()
        ids = enc.tokenize(q.text).ids
        t1 = clock()
        x = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        sessions["transformer"].run(None, {"input_ids": x})
        t2 = clock()
        hq = np.zeros((len(ids), hidden), dtype=np.uint8)
        t3 = clock()
        sessions["int8_product"].run(None, {"hq": hq, "zh": zero})
        t4 = clock()
        for k, v in (("tokenizer", t1 - t0), ("transformer", t2 - t1), ("int8_product", t4 - t3)):
            total[k] += v
    out = {k: v / len(queries) * 1e3 for k, v in total.items()}
    out["sum"] = sum(out.values())
    return out


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/query_encoder/run.py (``description``: its help's first paragraph)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", default=str(REPO.parent / "shared" / "data" / "beir" / "scifact"),
                   help="BEIR folder or registry name")
    p.add_argument("--split", default="test")
    p.add_argument("--model", default="splade-tiny", help="model folder, hub id or offline alias")
    p.add_argument("--max-length-q", type=int, default=64, help="query max length in tokens")
    p.add_argument("--query-top-k", type=int, help="keep the k largest query weights (default: all)")
    p.add_argument("--scale", type=float, default=DEFAULT_SCALE, help="quantisation scale")
    p.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, from {', '.join(PATHS)}")
    p.add_argument("--warmup", type=int, default=20, help="queries run on every path before measuring")
    p.add_argument("--passes", type=int, default=3, help="measured passes over all queries")
    p.add_argument("--limit", type=int, help="only the first N queries (smoke test)")
    add_precision(p, note="; the ONNX paths compute in fp32 only")
    add_device(p, "cpu", "one-thread latency beside ONNX Runtime, which runs on the CPU; another device times the "
                         "torch path alone")
    p.add_argument("--work-dir", type=Path, default=REPO / "work", help="cache of the exported ONNX files")
    p.add_argument("--out", type=Path, default=REPO / "results" / "bench_query_encoder")
    return p.parse_args(argv)


def check_paths(args: argparse.Namespace) -> list[str]:
    """The paths of ``--paths`` (torch always among them); the ONNX paths only on the CPU. Exits with one line
    when not."""
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = sorted(set(paths) - set(PATHS))
    if unknown or "torch" not in paths:
        raise SystemExit(f"--paths: {unknown or 'torch missing'}; expected torch plus any of {', '.join(PATHS)}")
    if args.device != "cpu" and paths != ["torch"]:
        raise SystemExit(f"--device {args.device}: the ONNX paths run on the CPU; pass --paths torch to time the "
                         "torch path alone on another device")
    return paths


@dataclass
class EncoderSpeedRun:
    """One run of the benchmark: its output folder (prepared, nothing written yet), experiment, library versions
    and ONNX exports for the manifest, the ``bench.json`` content, and the samples behind ``per_query.csv``
    (``samples[path][figure][pass]``, in query order)."""

    out: Path
    experiment: dict[str, Any]
    versions: dict[str, str | None]
    export: dict[str, dict[str, Any]]
    bench: dict[str, Any]
    queries: list
    paths: list[str]
    passes: int
    samples: dict[str, dict[str, list[list[float]]]]


def _experiment(args: argparse.Namespace, dataset, queries: list, paths: list[str]) -> dict[str, Any]:
    """The run's identity in its manifest."""
    from lsr_eval.models.options import DEFAULT_PRECISION

    experiment = {"benchmark": STAGE, "dataset": dataset.describe(), "split": args.split, "queries": len(queries),
                  "model": args.model, "max_length_q": args.max_length_q, "query_top_k": args.query_top_k,
                  "scale": args.scale, "paths": paths, "warmup": args.warmup, "passes": args.passes}
    # earlier results (fp32 on the CPU, before the options) keep their identity; what ran is in bench.json
    if args.precision != DEFAULT_PRECISION:
        experiment["precision"] = args.precision
    if args.device != "cpu":
        experiment["device"] = args.device
    return experiment


def _encoders(args: argparse.Namespace, paths: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The torch encoder and an ONNX encoder per ONNX path (exported or reused from the work folder): the encoders
    by path, and each export's seconds, whether it was exported and its folder."""
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.encoder import SpladeEncoder
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.onnx_query import OnnxQueryEncoder
    from lsr_eval.models.sparsify import Sparsify

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
    return encoders, export_s


def _side_by_side(args: argparse.Namespace, queries: list, paths: list[str], encoders: dict[str, Any],
                  weights: dict[str, Any]
                  ) -> tuple[dict[str, dict[str, list[list[float]]]], dict[str, dict[str, dict[str, int]]]]:
    """The warm-up, then ``--passes`` passes with the paths interleaved query by query (order rotating): wall and
    thread CPU ms of ``encode`` and ``weights`` per path, figure, pass and query; and each path's weight maps."""
    from studies.harness.measure import rotation

    def encode(name, text):
        return encoders[name].encode([text], batch_size=1, sparse=True)

    clock, cpu = time.perf_counter, time.thread_time
    samples = {name: {k: [[] for _ in range(args.passes)] for k in ("encode", "weights", "encode_cpu", "weights_cpu")}
               for name in paths}
    maps: dict[str, dict[str, dict[str, int]]] = {name: {} for name in paths}
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
    return samples, maps


def _latency(samples: dict[str, dict[str, list[list[float]]]]) -> dict[str, dict[str, Any]]:
    """Per path and figure, each pass's summary and, over the passes, the median and fastest p50 and median p99."""
    import numpy as np

    from lsr_eval.efficiency.latency import LatencySummary

    latency = {}
    for name, figures in samples.items():
        latency[name] = {}
        for k, per_pass in figures.items():
            passes = [LatencySummary.from_ms(x).to_dict() for x in per_pass]
            p50s = [x["p50_ms"] for x in passes]
            latency[name][k] = {"passes": passes, "p50_ms_median_of_passes": float(np.median(p50s)),
                                "p50_ms_fastest_pass": min(p50s),
                                "p99_ms_median_of_passes": float(np.median([x["p99_ms"] for x in passes]))}
    return latency


def _fidelity(encoder, queries: list, paths: list[str], maps: dict[str, dict[str, dict[str, int]]],
              scale: float) -> dict[str, dict[str, Any]]:
    """Per ONNX path, its integer vectors against the torch path's on every query, each difference with the torch
    float weight times the scale (a rounding boundary shows as x.5000)."""
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
                differ[q.id] = {t: {"torch": a.get(t), "onnx": b.get(t), "torch_w_x_scale": w.get(t, 0.0) * scale}
                                for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t)}
        fidelity[name] = {"queries": len(queries), "identical": len(queries) - len(differ), "differing": differ}
    return fidelity


def measure_query_encoders(args: argparse.Namespace, paths: list[str]) -> EncoderSpeedRun:
    """Time every path side by side on one thread on the options of :func:`parse_args` (``paths``:
    :func:`check_paths`), with the ONNX steps, the pruned floor and fidelity (the output folder is prepared,
    nothing written in it yet)."""
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.efficiency.latency import QueryWeights, torch_threads
    from lsr_eval.manifest import installed_version, machine, prepare_output

    t_start = time.perf_counter()
    load = {"start": list(os.getloadavg())}
    dataset = load_dataset(args.dataset, args.split)
    queries = dataset.queries()[:args.limit] if args.limit else dataset.queries()
    versions = {name: installed_version(name) for name in ("onnxruntime", "onnx", "torch", "transformers",
                                                            "tokenizers", "numpy")}
    experiment = _experiment(args, dataset, queries, paths)
    out = prepare_output(args.out, experiment, overwrite=True)
    encoders, export_s = _encoders(args, paths)
    weights = {name: QueryWeights(enc, args.scale) for name, enc in encoders.items()}
    with torch_threads(1):
        samples, maps = _side_by_side(args, queries, paths, encoders, weights)
        load["after_side_by_side"] = list(os.getloadavg())
        steps = {name: breakdown(encoders[name], queries, args.scale) for name in paths if name != "torch"}
        floor = floor_parts(encoders["onnx"], queries) if "onnx" in encoders else None
    latency = _latency(samples)
    fidelity = _fidelity(encoders["torch"], queries, paths, maps, args.scale)
    load["end"] = list(os.getloadavg())
    bench = {
        "protocol": {"queries": len(queries), "warmup_queries": args.warmup, "passes": args.passes,
                     "threads": {"torch": 1, "onnxruntime_intra_op": 1, "onnxruntime_inter_op": 1},
                     "order": "interleaved, rotating per query", "machine": machine(), "versions": versions,
                     "inference": encoders["torch"].runtime(),
                     "load_average_1_5_15min": load},
        "export": export_s, "latency_ms": latency, "onnx_steps_mean_ms": steps,
        "pruned_floor_mean_ms": floor, "fidelity": fidelity,
        "seconds": time.perf_counter() - t_start,
    }
    return EncoderSpeedRun(out, experiment, versions, export_s, bench, queries, paths, args.passes, samples)


def write_per_query(path: Path, run: EncoderSpeedRun) -> None:
    """``per_query.csv``: per query and pass, each path's ``encode`` and ``weights`` ms."""
    import csv

    paths, samples = run.paths, run.samples
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["qid", "pass"] + [f"{n}:{k}_ms" for n in paths for k in ("encode", "weights")])
        for p in range(run.passes):
            for i, q in enumerate(run.queries):
                w.writerow([q.id, p] + [f"{samples[n][k][p][i]:.4f}" for n in paths for k in ("encode", "weights")])
