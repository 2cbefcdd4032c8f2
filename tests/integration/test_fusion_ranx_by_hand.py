"""Every fusion normalisation and every untrained fusion method against values computed by hand from the formulas
of ranx 0.3.21's documentation and source (``ranx/normalization``, ``ranx/fusion``), on three small runs without
ties; max and rank normalisations and the ranx run conversion on runs with ties. rrf, sum and wsum without
normalisation or with min-max (computed without ranx) are in tests/unit/fusion/test_fusion.py. Integration tests: ranx's
numba kernels compile for minutes on a fresh machine."""

from __future__ import annotations

from math import log, sqrt

import pytest

from lsr_eval.fusion import fuse
from lsr_eval.fusion.ranx_runs import from_ranx, to_ranx

# One query, five candidates (a..e). Ranks: A a1 b2 c3; B b1 d2 a3 e4; C c1 a2.
A = {"q1": {"a": 4.0, "b": 3.0, "c": 1.0}}
B = {"q1": {"b": 9.0, "d": 5.0, "a": 3.0, "e": 1.0}}
C = {"q1": {"c": 8.0, "a": 2.0}}

# Runs with ties and queries missing from one run: A ties d2 and d3 (trec_eval ranks d3 first, docid descending).
RUN_A = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 2.0, "d4": 1.0}, "q2": {"d5": 1.0}}
RUN_B = {"q1": {"d2": 5.0, "d4": 4.0}, "q3": {"d6": 7.0, "d7": 1.0}}


