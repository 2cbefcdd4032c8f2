"""BM25 FLOPs (expected postings per query-document pair over the BM25 index) and fusion cost, hand-computed."""

from __future__ import annotations

import math

import pytest

from lsr_eval.efficiency.fusion_cost import fused_flops, fused_latency, fusion_cost
from lsr_eval.efficiency.term_flops import term_flops
from lsr_eval.errors import ConfigError, InputError


def test_term_flops_hand_computed():
    # N = 4, df = {a: 2, b: 1, c: 0}; p_q = {a: 2/2, b: 1/2}: 1 * 2/4 + 0.5 * 1/4 = 0.625
    r = term_flops([["a", "b", "a"], ["a"]], {"a": 2, "b": 1, "c": 0}, 4)
    assert r.flops == pytest.approx(0.625)
    assert r.postings_per_query == pytest.approx(2.5)  # (2 + 1 + 2) / 2 postings touched per query
    assert (r.queries, r.empty_queries, r.distinct_query_terms, r.mean_query_terms) == (2, 0, 2, 1.5)


def test_term_flops_equals_the_sum_over_terms_of_pq_times_pd():
    queries = [["x", "y"], ["y", "z"], [], ["x"]]
    df = {"x": 3, "y": 10, "z": 0}
    n = 20
    pq = {"x": 2 / 4, "y": 2 / 4, "z": 1 / 4}
    expected = sum(pq[t] * df[t] / n for t in pq)  # 0.5 * 0.15 + 0.5 * 0.5 + 0 = 0.325
    r = term_flops(queries, df, n)
    assert r.flops == pytest.approx(expected) == pytest.approx(0.325)
    assert r.empty_queries == 1


def test_term_flops_refuses_missing_df_and_empty_input():
    with pytest.raises(InputError, match="'b'"):
        term_flops([["a", "b"]], {"a": 1}, 3)
    with pytest.raises(InputError, match="outside"):
        term_flops([["a"]], {"a": 5}, 3)
    with pytest.raises(InputError):
        term_flops([], {}, 3)
    with pytest.raises(InputError):
        term_flops([["a"]], {"a": 0}, 0)


def test_fusion_cost_sums_flops_and_combines_latency_per_query():
    assert fused_flops([1.5, 2.0]) == 3.5
    seq = fused_latency({"a": [1, 4], "b": [2, 2]}, "sequential")
    par = fused_latency({"a": [1, 4], "b": [2, 2]}, "parallel")
    assert (seq.mean_ms, seq.p50_ms, seq.max_ms) == (4.5, 4.5, 6)
    assert (par.mean_ms, par.min_ms, par.max_ms) == (3, 2, 4)
    cost = fusion_cost([1.0, 2.0], {"a": [1, 4], "b": [2, 2]})
    row = cost.row()
    assert row["flops"] == 3.0 and row["latency_mean_ms"] == 4.5 and row["latency_parallel_mean_ms"] == 3
    with pytest.raises(ConfigError, match="sequential, parallel"):
        fused_latency({"a": [1]}, "both")
    with pytest.raises(InputError, match="different numbers"):
        fused_latency({"a": [1, 2], "b": [1]})


def test_fusion_cost_is_none_when_a_part_lacks_it():
    cost = fusion_cost([1.0, None], {"a": [1.0], "b": None})
    assert cost.flops is None and cost.sequential is None and cost.row() == {}
    assert not math.isnan(fusion_cost([1.0, 2.0], {"a": None}).flops)


def test_bm25_flops_over_an_anserini_index(tmp_path):
    from lsr_eval.anserini.collections import write_json_collection
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.anserini.term_stats import TermStats
    from lsr_eval.data.types import Document

    docs = [Document("a", "the cat sat on the mat"), Document("b", "dogs chase cats", title="Dogs"),
            Document("c", "a bird in the hand"), Document("d", "cat cat cat")]
    write_json_collection(docs, tmp_path / "coll")
    build_index(tmp_path / "coll", tmp_path / "idx", "bm25-flat", threads=1)
    with TermStats(str(tmp_path / "idx")) as stats:
        # Porter stemming and English stop words, as BM25 search analyses queries
        queries = [stats.analyze("Cats and dogs"), stats.analyze("the zebra")]
        assert queries == [["cat", "dog"], ["zebra"]]
        df = stats.doc_freqs(t for q in queries for t in q)
        assert df == {"cat": 3, "dog": 1, "zebra": 0}  # cat: a, b, d; dog: b (title and text)
        assert stats.documents == 4
        # analysed terms: a {cat, sat, mat}, b {dog, chase, cat}, c {bird, hand}, d {cat}: 9 postings
        assert stats.postings == 9
        assert stats.all_doc_freqs() == {"cat": 3, "sat": 1, "mat": 1, "dog": 1, "chase": 1, "bird": 1, "hand": 1}
    r = term_flops(queries, df, 4)
    assert r.flops == pytest.approx(((3 + 1) / 4 + 0) / 2)  # 0.5
    assert r.postings_per_query == pytest.approx(2.0)
