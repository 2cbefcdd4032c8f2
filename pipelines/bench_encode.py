"""Side-by-side SPLADE encoding benchmark, in one run: lsr-eval's document encoder against Pyserini's
``SpladeDocumentEncoder`` on the same model and the same SciFact documents, the head-matmul roofline measured in the
same run, and the single-query encoding latency (one thread) of lsr-eval's lean path, its batched reference path and
Pyserini's ``SpladeQueryEncoder``, with the integer-vector fidelity of the lean path.

    python pipelines/bench_encode.py --out results/encode [--models splade-tiny minilm --docs 1000]
    python pipelines/bench_encode.py --precisions fp32 bf16 --out DIR     # what fp32 costs against bf16, one run

Documents: the first ``--docs`` of SciFact's corpus (``title + " " + text``, 256 tokens max), batches of 32.

* lsr-eval: :func:`lsr_eval.encode.batching.encode_window` over :class:`SpladeTextEncoder` (what ``lsr-eval encode``
  runs per window: length-sorted batches, chunked head, CSR output) in each precision of ``--precisions`` (default
  fp32, :data:`lsr_eval.models.options.DEFAULT_PRECISION`), the same weights, one after the other in every part. The
  first precision listed is the one compared with Pyserini and the roofline; each other one is compared with it:
  docs/s side by side and the agreement of the vectors (:func:`lsr_eval.evaluation.agreement.vector_agreement`).
  Whether bf16 is native here is read from the recorded machine (:func:`lsr_eval.hardware.describe`: CPU flags, GPUs), not assumed.
* Device (``--device``, default cpu): documents, Pyserini and the roofline run on it; the default is the CPU because
  that is where Pyserini's encoder and the roofline are compared (GPU encoding: ``pipelines/gpu_check.sh``). Query
  latency is a one-thread CPU figure whatever the device.
* Pyserini: ``SpladeDocumentEncoder.encode(batch, max_length=256)`` in corpus order (as its encode CLI feeds it),
  under ``torch.inference_mode`` (favourable to it), its ``model`` replaced by lsr-eval's loaded one so both compute
  the same function (MiniLM has no MLM head: Pyserini would load a random one; lsr-eval's identity head is kept).
  Its output (``round(w / 5 * 256)`` per term) is compared with lsr-eval's weights quantised the same way.
* Roofline: ``torch.mm`` of (T x E) hidden states by the (E x V) decoder in blocks of T = 8,192 tokens (one batch of
  32 x 256), output preallocated, as many tokens as the documents have real tokens; its GFLOP/s gives the head-bound
  limit ``GFLOP/s / (2 E V x real tokens per document)``. The three (lsr-eval, Pyserini, roofline) alternate part by
  part (``--part-batches`` batches), so load on a shared machine drifts evenly over them.
  The backbone's own work is not in that limit, so 100% is out of reach (MiniLM's backbone costs about as much as
  its head).
* Queries (``--query-models``): SciFact test + train queries, one at a time, one thread, interleaved query by query.
  ``lean``: ``SpladeEncoder.encode([q])`` (fast tokenizer backend, chunked head, sparsify on the pooled vector);
  ``reference``: the batched path of a batch of one with the full B x L x V logits (lsr-eval before the chunked
  head); ``pyserini``: ``SpladeQueryEncoder.encode(q)`` with lsr-eval's model. Fidelity: integer query vectors
  (``rint(100 w)``, top-k/threshold as configured) of ``lean`` against the batched reference path over all queries.

Pyserini's classes come from :mod:`lsr_eval.anserini.pyserini_modules` (the JVM started first, a dummy
``OPENAI_API_KEY``: ``pyserini.encode`` builds an OpenAI client at import). The machine may be shared: compare the
ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.efficiency.measure import rotation

from lsr_eval.models.arguments import add_device, add_precision, encoder_record, in_precision

REPO = Path(__file__).resolve().parents[1]
STAGE = "bench-encode"
#: Pyserini's quantisation of SPLADE weights: round(w / 5 * 256) (pyserini/encode/_splade.py).
PYSERINI_SCALE = 256 / 5
#: lsr-eval's impact scale (export): rint(w * scale).
SCALE = DEFAULT_SCALE
TARGET_VS_PYSERINI = 3.0
TARGET_ROOFLINE = 0.5
TARGET_QUERY_P50_MS = 1.0
TARGET_QUERY_FIDELITY = 0.99


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "beir" / "scifact"))
    p.add_argument("--models", nargs="+", default=["splade-tiny", "minilm"])
    p.add_argument("--query-models", nargs="*", default=["splade-tiny"])
    p.add_argument("--docs", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--part-batches", type=int, default=4,
                   help="batches per part: the paths alternate part by part (load drifts evenly over them)")
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--max-length-q", type=int, default=64)
    p.add_argument("--query-top-k", type=int, default=None, help="query sparsification (default: none)")
    p.add_argument("--queries", type=int, default=0, help="query limit (0: all test + train queries)")
    p.add_argument("--threads", type=int, default=0, help="torch threads for documents (0: torch's default)")
    add_precision(p, flag="--precisions", nargs="+",
                  note="; several are measured side by side, part by part, the first compared with Pyserini")
    add_device(p, "cpu", "Pyserini's encoder and the roofline are measured beside lsr-eval's on the same device, "
                         "and the CPU is where they are compared; GPU encoding: pipelines/gpu_check.sh")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if len(set(args.precisions)) != len(args.precisions):
        p.error(f"--precisions: each at most once, got {' '.join(args.precisions)}")
    return args


def read_docs(data: Path, n: int) -> list[str]:
    from lsr_eval.data.types import Document

    out = []
    with open(data / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append(Document(d["_id"], d.get("text", ""), d.get("title", "")).contents)
            if len(out) == n:
                break
    return out


def read_queries(data: Path, limit: int) -> list[tuple[str, str]]:
    judged = set()
    for split in ("test", "train"):
        with open(data / "qrels" / f"{split}.tsv", encoding="utf-8") as f:
            next(f)
            judged |= {line.split("\t")[0] for line in f if line.strip()}
    out = []
    with open(data / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            if q["_id"] in judged:
                out.append((q["_id"], q["text"]))
    return out[:limit] if limit else out


def synchronize(device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously; timings must include it)."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Roofline:
    """The head's matrix product on its own, (T x E) hidden states by the (E x V) decoder in float32, output
    preallocated, flop-matched to the tokens each part encodes, in two shapes: ``large`` blocks of 8,192 tokens
    (one batch of 32 x 256: a 1 GB output, bound by memory traffic) and ``cache`` blocks of 256 tokens x a vocabulary
    chunk that fits the L2 cache (:func:`lsr_eval.models.kernels.l2_cache_bytes`). The faster of the two is the
    roofline: what this machine's matrix product achieves on the head's arithmetic."""

    SHAPES = ("large", "cache")

    def __init__(self, weight, block: int = 8192, cache_tokens: int = 256) -> None:
        import torch

        from lsr_eval.models.kernels import chunk_size, l2_cache_bytes

        self.weight = weight
        self.h = torch.randn(block, weight.shape[1], device=weight.device)
        self.out = torch.empty(block, weight.shape[0], device=weight.device)
        self.block = block
        self.cache_tokens = cache_tokens
        self.cache_terms = chunk_size(cache_tokens, weight.shape[0], l2_cache_bytes() // 4)
        self.seconds = dict.fromkeys(self.SHAPES, 0.0)
        self.tokens = 0
        self.run(min(block, 1024))   # warm-up, not counted
        self.seconds = dict.fromkeys(self.SHAPES, 0.0)
        self.tokens = 0

    def run(self, tokens: int) -> None:
        import torch

        w = self.weight
        t = time.perf_counter()
        left = tokens
        while left > 0:
            n = min(left, self.block)
            torch.mm(self.h[:n], w.T, out=self.out[:n])
            left -= n
        synchronize(w.device)
        self.seconds["large"] += time.perf_counter() - t
        t = time.perf_counter()
        out = self.out.view(-1)[:self.cache_terms * self.cache_tokens].view(self.cache_terms, self.cache_tokens)
        left = tokens
        while left > 0:
            n = min(left, self.cache_tokens)
            ht = self.h[:n].T.contiguous()
            for v0 in range(0, w.shape[0], self.cache_terms):
                v1 = min(w.shape[0], v0 + self.cache_terms)
                torch.mm(w[v0:v1], ht, out=out[:v1 - v0, :n])
            left -= n
        synchronize(w.device)
        self.seconds["cache"] += time.perf_counter() - t
        self.tokens += tokens

    def gflops_of(self, shape: str) -> float:
        return 2 * self.tokens * self.weight.shape[1] * self.weight.shape[0] / self.seconds[shape] / 1e9

    @property
    def gflops(self) -> float:
        return max(self.gflops_of(s) for s in self.SHAPES)

    def describe(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "large_block_tokens": self.block, "cache_block": [self.cache_terms,
                self.cache_tokens], "seconds": dict(self.seconds),
                "gflops_by_shape": {s: self.gflops_of(s) for s in self.SHAPES}, "gflops": self.gflops}


def backbone_seconds(enc, texts: list[str], batch_size: int) -> float:
    """Seconds of the model without its decoder (tokeniser, transformer, head transform:
    :func:`lsr_eval.models.encoder.head_features`) over ``texts`` in length-sorted batches and in the precision the
    encoder resolves to, as the encoder feeds them: the part of encoding the head kernel cannot speed up (the limit
    built on it leaves out sparsification and CSR conversion, so it flatters the reachable speed slightly)."""
    import numpy as np
    import torch

    from lsr_eval.models.encoder import head_features

    order = np.argsort([-len(t) for t in texts], kind="stable")    # longest first, as encode_window
    device = enc.device
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=enc.resolved_precision().bf16)
    t = time.perf_counter()
    with torch.inference_mode(), autocast:
        for b0 in range(0, len(texts), batch_size):
            batch = enc.tokenize([texts[i] for i in order[b0:b0 + batch_size]])
            head_features(enc.mlm, batch["input_ids"].to(device), batch["attention_mask"].to(device))
    synchronize(device)
    return time.perf_counter() - t


def pyserini_classes():
    from lsr_eval.anserini.pyserini_modules import pyserini_encode

    encode = pyserini_encode()          # JVM started first, dummy OpenAI key
    return encode.SpladeDocumentEncoder, encode.SpladeQueryEncoder


def bench_documents(name: str, docs: list[str], args, PyDoc) -> dict[str, Any]:
    import numpy as np
    import scipy.sparse as sp
    import torch

    from lsr_eval.encode.batching import encode_window
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.splade import SpladeModel
    from lsr_eval.evaluation.agreement import vector_agreement as agreement

    device = resolve_device(args.device)
    path = resolve_model(name)
    model = SpladeModel.from_pretrained(path, max_length_d=args.max_length, max_length_q=args.max_length_q,
                                        precision=args.precisions[0]).to(device)
    enc = model.document   # the first precision: compared with Pyserini and the roofline
    encoders = {p: enc if i == 0 else in_precision(enc, p) for i, p in enumerate(args.precisions)}
    decoder = enc.mlm.get_output_embeddings()
    e, v = decoder.in_features, decoder.out_features
    roof = Roofline(decoder.weight.detach())
    text_encoders = {p: SpladeTextEncoder(x) for p, x in encoders.items()}
    for x in encoders.values():
        x.encode(docs[:4])   # warm-up
    py = PyDoc(path, device=str(device))
    py.model = enc.mlm   # the same function as lsr-eval's (see module docstring)
    py.model.eval()
    with torch.inference_mode():
        py.encode(docs[:4], max_length=args.max_length)

    # parts of ``part`` batches, each encoded by lsr-eval in every precision, then Pyserini, then the flop-matched
    # roofline product
    part = args.batch_size * args.part_batches
    ours_s = dict.fromkeys(encoders, 0.0)
    py_s = backbone_s = 0.0
    parts: dict[str, list] = {p: [] for p in encoders}
    n_tok, py_out = [], []
    for s0 in range(0, len(docs), part):
        chunk = docs[s0:s0 + part]
        for p, text_encoder in text_encoders.items():
            t = time.perf_counter()
            window = encode_window(chunk, text_encoder, args.batch_size)
            ours_s[p] += time.perf_counter() - t
            parts[p].append(window.weights)
            if p == args.precisions[0]:
                n_tok.append(window.n_tokens)
        t = time.perf_counter()
        with torch.inference_mode():
            for b0 in range(0, len(chunk), args.batch_size):
                py_out += py.encode(chunk[b0:b0 + args.batch_size], max_length=args.max_length)
        py_s += time.perf_counter() - t
        roof.run(int(n_tok[-1].sum()))
        backbone_s += backbone_seconds(enc, chunk, args.batch_size)
        print(f"  {s0 + len(chunk)} docs: lsr-eval " + ", ".join(f"{p} {x:.1f} s" for p, x in ours_s.items())
              + f", pyserini {py_s:.1f} s, roofline {roof.seconds['large']:.1f} / {roof.seconds['cache']:.1f} s",
              flush=True)

    weights = {p: sp.vstack(x, format="csr") for p, x in parts.items()}
    tokens = int(sum(int(x.sum()) for x in n_tok))

    # fidelity: lsr-eval's weights quantised as Pyserini does, special tokens left out of both
    vocab = enc.tokenizer.get_vocab()
    special = set(enc.tokenizer.all_special_tokens)
    same = 0
    diffs = []
    w = weights[args.precisions[0]]
    for i, d in enumerate(py_out):
        theirs = {vocab[k]: q for k, q in d.items() if k not in special and q != 0}
        row = w[i]
        q = np.rint(row.data.astype(np.float64) * PYSERINI_SCALE).astype(np.int64)
        ours = {int(j): int(x) for j, x in zip(row.indices, q) if x != 0}
        if ours == theirs:
            same += 1
        else:
            keys = set(ours) | set(theirs)
            diffs.append(max(abs(ours.get(k, 0) - theirs.get(k, 0)) for k in keys))

    flop_per_doc = 2 * e * v * tokens / len(docs)
    head_bound = roof.gflops * 1e9 / flop_per_doc
    # with this backbone as measured, the head at the roofline: the most this encoder could reach here
    with_backbone = len(docs) / (backbone_s + len(docs) / head_bound)
    ours_dps, py_dps = len(docs) / ours_s[args.precisions[0]], len(docs) / py_s
    first = args.precisions[0]
    precisions = {p: {**encoder_record(x), "seconds": ours_s[p], "docs_per_s": len(docs) / ours_s[p],
                      "speed_vs_first": ours_s[first] / ours_s[p],
                      "agreement_with_first": agreement(weights[first], weights[p]) if p != first else None}
                  for p, x in encoders.items()}
    return {
        "model": name, "path": str(path), "docs": len(docs), "real_tokens": tokens,
        "avg_real_tokens": tokens / len(docs), "hidden": e, "vocab": v, "batch_size": args.batch_size,
        "max_length": args.max_length, "device": str(device), "precision": enc.resolved_precision().to_dict(),
        "threads": torch.get_num_threads(),
        "lsr_eval": {"seconds": ours_s[first], "docs_per_s": ours_dps},
        "precisions": precisions,
        "pyserini": {"seconds": py_s, "docs_per_s": py_dps},
        "ratio_vs_pyserini": ours_dps / py_dps,
        "roofline": {**roof.describe(), "head_gflop_per_doc": flop_per_doc / 1e9,
                     "head_bound_docs_per_s": head_bound},
        "fraction_of_roofline": ours_dps / head_bound,
        "backbone": {"seconds": backbone_s, "docs_per_s": len(docs) / backbone_s,
                     "share_of_lsr_eval_time": backbone_s / ours_s[first],
                     "limit_docs_per_s": with_backbone, "fraction_of_limit": ours_dps / with_backbone},
        "fidelity_vs_pyserini": {"identical_docs": same, "docs": len(docs),
                                 "max_abs_diff_pyserini_units": max(diffs, default=0)},
        "targets": {"ratio_vs_pyserini": TARGET_VS_PYSERINI, "fraction_of_roofline": TARGET_ROOFLINE},
        "met": {"ratio_vs_pyserini": ours_dps / py_dps >= TARGET_VS_PYSERINI,
                "fraction_of_roofline": ours_dps / head_bound >= TARGET_ROOFLINE},
    }


def bench_queries(name: str, queries: list[tuple[str, str]], args, PyQuery) -> dict[str, Any]:
    import numpy as np
    import torch

    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.sparsify import Sparsify
    from lsr_eval.models.splade import SpladeModel

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        path = resolve_model(name)
        model = SpladeModel.from_pretrained(path, max_length_q=args.max_length_q, max_length_d=args.max_length,
                                            sparsify_q=Sparsify(top_k=args.query_top_k),
                                            precision=args.precisions[0])   # on the CPU (module doc)
        lean = model.query
        texts = [t for _, t in queries]

        def integer(row) -> dict[int, int]:
            q = np.rint(row.data.astype(np.float64) * SCALE).astype(np.int64)
            return {int(j): int(x) for j, x in zip(row.indices, q) if x != 0}

        # reference vectors: the batched path with the full logits (lsr-eval before the chunked head)
        lean.chunked = False
        ref = lean.encode(texts, batch_size=64, sparse=True).weights
        lean.chunked = True

        py = PyQuery(path, device="cpu")
        py.model = lean.mlm

        def run_lean(text):
            return lean.encode([text], sparse=True).weights

        def run_reference(text):   # without the chunked decoder, encode takes the batched path
            lean.chunked = False
            try:
                return lean.encode([text], sparse=True).weights
            finally:
                lean.chunked = True

        def run_pyserini(text):
            with torch.inference_mode():
                return py.encode(text, max_length=args.max_length_q)

        paths = {"lean": run_lean, "reference": run_reference, "pyserini": run_pyserini}
        times: dict[str, list[float]] = {k: [] for k in paths}
        names = list(paths)
        for text in texts[:10]:   # warm-up
            for f in paths.values():
                f(text)
        same, differing = 0, []
        for i, (qid, text) in enumerate(queries):
            for k in rotation(names, i):
                t = time.perf_counter()
                out = paths[k](text)
                times[k].append((time.perf_counter() - t) * 1e3)
                if k == "lean":
                    mine = integer(out[0])
            theirs = integer(ref[i])
            if mine == theirs:
                same += 1
            else:
                keys = sorted(set(mine) | set(theirs))
                differing.append({"id": qid, "text": text, "differences": {
                    lean.terms[k]: [theirs.get(k, 0), mine.get(k, 0)] for k in keys if mine.get(k) != theirs.get(k)}})
        summary = {k: {"p50_ms": statistics.median(v), "mean_ms": statistics.fmean(v),
                       "p90_ms": float(np.percentile(v, 90)), "n": len(v)} for k, v in times.items()}
        return {"model": name, "queries": len(queries), "threads": 1, "max_length_q": args.max_length_q,
                **encoder_record(lean),
                "query_top_k": args.query_top_k, "latency": summary,
                "fidelity": {"identical_integer_vectors": same, "queries": len(queries),
                             "fraction": same / len(queries), "differing": differing,
                             "reference": "batched path, full logits, batches of 64"},
                "targets": {"p50_ms": TARGET_QUERY_P50_MS, "fidelity": TARGET_QUERY_FIDELITY},
                "met": {"p50_ms": summary["lean"]["p50_ms"] <= TARGET_QUERY_P50_MS,
                        "fidelity": same / len(queries) >= TARGET_QUERY_FIDELITY}}
    finally:
        torch.set_num_threads(threads)


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
    from lsr_eval.evaluation.agreement import vector_agreement_text as agreement_text

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
            f"| {d['model']} | {d['precision']['name']} ({d['precision']['reason']}) | {d['lsr_eval']['docs_per_s']:.1f} "
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
    """The summary of a results folder of this script, made again from its raw file (``bench_encode.json``): what
    tests/test_committed_results.py compares with the committed one."""
    return {"summary.md": summary_md(json.loads((folder / "bench_encode.json").read_text(encoding="utf-8")))}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    from lsr_eval.manifest import machine, write_manifest

    if args.threads:
        torch.set_num_threads(args.threads)
    PyDoc, PyQuery = pyserini_classes()
    data = Path(args.data)
    docs = read_docs(data, args.docs)
    queries = read_queries(data, args.queries)
    result: dict[str, Any] = {
        "parameters": {"docs": len(docs), "batch_size": args.batch_size, "max_length": args.max_length,
                       "max_length_q": args.max_length_q, "models": args.models, "query_models": args.query_models,
                       "precisions": args.precisions, "device": args.device},
        "torch_threads": torch.get_num_threads(),
        "load_average": {"start": list(os.getloadavg())}, "documents": [], "queries": []}
    for name in args.models:
        print(f"documents: {name}", flush=True)
        result["documents"].append(bench_documents(name, docs, args, PyDoc))
        print(json.dumps({k: result["documents"][-1][k] for k in ("lsr_eval", "pyserini", "ratio_vs_pyserini",
                                                                  "fraction_of_roofline")}), flush=True)
    for name in args.query_models:
        print(f"queries: {name}", flush=True)
        result["queries"].append(bench_queries(name, queries, args, PyQuery))
        print(json.dumps(result["queries"][-1]["latency"]), flush=True)
    result["load_average"]["end"] = list(os.getloadavg())
    result["machine"] = machine()   # after the models ran: the GPUs are described when CUDA was used
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = summary_md(result)
    (out / "bench_encode.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(text, encoding="utf-8")
    write_manifest(out, STAGE, {"bench": "encode", **result["parameters"]},
                   outputs=["bench_encode.json", "summary.md"],
                   figures={d["model"]: {"lsr_eval_docs_per_s": d["lsr_eval"]["docs_per_s"],
                                         "pyserini_docs_per_s": d["pyserini"]["docs_per_s"],
                                         "ratio": d["ratio_vs_pyserini"],
                                         "fraction_of_roofline": d["fraction_of_roofline"],
                                         "docs_per_s_by_precision": {p: x["docs_per_s"]
                                                                     for p, x in d["precisions"].items()}}
                            for d in result["documents"]})
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
