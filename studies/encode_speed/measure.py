"""Encoding speed (studies/encode_speed/run.py): lsr-eval's document and query encoders against Pyserini's SPLADE
encoders on the same weights, each precision against the first, and the head's matrix product on its own (the
roofline) as the bound a document encoder can reach."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from lsr_eval.commands.options import add_device, add_precision
from lsr_eval.defaults import DEFAULT_SCALE
from studies.harness.measure import rotation

if TYPE_CHECKING:
    from lsr_eval.models.encoder import SpladeEncoder

REPO = Path(__file__).resolve().parents[2]
STAGE = "bench-encode"
#: Pyserini's quantisation of SPLADE weights: round(w / 5 * 256) (pyserini/encode/_splade.py).
PYSERINI_SCALE = 256 / 5
#: lsr-eval's impact scale (export): rint(w * scale).
SCALE = DEFAULT_SCALE
TARGET_VS_PYSERINI = 3.0
TARGET_ROOFLINE = 0.5
TARGET_QUERY_P50_MS = 1.0
TARGET_QUERY_FIDELITY = 0.99


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
    """Document encoding of model ``name`` over ``docs``: lsr-eval in each precision against Pyserini's encoder on
    the same weights, the roofline and the backbone's own time as bounds, and Pyserini's quantised vectors compared."""
    import scipy.sparse as sp
    import torch

    from studies.harness.agreement import vector_agreement as agreement

    setup = _document_setup(name, docs, args, PyDoc)
    enc, roof, e, v = setup.enc, setup.roof, setup.hidden, setup.vocab
    times = _time_documents(setup, docs, args)
    ours_s, py_s, backbone_s = times.ours_s, times.py_s, times.backbone_s
    weights = {p: sp.vstack(x, format="csr") for p, x in times.parts.items()}
    tokens = int(sum(int(x.sum()) for x in times.n_tok))
    same, diffs = _pyserini_fidelity(enc.tokenizer, weights[args.precisions[0]], times.py_out)

    flop_per_doc = 2 * e * v * tokens / len(docs)
    head_bound = roof.gflops * 1e9 / flop_per_doc
    # with this backbone as measured, the head at the roofline: the most this encoder could reach here
    with_backbone = len(docs) / (backbone_s + len(docs) / head_bound)
    ours_dps, py_dps = len(docs) / ours_s[args.precisions[0]], len(docs) / py_s
    first = args.precisions[0]
    precisions = {p: {**x.runtime(), "seconds": ours_s[p], "docs_per_s": len(docs) / ours_s[p],
                      "speed_vs_first": ours_s[first] / ours_s[p],
                      "agreement_with_first": agreement(weights[first], weights[p]) if p != first else None}
                  for p, x in setup.encoders.items()}
    return {
        "model": name, "path": str(setup.path), "docs": len(docs), "real_tokens": tokens,
        "avg_real_tokens": tokens / len(docs), "hidden": e, "vocab": v, "batch_size": args.batch_size,
        "max_length": args.max_length, "device": str(setup.device), "precision": enc.resolved_precision().to_dict(),
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


@dataclass
class _DocumentSetup:
    """What :func:`bench_documents` measures, loaded and warmed up: lsr-eval's encoder per precision (the first,
    ``enc``, compared with Pyserini and the roofline), Pyserini's encoder on the same model, and the roofline."""

    device: Any
    path: Path
    encoders: dict[str, SpladeEncoder]
    roof: Roofline
    py: Any

    @property
    def enc(self) -> SpladeEncoder:
        """The encoder in the first precision."""
        return next(iter(self.encoders.values()))

    @property
    def hidden(self) -> int:
        return self.enc.mlm.get_output_embeddings().in_features

    @property
    def vocab(self) -> int:
        return self.enc.mlm.get_output_embeddings().out_features


