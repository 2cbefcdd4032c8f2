"""Measure names (registry, parsing) and evaluate() on tiny cases computed by hand."""

from __future__ import annotations

import logging
import random
from math import log2

import numpy as np
import pytest

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.evaluation import (
    DEFAULT_MEASURES,
    FAMILIES,
    Measure,
    count_queries,
    evaluate,
    evaluate_graded,
    mean_scores,
    parse_measure,
    parse_measures,
)

# ---------------------------------------------------------------------------------------------------- measure names


@pytest.mark.parametrize("text, name, fields", [
    ("nDCG@10", "nDCG@10", ("nDCG", 10, 1)),
    ("ndcg@10", "nDCG@10", ("nDCG", 10, 1)),
    ("ndcg_cut@20", "nDCG@20", ("nDCG", 20, 1)),
    ("nDCG", "nDCG", ("nDCG", None, 1)),
    ("RR@10", "RR@10", ("RR", 10, 1)),
    ("MRR@10", "RR@10", ("RR", 10, 1)),
    ("R@1000(rel=2)", "R@1000(rel=2)", ("R", 1000, 2)),
    ("R(rel=2)@1000", "R@1000(rel=2)", ("R", 1000, 2)),  # ir_measures spelling
    ("R@1000(rel=1)", "R@1000", ("R", 1000, 1)),  # the default level is not written
    ("recall@100", "R@100", ("R", 100, 1)),
    ("P@10", "P@10", ("P", 10, 1)),
    ("P@5( rel = 3 )", "P@5(rel=3)", ("P", 5, 3)),
    ("MAP", "MAP", ("MAP", None, 1)),
    ("AP@100", "MAP@100", ("MAP", 100, 1)),
    (" MAP@1000 ", "MAP@1000", ("MAP", 1000, 1)),
])
def test_parse_measure_canonical_names(text, name, fields):
    m = parse_measure(text)
    assert (m.name, str(m), (m.family, m.cutoff, m.rel)) == (name, name, fields)
    assert parse_measure(m) is m
    assert parse_measure(name) == m  # the canonical name parses back to the same measure


def test_registry_is_a_table_of_ranx_metrics():
    assert {n: f.ranx for n, f in FAMILIES.items()} == {
        "nDCG": "ndcg", "RR": "reciprocal_rank", "R": "recall", "P": "precision", "MAP": "average_precision"}
    assert [f.graded for f in FAMILIES.values()] == [True, False, False, False, False]


@pytest.mark.parametrize("text, message", [
    ("BLEU@4", r"unknown measure 'BLEU@4'; known families: nDCG .*RR .*R .*P .*MAP"),
    ("nDCG@10(rel=2)", r"nDCG uses graded relevance and takes no rel level"),
    ("R@0", r"R: cutoff must be >= 1, got 0"),
    ("R@ten", r"cutoff 'ten' is not a positive integer"),
    ("R@10(rel=0)", r"R: rel must be >= 1, got 0"),
    ("R@10(rel=x)", r"rel 'x' is not a positive integer"),
    ("R@10(judged_only=True)", r"unknown parameter 'judged_only=True'"),
    ("R(rel=2)@10(rel=3)", r"give parameters once"),
    ("nDCG@10 MAP", r"cannot parse measure"),
    ("", r"cannot parse measure"),
])
def test_parse_measure_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_measure(text)


def test_find_measure_tells_measure_names_from_other_names():
    """The predicate behind report columns and manifest fields: the measure, or None without an error's
    suggestions (which :func:`parse_measure` computes for a user's typo: "did you mean nDCG@10")."""
    from lsr_eval.evaluation.measures import find_measure

    assert find_measure("ndcg_cut_10") == Measure("nDCG", 10) and find_measure("R@1000(rel=2)") == Measure("R", 1000, 2)
    assert [find_measure(t) for t in ("dataset", "nDCG@10(rel=2)", "R@0", "")] == [None] * 4
    with pytest.raises(ConfigError, match="did you mean nDCG@10"):
        parse_measure("ndgc@10")
    with pytest.raises(ConfigError) as error:
        parse_measure("ndgc@10", suggestions=False)
    assert "did you mean" not in str(error.value)


