"""Query-path latency on a tiny model and tiny Anserini indexes: structure, warm-up exclusion, thread handling."""

from __future__ import annotations

import json

import pytest
import torch
from tiny_models import BUILTIN_TEXT, tiny_bert

from lsr_eval.anserini.collections import write_json_collection
from lsr_eval.anserini.indexer import build_index
from lsr_eval.anserini.searcher import Bm25Searcher, ImpactSearcher
from lsr_eval.data.types import Document, Query
from lsr_eval.efficiency.latency import LatencySummary, QueryWeights, measure_latency, timed, torch_threads
from lsr_eval.encode import encode_queries
from lsr_eval.encode.splade import SpladeTextEncoder
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export import query_weight_maps
from lsr_eval.models import Sparsify, SpladeEncoder

QUERIES = [Query(f"q{i}", t) for i, t in enumerate(["aspirin heart attack", "lung cancer smoking", "insulin diabetes",
                                                      "bone loss vitamin", "malaria mosquitoes", "sleep memory"])]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny SPLADE encoder, an impact index of its document vectors, a BM25 index of the same texts."""
    tmp = tmp_path_factory.mktemp("latency")
    encoder = SpladeEncoder.from_pretrained(tiny_bert(), 32, sparsify=Sparsify(top_k=16))
    to_weights = QueryWeights(encoder)
    docs = [Document(f"d{i}", t) for i, t in enumerate(BUILTIN_TEXT)]
    (tmp / "vcoll").mkdir()
    with open(tmp / "vcoll" / "docs-00000.jsonl", "w") as f:
        for d in docs:
            f.write(json.dumps({"id": d.id, "contents": "", "vector": to_weights(d.text)}) + "\n")
    build_index(tmp / "vcoll", tmp / "impact", "impact", threads=1)
    write_json_collection(docs, tmp / "coll")
    build_index(tmp / "coll", tmp / "bm25", "bm25-flat", threads=1)
    with ImpactSearcher(str(tmp / "impact")) as impact, Bm25Searcher(str(tmp / "bm25")) as bm25:
        yield encoder, impact, bm25


def test_query_weights_equal_the_batch_export(setup):
    encoder = setup[0]
    batch = query_weight_maps(encode_queries(QUERIES, SpladeTextEncoder(encoder)).vectors, 100)
    one = QueryWeights(encoder, 100)
    assert {q.id: one(q.text, q.id) for q in QUERIES} == batch
    assert all(0 < len(m) <= 16 for m in batch.values())


def test_measure_latency_structure_and_warmup_exclusion(setup):
    encoder, impact, bm25 = setup
    threads_before = torch.get_num_threads()
    report = measure_latency(QUERIES, encoder, impact, k=5, warmup=2, bm25=bm25)
    assert torch.get_num_threads() == threads_before  # restored after the measurement
    assert report.measured_ids == ["q2", "q3", "q4", "q5"] and report.warmup == 2
    for name in ("encode", "search", "total", "bm25"):
        s = getattr(report, name)
        assert s.n == 4 and len(report.samples[name]) == 4
        assert 0 < s.min_ms <= s.p50_ms <= s.p99_ms <= s.max_ms
    assert report.encode_bf16 is None and "encode_bf16" not in report.samples
    assert report.samples["total"] == pytest.approx([a + b for a, b in zip(report.samples["encode"],
                                                                            report.samples["search"])])
    assert report.total.mean_ms == pytest.approx(report.encode.mean_ms + report.search.mean_ms)
    assert 0 < report.mean_query_terms <= 16 and 0 < report.mean_hits <= 5
    d = report.to_dict()
    assert d["queries_measured"] == 4 and d["warmup_queries"] == 2 and d["torch_threads"] == 1
    assert set(d["latency_ms"]) == {"encode", "search", "total", "bm25"} and "samples_ms" not in d
    assert d["machine"]["cores"] >= 1 and "cpu" in d["machine"]
    assert report.to_dict(samples=True)["measured_ids"] == report.measured_ids
    json.dumps(report.to_dict(samples=True))


def test_bf16_pass_on_two_queries(setup):
    # bf16 is many times slower than float32 on AVX2-only CPUs: two tiny queries only
    encoder, impact, _ = setup
    report = measure_latency(QUERIES[:3], encoder, impact, k=3, warmup=1, bf16=True)
    assert report.encode_bf16.n == 2 and report.bm25 is None


def test_torch_threads_inside_the_block():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ConfigError):
        with torch_threads(0):
            pass


def test_timed_counts_only_after_warmup():
    calls = []
    ms, results = timed(lambda q: calls.append(q.id) or q.id.upper(), QUERIES, 4)
    assert calls == [q.id for q in QUERIES] and results == ["Q4", "Q5"] and len(ms) == 2


def test_summary_and_validation(setup):
    s = LatencySummary.from_ms([4.0, 1.0, 3.0, 2.0])
    assert (s.n, s.mean_ms, s.p50_ms, s.min_ms, s.max_ms) == (4, 2.5, 2.5, 1.0, 4.0)
    assert s.p99_ms == pytest.approx(3.97)
    encoder, impact, _ = setup
    with pytest.raises(InputError, match="none to measure"):
        measure_latency(QUERIES[:2], encoder, impact, warmup=2)
    with pytest.raises(ConfigError, match="warmup"):
        measure_latency(QUERIES, encoder, impact, warmup=-1)


def test_measure_latency_with_pisas_protocol_pools_the_timed_passes(setup):
    """passes=2: every query encoded and searched once (its hits), then PISA's protocol over the measured ones: an
    untimed pass and two timed ones, pooled."""
    encoder, impact, _ = setup
    calls = []
    search = impact.search

    class Counting:   # the Anserini searcher has no engine_call: its search is what the passes time
        def search(self, weights, k, qid="query"):
            calls.append(qid)
            return search(weights, k, qid=qid)

    report = measure_latency(QUERIES, encoder, Counting(), k=5, warmup=2, passes=2)
    assert len(calls) == 6 + 4 * 3        # every query once (warm-up ones too), then the 4 measured: 1 + 2 passes
    assert report.encode.n == 4 and report.search.n == 8 and report.total.n == 8
    assert report.samples["total"] == pytest.approx([report.samples["encode"][i % 4] + s
                                                     for i, s in enumerate(report.samples["search"])])
    assert report.to_dict()["timed_passes"] == 2 and "timed_passes" not in measure_latency(
        QUERIES[:3], encoder, impact, k=5, warmup=1).to_dict()