def _document_setup(name: str, docs: list[str], args: argparse.Namespace, PyDoc: Callable[..., Any]) -> _DocumentSetup:
    """Load model ``name`` in every precision and Pyserini's encoder on the same function, each warmed up on the
    first documents, so that the timed parts hold no first-call costs."""
    import torch

    from lsr_eval.models.device import resolve_device
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.models.splade import SpladeModel

    device = resolve_device(args.device)
    path = resolve_model(name)
    model = SpladeModel.from_pretrained(path, max_length_d=args.max_length, max_length_q=args.max_length_q,
                                        precision=args.precisions[0]).to(device)
    enc = model.document   # the first precision: compared with Pyserini and the roofline
    encoders = {p: enc if i == 0 else enc.in_precision(p) for i, p in enumerate(args.precisions)}
    roof = Roofline(enc.mlm.get_output_embeddings().weight.detach())
    for x in encoders.values():
        x.encode(docs[:4])   # warm-up
    py = PyDoc(path, device=str(device))
    py.model = enc.mlm   # the same function as lsr-eval's (see module docstring)
    py.model.eval()
    with torch.inference_mode():
        py.encode(docs[:4], max_length=args.max_length)
    return _DocumentSetup(device=device, path=path, encoders=encoders, roof=roof, py=py)


@dataclass
class _DocumentTimes:
    """The timed parts' totals: seconds per precision (lsr-eval), Pyserini's and the backbone's seconds, the
    weights and real token counts per part, and Pyserini's vectors in document order."""

    ours_s: dict[str, float]
    py_s: float
    backbone_s: float
    parts: dict[str, list]
    n_tok: list
    py_out: list


def _time_documents(setup: _DocumentSetup, docs: list[str], args: argparse.Namespace) -> _DocumentTimes:
    """Encode ``docs`` part by part, each part by lsr-eval in every precision, then Pyserini, then the flop-matched
    roofline product and the backbone alone: the paths alternate so load drifts evenly over them."""
    import torch

    from lsr_eval.encode.batching import encode_window
    from lsr_eval.encode.splade import SpladeTextEncoder

    enc, py, roof = setup.enc, setup.py, setup.roof
    text_encoders = {p: SpladeTextEncoder(x) for p, x in setup.encoders.items()}
    part = args.batch_size * args.part_batches
    ours_s = dict.fromkeys(setup.encoders, 0.0)
    py_s = backbone_s = 0.0
    parts: dict[str, list] = {p: [] for p in setup.encoders}
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
    return _DocumentTimes(ours_s=ours_s, py_s=py_s, backbone_s=backbone_s, parts=parts, n_tok=n_tok, py_out=py_out)


def _pyserini_fidelity(tokenizer: Any, w: Any, py_out: list[dict[str, int]]) -> tuple[int, list[int]]:
    """lsr-eval's weights ``w`` quantised as Pyserini does against Pyserini's vectors, special tokens left out of
    both: (documents identical, per differing document its largest absolute difference)."""
    import numpy as np

    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_tokens)
    same = 0
    diffs = []
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
    return same, diffs


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
                **lean.runtime(),
                "query_top_k": args.query_top_k, "latency": summary,
                "fidelity": {"identical_integer_vectors": same, "queries": len(queries),
                             "fraction": same / len(queries), "differing": differing,
                             "reference": "batched path, full logits, batches of 64"},
                "targets": {"p50_ms": TARGET_QUERY_P50_MS, "fidelity": TARGET_QUERY_FIDELITY},
                "met": {"p50_ms": summary["lean"]["p50_ms"] <= TARGET_QUERY_P50_MS,
                        "fidelity": same / len(queries) >= TARGET_QUERY_FIDELITY}}
    finally:
        torch.set_num_threads(threads)


def parse_args(argv: list[str] | None = None, description: str | None = None) -> argparse.Namespace:
    """The options of studies/encode_speed/run.py (``description``: its help's first paragraph)."""
    p = argparse.ArgumentParser(description=description)
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
    """The contents (title and text) of the first ``n`` documents of a BEIR folder's ``corpus.jsonl``."""
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
    """(id, text) of a BEIR folder's queries judged in its test or train qrels, the first ``limit`` (0: all)."""
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