def test_parse_measures_drops_repeats_keeps_order():
    assert [m.name for m in parse_measures(["R@100", "nDCG@10", "ndcg@10", "R(rel=1)@100"])] == ["R@100", "nDCG@10"]
    assert parse_measures("nDCG@10") == [Measure("nDCG", 10)]  # one name, not its characters
    with pytest.raises(ConfigError, match="no measures"):
        parse_measures([])


def test_default_measures():
    assert [m.name for m in parse_measures(DEFAULT_MEASURES)] == ["nDCG@10", "RR@10", "R@100", "R@1000", "MAP"]


# ---------------------------------------------------------------------------------------------------- hand computed

QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 0, "d4": 1},
    "q2": {"e1": 1},
    "q3": {"x": 0},  # judged, nothing relevant: scores 0, still in the mean (trec_eval -c)
    "q4": {"z": 3},  # judged, no results: scores 0
}
RUN = {
    # trec_eval order: d3 (0.9), then the 0.8 tie by docid descending: dx before d1, then d2 -> grades 0, -, 2, 1
    "q1": {"d3": 0.9, "d1": 0.8, "dx": 0.8, "d2": 0.5},
    # tie: e2 before e1, so the relevant e1 is at rank 2
    "q2": {"e1": 1.0, "e2": 1.0},
    "q3": {"x": 1.0},
    "q5": {"d1": 1.0},  # not judged: ignored
}
IDCG_Q1 = 2 / log2(2) + 1 / log2(3) + 1 / log2(4)  # ideal grades 2, 1, 1 at ranks 1..3
EXPECTED_PER_QUERY = {
    # q1: DCG = 2/log2(3+1) + 1/log2(4+1)
    "nDCG@10": {"q1": (2 / log2(4) + 1 / log2(5)) / IDCG_Q1, "q2": (1 / log2(3)) / 1.0, "q3": 0.0, "q4": 0.0},
    "nDCG@3": {"q1": (2 / log2(4)) / IDCG_Q1, "q2": 1 / log2(3), "q3": 0.0, "q4": 0.0},
    # first relevant at rank 3 (q1) and 2 (q2)
    "RR@10": {"q1": 1 / 3, "q2": 1 / 2, "q3": 0.0, "q4": 0.0},
    "RR@2": {"q1": 0.0, "q2": 1 / 2, "q3": 0.0, "q4": 0.0},
    # q1: d1, d2 retrieved of d1, d2, d4
    "R@100": {"q1": 2 / 3, "q2": 1.0, "q3": 0.0, "q4": 0.0},
    "R@3": {"q1": 1 / 3, "q2": 1.0, "q3": 0.0, "q4": 0.0},
    # q1: relevant at ranks 3 and 4: (1/3 + 2/4) / 3 relevant
    "MAP": {"q1": (1 / 3 + 2 / 4) / 3, "q2": 1 / 2, "q3": 0.0, "q4": 0.0},
    "MAP@3": {"q1": (1 / 3) / 3, "q2": 1 / 2, "q3": 0.0, "q4": 0.0},
    # relevant in the top k / k, even when fewer than k are retrieved
    "P@10": {"q1": 2 / 10, "q2": 1 / 10, "q3": 0.0, "q4": 0.0},
    # grade >= 2: only d1 (q1) and z (q4)
    "R@100(rel=2)": {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0},
    "RR@10(rel=2)": {"q1": 1 / 3, "q2": 0.0, "q3": 0.0, "q4": 0.0},
    "MAP(rel=2)": {"q1": 1 / 3, "q2": 0.0, "q3": 0.0, "q4": 0.0},
}


