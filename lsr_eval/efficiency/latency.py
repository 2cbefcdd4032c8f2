"""Per-query latency of the SPLADE query path on one CPU thread: encode the text, quantise it to an integer weight
map, search the Anserini impact index for the top ``k``; BM25 search of the same text for reference.

Design notes: docs/design.md."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, Sequence

from lsr_eval.data.types import Query
from lsr_eval.efficiency.passes import engine_calls, pooled_samples
from lsr_eval.efficiency.protocol import PASSES, WARMUP
from lsr_eval.efficiency.stats import percentile
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export.quantize import DEFAULT_SCALE, VocabCheck, check_scale, quantize_rows, row_weight_map
from lsr_eval.manifest import machine
from lsr_eval.models.onnx_query import query_encoder
from lsr_eval.search.params import check_k, check_threads
from lsr_eval.settings import check


@dataclass(frozen=True)
class LatencySummary:
    """Summary of ``n`` per-query times, in milliseconds."""

    n: int
    mean_ms: float
    p50_ms: float
    p99_ms: float
    min_ms: float
    max_ms: float

    @classmethod
    def from_ms(cls, samples: Sequence[float]) -> LatencySummary:
        if not samples:
            raise InputError("no latency samples to summarise")
        return cls(len(samples), sum(samples) / len(samples), percentile(samples, 50), percentile(samples, 99),
                   min(samples), max(samples))

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class QueryWeights:
    """Text -> ``{term: impact}`` with a :class:`~lsr_eval.models.SpladeEncoder`: its max length, sparsification and
    precision (``bf16`` True/False forces bf16/fp32),
    then ``rint(w * scale)`` with zeros dropped, exactly as :func:`lsr_eval.export.query_weight_maps` (the term
    table is checked once here, not per query). ``runtime`` (``torch`` or ``onnx``,
    :data:`~lsr_eval.models.onnx_query.QUERY_RUNTIMES`) selects the encoder's runtime
    (:func:`~lsr_eval.models.onnx_query.query_encoder`; ``work_dir`` caches the ONNX export); ``onnx`` is float32
    only."""

    def __init__(self, encoder, scale: float = DEFAULT_SCALE, bf16: bool | None = None, *, runtime: str = "torch",
                 work_dir=None) -> None:
        self.scale = check_scale(scale)
        if bf16 and runtime == "onnx":
            raise ConfigError("query_runtime='onnx' computes in float32 only; bf16 needs query_runtime='torch'")
        self.encoder = query_encoder(encoder, runtime, work_dir=work_dir)
        self.runtime = runtime
        self.bf16 = bf16
        #: what the encoder computes in (its own precision unless ``bf16`` forces one), recorded with the timings
        self.precision = self.encoder.resolved_precision(None if bf16 is None else "bf16" if bf16 else "fp32")
        self._vocab = VocabCheck(self.encoder.terms)
        #: one query's ``(ids, weights)`` without a matrix, where the encoder has it (the ONNX path)
        self._row = getattr(self.encoder, "query_row", None) if bf16 is None else None

    def __call__(self, text: str, qid: str = "query", stats: dict[str, float] | None = None) -> dict[str, int]:
        """The weight map of ``text``; ``stats`` (if given) gets added the seconds of the encoder's parts (where it
        reports them, e.g. :meth:`~lsr_eval.models.onnx_query.OnnxQueryEncoder.query_row`; else ``encode``) and of
        ``weight_map`` (quantisation and the term strings)."""
        clock = time.perf_counter
        t0 = clock()
        if self._row is not None:   # one row without a matrix (the ONNX path)
            idx, val = self._row(text, stats)
            t1 = clock()
            out = row_weight_map(idx, val, self._vocab, self.scale, qid)
        else:
            row = self.encoder.encode([text], batch_size=1, sparse=True, bf16=self.bf16).weights.tocsr()
            t1 = clock()
            if stats is not None:
                stats["encode"] = stats.get("encode", 0.0) + t1 - t0
            q = quantize_rows(row, [qid], self._vocab, self.scale, what="query")
            out = dict(zip(self._vocab.tokens[q.indices].tolist(), q.values.tolist()))
        if stats is not None:
            stats["weight_map"] = stats.get("weight_map", 0.0) + clock() - t1
        return out


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """``torch.set_num_threads(n)`` inside the block, the previous value restored after."""
    import torch

    check_threads(n)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def timed(fn: Callable[[Query], Any], queries: Sequence[Query], warmup: int) -> tuple[list[float], list[Any]]:
    """Run ``fn`` on every query in order; milliseconds and results of the queries after the first ``warmup``."""
    ms, results = [], []
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        r = fn(q)
        dt = (time.perf_counter() - t0) * 1e3
        if i >= warmup:
            ms.append(dt)
            results.append(r)
    return ms, results


@dataclass
class LatencyReport:
    """Latency summaries (``encode``, ``search``, ``total``; ``encode_bf16`` and ``bm25`` when measured), the
    protocol, the machine, and per-query samples (ms, in ``measured_ids`` order; with ``passes``, the search and
    total of each pass after the other)."""

    warmup: int
    measured_ids: list[str]
    k: int
    threads: int
    scale: float
    encode: LatencySummary
    search: LatencySummary
    total: LatencySummary
    runtime: str = "torch"
    passes: int | None = None
    precision: dict[str, str] = field(default_factory=dict)
    device: str = "cpu"
    encode_bf16: LatencySummary | None = None
    bm25: LatencySummary | None = None
    mean_query_terms: float = 0.0
    mean_hits: float = 0.0
    machine: dict[str, Any] = field(default_factory=machine)
    samples: dict[str, list[float]] = field(default_factory=dict)

    def to_dict(self, samples: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "queries_measured": len(self.measured_ids), "warmup_queries": self.warmup, "k": self.k,
            "torch_threads": self.threads, "search_threads": 1, "scale": self.scale, "query_runtime": self.runtime,
            **({"timed_passes": self.passes} if self.passes is not None else {}),
            "precision": self.precision, "device": self.device,
            "mean_query_terms": self.mean_query_terms, "mean_hits": self.mean_hits,
            "latency_ms": {name: s.to_dict() for name, s in (
                ("encode", self.encode), ("search", self.search), ("total", self.total),
                ("encode_bf16", self.encode_bf16), ("bm25", self.bm25)) if s is not None},
            "machine": self.machine,
        }
        if samples:
            out["samples_ms"] = self.samples
            out["measured_ids"] = self.measured_ids
        return out


def measure_latency(queries: Sequence[Query], encoder, searcher, *, k: int = 1000, scale: float = DEFAULT_SCALE,
                    warmup: int = 10, bm25=None, bf16: bool = False, threads: int = 1, runtime: str = "torch",
                    work_dir=None, passes: int | None = None) -> LatencyReport:
    """Measure the query path (see docs/design.md) of ``encoder`` (a :class:`~lsr_eval.models.SpladeEncoder`) over
    ``searcher`` (an :class:`~lsr_eval.anserini.searcher.ImpactSearcher`); ``bm25`` (a ``Bm25Searcher``) adds
    BM25 search of the texts; ``bf16`` adds a second encoding pass under bf16 autocast (fast only on CPUs with
    AVX-512 BF16/AMX or GPUs; on AVX2-only CPUs it is many times slower than float32). ``runtime`` (``torch`` or
    ``onnx``) selects the query encoder's runtime (:class:`QueryWeights`); the bf16 pass always runs on torch.
    ``passes`` times search with PISA's protocol (:mod:`lsr_eval.efficiency.passes`): every query encoded (timed) and
    searched (its hits), then the engine's own call of every query, one untimed pass and ``passes`` timed ones,
    pooled (``search`` and ``total`` hold ``n x passes`` samples, pass after pass; ``encode`` ``n``); None: each
    query's search as it comes."""
    check("warmup", warmup, int, WARMUP)
    check_k(k)
    if passes is not None:
        check("passes", passes, int, PASSES)
    if len(queries) <= warmup:
        raise InputError(f"{len(queries)} queries leave none to measure after {warmup} warm-up queries")
    to_weights = QueryWeights(encoder, scale, runtime=runtime, work_dir=work_dir)  # the run's precision
    enc_ms: list[float] = []
    search_ms: list[float] = []
    terms = hits = 0
    maps = []
    with torch_threads(threads):
        for i, q in enumerate(queries):
            t0 = time.perf_counter()
            weights = to_weights(q.text, q.id)
            t1 = time.perf_counter()
            found = searcher.search(weights, k, qid=q.id)
            t2 = time.perf_counter()
            if i >= warmup:
                enc_ms.append((t1 - t0) * 1e3)
                search_ms.append((t2 - t1) * 1e3)
                terms += len(weights)
                hits += len(found)
                maps.append(weights)
        if passes is not None:  # PISA's protocol over the engine's own call (the search times above dropped)
            pooled = pooled_samples(enc_ms, engine_calls(searcher, maps, k), passes)
            search_ms = pooled["search"]
        bf16_ms = None
        if bf16:
            to_bf16 = QueryWeights(encoder, scale, bf16=True)
            bf16_ms, _ = timed(lambda q: to_bf16(q.text, q.id), queries, warmup)
        bm25_ms = None
        if bm25 is not None:
            bm25_ms, _ = timed(lambda q: bm25.search(q.text, k), queries, warmup)
    measured = [q.id for q in queries[warmup:]]
    total_ms = pooled["total"] if passes is not None else [a + b for a, b in zip(enc_ms, search_ms)]
    samples = {"encode": enc_ms, "search": search_ms, "total": total_ms}
    if bf16_ms is not None:
        samples["encode_bf16"] = bf16_ms
    if bm25_ms is not None:
        samples["bm25"] = bm25_ms
    return LatencyReport(
        warmup=warmup, measured_ids=measured, k=k, threads=threads, scale=to_weights.scale, runtime=runtime,
        passes=passes,
        precision=to_weights.precision.to_dict(), device=str(getattr(to_weights.encoder, "device", "cpu")),
        encode=LatencySummary.from_ms(enc_ms), search=LatencySummary.from_ms(search_ms),
        total=LatencySummary.from_ms(total_ms),
        encode_bf16=LatencySummary.from_ms(bf16_ms) if bf16_ms is not None else None,
        bm25=LatencySummary.from_ms(bm25_ms) if bm25_ms is not None else None,
        mean_query_terms=terms / len(measured), mean_hits=hits / len(measured),
        samples=samples)