def _check(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_zmuv_normalisation():
    # (s - mean) / population std, per run. A: mean 8/3, std sqrt(14)/3 -> a 4/√14, b 1/√14, c -5/√14.
    # B: mean 4.5, std sqrt(35)/2 -> b 9/√35, d 1/√35, a -3/√35, e -7/√35. CombSUM adds what each run has.
    r14, r35 = sqrt(14), sqrt(35)
    _check(fuse([A, B], "sum", norm="zmuv").run["q1"],
           {"a": 4 / r14 - 3 / r35, "b": 1 / r14 + 9 / r35, "c": -5 / r14, "d": 1 / r35, "e": -7 / r35})


def test_sum_normalisation():
    # ranx's sum norm: (s - min) / (sum - min * n). A: (s - 1) / 5; B: (s - 1) / 14.
    _check(fuse([A, B], "sum", norm="sum").run["q1"],
           {"a": 3 / 5 + 2 / 14, "b": 2 / 5 + 8 / 14, "c": 0.0, "d": 4 / 14, "e": 0.0})


def test_borda_normalisation():
    # 1 - (rank - 1) / candidates for a retrieved document; 0.5 - (retrieved - 1) / (2 candidates) for the others.
    # 5 candidates. A: a 1, b .8, c .6, d = e = .5 - 2/10 = .3. B: b 1, d .8, a .6, e .4, c = .5 - 3/10 = .2.
    _check(fuse([A, B], "sum", norm="borda").run["q1"], {"a": 1.6, "b": 1.8, "c": 0.8, "d": 1.1, "e": 0.7})


# Raw scores per document (A, B, C): a 4, 3, 2 (n 3, sum 9); b 3, 9 (n 2, sum 12); c 1, 8 (n 2, sum 9);
# d 5 (n 1); e 1 (n 1).
SCORE_METHODS = {
    "sum": ({}, {"a": 9, "b": 12, "c": 9, "d": 5, "e": 1}),
    "mnz": ({}, {"a": 27, "b": 24, "c": 18, "d": 5, "e": 1}),
    "anz": ({}, {"a": 3, "b": 6, "c": 4.5, "d": 5, "e": 1}),
    "max": ({}, {"a": 4, "b": 9, "c": 8, "d": 5, "e": 1}),
    "min": ({}, {"a": 2, "b": 3, "c": 1, "d": 5, "e": 1}),  # a run without d counts 1e9: the min ignores it
    "med": ({}, {"a": 3, "b": 6, "c": 4.5, "d": 5, "e": 1}),
    "gmnz": ({"gamma": 0.5}, {"a": 9 * sqrt(3), "b": 12 * sqrt(2), "c": 9 * sqrt(2), "d": 5, "e": 1}),
    # weights .2 .3 .5: sum of scores x sum of the weights of the runs retrieving d
    "wmnz": ({"weights": [0.2, 0.3, 0.5]}, {"a": 9 * 1.0, "b": 12 * 0.5, "c": 9 * 0.7, "d": 5 * 0.3, "e": 0.3}),
    # sum_r w_r s_r(d) x sqrt(n(d))
    "mixed": ({"weights": [0.2, 0.3, 0.5]}, {"a": (0.8 + 0.9 + 1.0) * sqrt(3), "b": (0.6 + 2.7) * sqrt(2),
                                             "c": (0.2 + 4.0) * sqrt(2), "d": 1.5, "e": 0.3}),
}

# Ranks per document (A, B, C): a 1, 3, 2; b 2, 1; c 3, 1; d 2 (B); e 4 (B).
ISR = {"a": 1 + 1 / 9 + 1 / 4, "b": 1 / 4 + 1, "c": 1 / 9 + 1, "d": 1 / 4, "e": 1 / 16}  # sum_r 1 / rank^2
N = {"a": 3, "b": 2, "c": 2, "d": 1, "e": 1}
# Borda points, 5 candidates: rank r -> 5 - r + 1; not retrieved -> (5 - retrieved + 1) / 2.
# A: a 5, b 4, c 3, d e 1.5. B: b 5, d 4, a 3, e 2, c 1. C: c 5, a 4, b d e 2.
BORDA = {"A": {"a": 5, "b": 4, "c": 3, "d": 1.5, "e": 1.5}, "B": {"b": 5, "d": 4, "a": 3, "e": 2, "c": 1},
         "C": {"c": 5, "a": 4, "b": 2, "d": 2, "e": 2}}
RANK_METHODS = {
    "isr": ({}, {d: N[d] * ISR[d] for d in ISR}),
    "log_isr": ({}, {d: log(N[d]) * ISR[d] for d in ISR}),
    "logn_isr": ({"sigma": 0.01}, {d: log(N[d] + 0.01) * ISR[d] for d in ISR}),
    "bordafuse": ({}, {d: sum(BORDA[r][d] for r in "ABC") for d in "abcde"}),
    "w_bordafuse": ({"weights": [0.2, 0.3, 0.5]},
                    {d: 0.2 * BORDA["A"][d] + 0.3 * BORDA["B"][d] + 0.5 * BORDA["C"][d] for d in "abcde"}),
    # (1 - phi) phi^(rank - 1) summed, phi = .5
    "rbc": ({"phi": 0.5}, {"a": 0.5 + 0.5 * 0.25 + 0.5 * 0.5, "b": 0.25 + 0.5, "c": 0.125 + 0.5, "d": 0.25,
                           "e": 0.5 * 0.125}),
}


@pytest.mark.parametrize("method", sorted(SCORE_METHODS))
def test_score_methods_on_raw_scores(method):
    params, expected = SCORE_METHODS[method]
    _check(fuse([A, B, C], method, norm="none", params=params).run["q1"], expected)


@pytest.mark.parametrize("method", sorted(RANK_METHODS))
def test_rank_methods(method):
    params, expected = RANK_METHODS[method]
    f = fuse([A, B, C], method, params=params)
    assert f.norm == "none"
    _check(f.run["q1"], expected)


# Training runs for the trained methods; t1 and t2 each judge r relevant.
TRAIN_QRELS = {"t1": {"r": 1}, "t2": {"r": 1}}
TRAIN_A = {"t1": {"x": 3.0, "r": 2.0, "y": 1.0}, "t2": {"r": 5.0, "z": 4.0}}  # r at ranks 2 and 1
TRAIN_B = {"t1": {"r": 9.0, "x": 1.0}, "t2": {"z": 3.0, "y": 2.0, "r": 1.0}}  # r at ranks 1 and 3


def test_posfuse_with_probabilities_estimated_on_two_queries():
    from lsr_eval.fusion import tune_weights

    t = tune_weights([TRAIN_A, TRAIN_B], TRAIN_QRELS, "posfuse", reported=["q1"])
    # P(relevant | rank) = relevant at that rank / training queries with that rank. A: 1/2, 1/2, 0/1. B: 1/2, 0/2, 1/1.
    assert [list(p) for p in t.params["probs"]] == [[0.5, 0.5, 0.0], [0.5, 0.0, 1.0]]
    # A: a1 b2 c3; B: b1 d2 a3 e4 (rank 4 is past B's estimates: 0)
    _check(fuse([A, B], "posfuse", params=t.params).run["q1"],
           {"a": 0.5 + 1.0, "b": 0.5 + 0.5, "c": 0.0, "d": 0.0, "e": 0.0})


def test_mapfuse_with_map_on_the_training_queries():
    from lsr_eval.fusion import tune_weights

    t = tune_weights([TRAIN_A, TRAIN_B], TRAIN_QRELS, "mapfuse", reported=["q1"])
    # MAP: A (1/2 + 1) / 2 = .75; B (1 + 1/3) / 2 = 2/3. Score: sum_r MAP_r / rank_r(d).
    assert t.params["map_scores"] == pytest.approx([0.75, 2 / 3], abs=1e-12)
    _check(fuse([A, B], "mapfuse", params=t.params).run["q1"],
           {"a": 0.75 + (2 / 3) / 3, "b": 0.75 / 2 + 2 / 3, "c": 0.75 / 3, "d": (2 / 3) / 2, "e": (2 / 3) / 4})


def test_every_untrained_method_is_checked_here_or_in_test_fusion():
    from lsr_eval.fusion.methods import METHODS

    untrained = {name for name, m in METHODS.items() if not m.trained}
    assert untrained == set(SCORE_METHODS) | set(RANK_METHODS) | {"rrf", "wsum"}


def test_wsum_other_norms_by_hand():
    f = fuse([RUN_A, RUN_B], "wsum", norm="max", params={"weights": [0.5, 0.5]})
    # max norm: A q1 / 3, B q1 / 5
    assert f.run["q1"] == pytest.approx({"d1": 0.5, "d2": 0.5 * 2 / 3 + 0.5, "d3": 0.5 * 2 / 3,
                                         "d4": 0.5 / 3 + 0.5 * 4 / 5})
    f = fuse([RUN_A, RUN_B], "sum", norm="rank")
    # rank norm 1 - (rank - 1) / n in trec_eval order: A d1 1, d3 0.75, d2 0.5, d4 0.25; B d2 1, d4 0.5
    assert f.run["q1"] == pytest.approx({"d1": 1.0, "d3": 0.75, "d2": 1.5, "d4": 0.75})


def test_ranx_conversion_keeps_trec_order_and_round_trips():
    r = to_ranx(RUN_A, ["q1", "q2", "q3"])
    assert list(r.run["q1"].keys()) == ["d1", "d3", "d2", "d4"]  # trec_eval order, ties by docid descending
    assert len(r.run["q3"]) == 0  # a query the run lacks: empty, as ranx.fuse needs equal query sets
    back = from_ranx(r, ["q1", "q2", "q3", "q9"])
    assert back == {"q1": RUN_A["q1"], "q2": RUN_A["q2"], "q3": {}}


def test_ranx_runs_have_the_type_of_normalised_runs():
    # ranx's kernels compile per argument type: a raw run typed as a normalised one shares their compiled code
    import numba
    from ranx.normalization import min_max_norm

    r = to_ranx(RUN_A, ["q1", "q2", "q3"])
    assert numba.typeof(r.run) == numba.typeof(min_max_norm(r).run)
    long_ids = to_ranx({"q1": {"d" * 40: 1.0}}, ["q1"])  # a wider id array, the same key type
    assert numba.typeof(long_ids.run) == numba.typeof(r.run)