def test_evaluate_per_query_by_hand():
    got = evaluate(QRELS, RUN, list(EXPECTED_PER_QUERY), per_query=True)
    assert list(got) == list(EXPECTED_PER_QUERY)
    for name, expected in EXPECTED_PER_QUERY.items():
        assert list(got[name]) == ["q1", "q2", "q3", "q4"], name  # judged queries, qrels order; q5 ignored
        assert got[name] == pytest.approx(expected, abs=1e-12), name


def test_evaluate_means_over_judged_queries():
    got = evaluate(QRELS, RUN, ["nDCG@10", "RR@10", "R@100", "MAP"])
    assert got == pytest.approx({name: sum(EXPECTED_PER_QUERY[name].values()) / 4 for name in got}, abs=1e-12)
    assert got["RR@10"] == pytest.approx((1 / 3 + 1 / 2) / 4)
    assert mean_scores(evaluate(QRELS, RUN, ["RR@10"], per_query=True)) == {"RR@10": got["RR@10"]}


def test_evaluate_default_measures_and_input_order_independence():
    expected = evaluate(QRELS, RUN)
    assert list(expected) == list(DEFAULT_MEASURES)
    rng = random.Random(1)
    for _ in range(5):
        shuffled = {}
        for q in rng.sample(list(RUN), len(RUN)):
            items = list(RUN[q].items())
            rng.shuffle(items)
            shuffled[q] = dict(items)
        assert evaluate(QRELS, shuffled) == expected


def test_evaluate_graded_by_hand():
    # RUN in trec_eval order as grades: q1 d3, dx, d1, d2 -> 0, 0, 2, 1; q2 e2, e1 -> 0, 1; q3 x -> 0; q4 absent
    graded = {"q1": np.array([0.0, 0.0, 2.0, 1.0]), "q2": np.array([0.0, 1.0]), "q3": np.array([0.0]),
              "q5": np.array([1.0])}
    got = evaluate_graded(QRELS, graded, list(EXPECTED_PER_QUERY))
    assert got == pytest.approx({name: sum(v.values()) / 4 for name, v in EXPECTED_PER_QUERY.items()}, abs=1e-12)
    assert got == evaluate(QRELS, RUN, list(EXPECTED_PER_QUERY))  # the same floats
    with pytest.raises(InputError, match="no queries"):
        evaluate_graded({}, graded)


def test_unjudged_run_queries_and_empty_rankings():
    base = evaluate(QRELS, RUN)
    assert evaluate(QRELS, {**RUN, "q6": {"a": 1.0}, "q7": {}}) == base  # not judged: no effect
    assert evaluate(QRELS, {**RUN, "q4": {}}) == base  # empty ranking = no results
    assert evaluate(QRELS, {})["nDCG@10"] == 0.0


def test_negative_grades_are_not_relevant():
    qrels = {"q": {"a": -1, "b": 1}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    got = evaluate(qrels, run, ["nDCG@10", "RR@10", "R@10", "P@1"])
    assert got == pytest.approx({"nDCG@10": 1 / log2(3), "RR@10": 0.5, "R@10": 1.0, "P@1": 0.0})


def test_count_queries():
    c = count_queries(QRELS, {**RUN, "q7": {}})
    assert (c.judged, c.in_run, c.judged_without_results, c.run_not_judged) == (4, 4, 1, 1)
    assert c.in_run == c.judged - c.judged_without_results + c.run_not_judged


def test_evaluate_logs_counts(caplog):
    with caplog.at_level(logging.INFO, logger="lsr_eval.evaluation.evaluate"):
        evaluate(QRELS, RUN, ["RR@10"])
    assert "1 of 4 run queries are not in the qrels: ignored" in caplog.text
    assert "1 of 4 judged queries have no results: they count 0" in caplog.text


def test_evaluate_errors():
    with pytest.raises(InputError, match="qrels hold no queries"):
        evaluate({}, RUN)
    with pytest.raises(InputError, match="query 'q1', document 'd2': score is NaN"):
        evaluate(QRELS, {"q1": {"d1": 1.0, "d2": float("nan")}})
    with pytest.raises(ConfigError, match="unknown measure"):
        evaluate(QRELS, RUN, ["nDCG@10", "F1"])
