"""Tuning fusion on training queries: refusal to tune on reported queries, weights tuned on train applied to test."""

from __future__ import annotations

import math
import random

import pytest

import lsr_eval.fusion.tune as tune_module
from lsr_eval.errors import ConfigError
from lsr_eval.evaluation import evaluate
from lsr_eval.fusion import check_disjoint, fuse, tune_weights

# Train query t1: A ranks the relevant r last, B first. Min-max: A r 0, x .5, y 1; B r 1, x .5, y 0.
# wsum (w, 1 - w): r = 1 - w, x = .5, y = w. r is first iff w < .5; at w = .5 all tie and trec_eval's docid
# descending order puts r (smallest id) third. nDCG@10 with one relevant document: rank 1 -> 1, rank 3 -> 1/log2(4).
TRAIN_QRELS = {"t1": {"r": 1}}
TRAIN_A = {"t1": {"r": 1.0, "x": 2.0, "y": 3.0}, "s1": {"a": 9.0}}  # s1 (a test query) is ignored: not judged
TRAIN_B = {"t1": {"r": 3.0, "x": 2.0, "y": 1.0}}
TEST_QRELS = {"s1": {"b": 1}, "s2": {"c": 1}}
TEST_A = {"s1": {"a": 2.0, "b": 1.0}, "s2": {"c": 3.0, "d": 1.0}}
TEST_B = {"s1": {"a": 1.0, "b": 2.0}, "s2": {"c": 1.0, "d": 2.0}}


def test_weights_tuned_on_train_then_applied_to_test():
    t = tune_weights([TRAIN_A, TRAIN_B], TRAIN_QRELS, "wsum", metric="nDCG@10", reported=TEST_QRELS)
    assert [tr["params"]["weights"] for tr in t.trials] == [[i / 10, (10 - i) / 10] for i in range(11)]
    assert [tr["score"] for tr in t.trials] == pytest.approx([1.0] * 5 + [1 / math.log2(4)] * 6)
    assert t.params == {"weights": [0.4, 0.6]}  # the last of the equally good (as ranx's optimize_fusion)
    assert (t.method, t.norm, t.metric, t.score) == ("wsum", "min-max", "nDCG@10", 1.0)
    assert t.counts == {"tuning_queries": 1, "run0_queries_used": 1, "run1_queries_used": 1,
                        "run0_queries_not_judged": 1, "run1_queries_not_judged": 0}

    f = fuse([TEST_A, TEST_B], t.method, t.norm, t.params)
    # s1: A a 1, b 0; B a 0, b 1 -> a .4, b .6. s2: A c 1, d 0; B c 0, d 1 -> c .4, d .6
    assert f.run["s1"] == pytest.approx({"a": 0.4, "b": 0.6}) and f.run["s2"] == pytest.approx({"c": 0.4, "d": 0.6})
    # reported on the test qrels: s1's b first (RR 1), s2's c second (RR 1/2)
    assert evaluate(TEST_QRELS, f.run, ["RR@10"])["RR@10"] == pytest.approx(0.75)


def test_rrf_k_tuned():
    t = tune_weights([TRAIN_A, TRAIN_B], TRAIN_QRELS, "rrf", metric="RR@10", reported=TEST_QRELS)
    # r: ranks 3 and 1, x: 2 and 2, y: 1 and 3 -> r and y tie for every k (x below), y wins the tie: RR 1/2
    assert [tr["params"]["k"] for tr in t.trials] == list(range(10, 101, 10))
    assert [tr["score"] for tr in t.trials] == [0.5] * 10 and t.params == {"k": 100}


def test_refuses_the_same_qrels_object():
    with pytest.raises(ConfigError, match="same object"):
        tune_weights([TEST_A, TEST_B], TEST_QRELS, "wsum", reported=TEST_QRELS)


def test_refuses_equal_qrels():
    with pytest.raises(ConfigError, match=r"tuning qrels equal the reported qrels \(2 queries\)"):
        tune_weights([TEST_A, TEST_B], {q: dict(j) for q, j in TEST_QRELS.items()}, "wsum", reported=TEST_QRELS)


def test_refuses_overlapping_queries_naming_them():
    tuning = {"t1": {"r": 1}, "s2": {"c": 1}, "s1": {"x": 1}}
    with pytest.raises(ConfigError, match=r"2 of the 3 tuning queries are reported queries too \(e\.g\. s1, s2\)"):
        tune_weights([TRAIN_A, TRAIN_B], tuning, "wsum", reported=TEST_QRELS)
    with pytest.raises(ConfigError, match="1 of the 3 tuning queries"):
        check_disjoint(tuning, ["s2", "z"])  # reported query ids work too
    check_disjoint(TRAIN_QRELS, TEST_QRELS)  # disjoint: fine


def test_untunable_method_and_runs_without_tuning_queries():
    with pytest.raises(ConfigError, match="sum has no parameter to tune"):
        tune_weights([TRAIN_A, TRAIN_B], TRAIN_QRELS, "sum", reported=TEST_QRELS)
    with pytest.raises(ConfigError, match="answer none of the 1 tuning queries"):
        tune_weights([TEST_A, TEST_B], TRAIN_QRELS, "wsum", reported=["s9"])


@pytest.mark.parametrize("method, norm", [("wsum", "min-max"), ("wsum", "none"), ("rrf", "none")])
@pytest.mark.parametrize("metric, depth", [("nDCG@10", None), ("RR@10", 3), ("MAP", None), ("R@100", 4)])
def test_every_candidate_scores_as_its_fused_run_evaluates(monkeypatch, method, norm, metric, depth):
    """Native methods score candidates from the fused ranking's grades, without building runs: each trial's score
    is the very float that evaluating the fused run gives. Scores tie often (rounded), some documents are unjudged
    or judged negative, some judged queries have no results."""
    rng = random.Random(7)
    qrels = {f"t{q}": {f"d{d}": rng.choice([-1, 0, 1, 2]) for d in rng.sample(range(30), 8)} for q in range(40)}
    runs = [{f"t{q}": {f"d{d}": round(rng.uniform(0, 3), 1) for d in rng.sample(range(30), rng.randint(1, 12))}
             for q in range(36) if rng.random() < 0.9} for _ in range(2)]
    calls = []
    monkeypatch.setattr(tune_module, "fuse_prepared", lambda *a, **k: calls.append(a))
    t = tune_weights(runs, qrels, method, norm, metric, reported=["s1"], depth=depth)
    assert not calls  # no run built
    for trial in t.trials:
        fused = fuse(runs, method, norm, trial["params"], depth=depth).run
        assert trial["score"] == evaluate(qrels, fused, [metric])[metric], trial
