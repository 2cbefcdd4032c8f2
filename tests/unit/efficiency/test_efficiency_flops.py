"""Expected FLOPs, posting-list statistics and percentiles, on hand-computed examples."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.efficiency.flops import (
    TermCounter,
    count_encoding,
    count_matrix,
    count_weight_maps,
    expected_flops,
    flops_report,
)
from lsr_eval.efficiency.postings import folder_bytes, posting_stats
from lsr_eval.efficiency.stats import percentile
from lsr_eval.encode import SparseVectors, write_vectors
from lsr_eval.errors import ConfigError, InputError

VOCAB = ["a", "b", "c", "d"]
# 3 documents x 4 terms. With scale 100: 0.004 -> rint(0.4) = 0 (not indexed); 0.005 (float32 0.00499..) -> 0.
DOCS = np.array([[0.5, 0.0, 0.004, 0.0],
                 [1.2, 0.3, 0.0, 0.0],
                 [0.0, 0.2, 0.0, 0.9]], dtype=np.float32)
# 2 queries: q1 = {a, c}, q2 = {d}
QUERIES = np.array([[0.7, 0.0, 0.5, 0.0],
                    [0.0, 0.0, 0.0, 0.8]], dtype=np.float32)


def test_counts_and_flops_hand_computed_for_both_active_rules():
    d_imp = count_matrix(sp.csr_matrix(DOCS), "impact", 100)
    d_w = count_matrix(sp.csr_matrix(DOCS), "weight")
    q = count_matrix(sp.csr_matrix(QUERIES))
    assert d_imp.df.tolist() == [2, 2, 0, 1] and d_w.df.tolist() == [2, 2, 1, 1]
    assert q.df.tolist() == [1, 0, 1, 1] and q.n == 2
    # impact: p_d = [2/3, 2/3, 0, 1/3], p_q = [1/2, 0, 1/2, 1/2] -> 1/3 + 0 + 0 + 1/6 = 1/2
    assert expected_flops(d_imp, q) == pytest.approx(0.5)
    # weight: term c now in 1 of 3 documents -> + 1/3 * 1/2
    assert expected_flops(d_w, q) == pytest.approx(0.5 + 1 / 6)
    assert d_imp.mean_active == pytest.approx(5 / 3) and d_w.mean_active == pytest.approx(2.0)
    assert q.mean_active == pytest.approx(1.5)
    report = flops_report(d_imp, q).to_dict()
    assert report["expected_flops"] == pytest.approx(0.5)
    assert report["documents"]["active_rule"] == "impact" and report["documents"]["scale"] == 100.0
    assert report["documents"]["active_entries"] == 5 and report["queries"]["avg_active_dims"] == 1.5


def test_flops_is_the_mean_number_of_shared_terms_over_all_pairs():
    rng = np.random.default_rng(0)
    docs = rng.random((40, 30)) * (rng.random((40, 30)) < 0.2)
    queries = rng.random((7, 30)) * (rng.random((7, 30)) < 0.3)
    active_d, active_q = docs > 0, queries > 0
    brute = (active_q.astype(int) @ active_d.T.astype(int)).mean()  # |A_q ∩ A_d| averaged over the 280 pairs
    got = expected_flops(count_matrix(sp.csr_matrix(docs), "weight"), count_matrix(sp.csr_matrix(queries), "weight"))
    assert got == pytest.approx(brute)


def test_empty_vectors_count_in_the_denominator():
    docs = sp.csr_matrix(np.array([[0.5, 0, 0, 0], [0, 0, 0, 0], [0.001, 0, 0, 0]], dtype=np.float32))
    c = count_matrix(docs, "impact", 100)
    assert c.n == 3 and c.empty == 2 and c.df.tolist() == [1, 0, 0, 0]  # 0.001 * 100 rounds to 0
    assert count_matrix(docs, "weight").empty == 1


def test_streamed_encoding_equals_one_matrix(tmp_path):
    ids = [f"d{i}" for i in range(3)]
    write_vectors(SparseVectors(ids, sp.csr_matrix(DOCS), VOCAB), tmp_path / "enc", {"test": 1}, shard_size=2)
    assert len(list((tmp_path / "enc").glob("shard-*.npz"))) == 2
    streamed = count_encoding(tmp_path / "enc", "impact", 100)
    assert streamed.df.tolist() == [2, 2, 0, 1] and streamed.n == 3 and streamed.empty == 0
    counter = TermCounter(4, "impact", 100)
    counter.add(sp.csr_matrix(DOCS[:1]))
    counter.add(sp.csr_matrix(DOCS[1:]))
    assert counter.result().df.tolist() == streamed.df.tolist()


def test_weight_maps_count_the_searched_terms():
    maps = {"q1": {"a": 70, "c": 50}, "q2": {"d": 80, "b": 0}, "q3": {}}
    c = count_weight_maps(maps, VOCAB, 100)
    assert c.df.tolist() == [1, 0, 1, 1] and c.n == 3 and c.empty == 1 and (c.active, c.scale) == ("impact", 100)
    d = count_matrix(sp.csr_matrix(DOCS), "impact", 100)
    # p_q = [1/3, 0, 1/3, 1/3] -> 2/3 * 1/3 + 1/3 * 1/3 = 1/3
    assert expected_flops(d, c) == pytest.approx(1 / 3)
    with pytest.raises(InputError, match="query q9: term 'zz'"):
        count_weight_maps({"q9": {"zz": 3}}, VOCAB)


def test_bad_inputs_are_refused():
    with pytest.raises(ConfigError, match="impact, weight"):
        count_matrix(sp.csr_matrix(DOCS), "binary")
    with pytest.raises(ConfigError, match="vocabulary"):
        expected_flops(count_matrix(sp.csr_matrix(DOCS)), count_matrix(sp.csr_matrix(np.ones((1, 5)))))
    with pytest.raises(InputError, match="row 1 has a non-finite weight"):
        count_matrix(sp.csr_matrix(np.array([[1.0, 0], [np.nan, 0]])))
    with pytest.raises(InputError, match="4 terms"):
        TermCounter(4).add(sp.csr_matrix(np.ones((1, 3))), "shard-x")


def test_percentile_hand_values():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([4, 3, 2, 1], 99) == pytest.approx(3.97)  # r = 3 * 0.99 = 2.97 -> 3 + 0.97 * (4 - 3)
    assert percentile([10, 20, 30, 40, 50], 99) == pytest.approx(49.6)  # r = 3.96
    assert percentile([7], 99) == 7 and percentile([5, 1], 0) == 1 and percentile([5, 1], 100) == 5
    data = np.random.default_rng(1).random(101)
    assert percentile(data, 37) == pytest.approx(np.percentile(data, 37))
    with pytest.raises(InputError):
        percentile([], 50)
    with pytest.raises(ConfigError):
        percentile([1], 101)


def test_posting_stats_hand_computed(tmp_path):
    stats = posting_stats(count_matrix(sp.csr_matrix(DOCS), "impact", 100))
    # lists: a -> 2, b -> 2, d -> 1 (c has no posting: 0.004 rounds to 0)
    assert (stats.documents, stats.terms_with_postings, stats.total_postings) == (3, 3, 5)
    assert stats.mean_length == pytest.approx(5 / 3) and stats.median_length == 2 and stats.max_length == 2
    assert stats.p99_length == pytest.approx(2.0) and stats.index_bytes is None
    index = tmp_path / "index"
    (index / "sub").mkdir(parents=True)
    (index / "_0.doc").write_bytes(b"x" * 100)
    (index / "sub" / "f").write_bytes(b"y" * 23)
    (index / "write.lock").write_bytes(b"")
    assert folder_bytes(index) == 123
    assert posting_stats(count_matrix(sp.csr_matrix(DOCS)), index).to_dict()["index_bytes"] == 123
    with pytest.raises(InputError, match="not a folder"):
        folder_bytes(tmp_path / "missing")


def test_efficiency_command(tmp_path, capsys):
    from lsr_eval.cli import main

    write_vectors(SparseVectors(["d0", "d1", "d2"], sp.csr_matrix(DOCS), VOCAB), tmp_path / "enc", {"t": 1})
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "vector": {"a": 70, "c": 50}}\n{"id": "q2", "vector": {"d": 80}}\n')
    assert main(["efficiency", str(tmp_path / "enc"), "--queries", str(queries), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["flops"]["expected_flops"] == pytest.approx(0.5)  # as the hand computation above
    assert out["postings"]["total_postings"] == 5 and out["postings"]["index_bytes"] is None
    assert main(["efficiency", str(tmp_path / "enc"), "--queries", str(queries)]) == 0
    assert "expected FLOPs 0.5000" in capsys.readouterr().out
    queries.write_text('{"id": "q1", "vector": {"a": 70}}\n{"id": "q1", "vector": {"d": 1}}\n')
    assert main(["efficiency", str(tmp_path / "enc"), "--queries", str(queries)]) == 2
    assert f"{queries}:2: duplicate query id 'q1'" in capsys.readouterr().err