# ---- side-by-side query paths -------------------------------------------------------------------------------------

#: Parts of the query path reported by :func:`query_path` (ms each), in the order they run; ``encode`` is the whole
#: encoder where it does not report its parts (the torch path).
PARTS: tuple[str, ...] = ("tokenize", "session", "select", "exact_session", "sparsify", "encode", "weight_map",
                          "search")


def query_path(weights: QueryWeights, searcher, k: int, search: str = "search") -> Callable[[Query], dict]:
    """One query through ``weights`` (text -> weight map) and ``searcher.<search>`` (hits read into Python); the
    result has ``encode`` / ``search`` / ``total`` ms, the ms of each part of :data:`PARTS` the path reports
    (``parts``), the weight map, its size (``terms``) and the hits."""
    search_fn = getattr(searcher, search)

    def run(q: Query) -> dict:
        stats: dict[str, float] = {}
        t0 = time.perf_counter()
        weights_map = weights(q.text, q.id, stats)
        t1 = time.perf_counter()
        hits = search_fn(weights_map, k, qid=q.id)
        t2 = time.perf_counter()
        parts = {p: stats[p] * 1e3 for p in PARTS if p in stats}
        parts["search"] = (t2 - t1) * 1e3
        return {"encode": (t1 - t0) * 1e3, "search": (t2 - t1) * 1e3, "total": (t2 - t0) * 1e3, "parts": parts,
                "candidates": stats.get("candidates"), "terms": len(weights_map), "hits": hits,
                "weights": weights_map}

    return run
