"""Paired t-test, randomisation test (exact and Monte Carlo), Bonferroni, and the comparison table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.evaluation import evaluate
from lsr_eval.significance import (
    MARKER,
    bonferroni,
    compare,
    compare_runs,
    exact_randomisation_test,
    format_table,
    paired_t_test,
    randomisation_test,
)

BASE = [0.2, 0.5, 0.1, 0.9]
TREAT = [0.4, 0.6, 0.4, 0.8]  # differences 0.2, 0.1, 0.3, -0.1


def test_t_test_by_hand():
    r = paired_t_test(BASE, TREAT)
    # mean d = 0.5 / 4 = 0.125; squared deviations .075^2 + .025^2 + .175^2 + .225^2 = 0.0875; s^2 = 0.0875 / 3
    t = 0.125 / (math.sqrt(0.0875 / 3) / 2)
    assert r.mean_difference == pytest.approx(0.125) and r.queries == 4
    assert r.statistic == pytest.approx(t, rel=1e-12) and t == pytest.approx(1.46385011)
    # two-sided p with 3 degrees of freedom: 2 * (1 - F_3(t)), F_3 in closed form (Student's t with 3 dof)
    x = t / math.sqrt(3)
    cdf = 0.5 + (math.atan(x) + x / (1 + x * x)) / math.pi
    assert r.p_value == pytest.approx(2 * (1 - cdf), rel=1e-9)
    from scipy.stats import ttest_rel

    ref = ttest_rel(TREAT, BASE)
    assert (r.statistic, r.p_value) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-12)


def test_t_test_degenerate_differences():
    same = paired_t_test(BASE, BASE)
    assert (same.statistic, same.p_value) == (0.0, 1.0)  # scipy gives NaN here
    dyadic = [0.25, 0.5, 0.125, 0.75]  # + 0.5 exactly: the differences are all 0.5, s = 0
    shifted = paired_t_test(dyadic, [x + 0.5 for x in dyadic])
    assert shifted.statistic == math.inf and shifted.p_value == 0.0
    with pytest.raises(InputError, match="at least 2 queries"):
        paired_t_test([0.1], [0.2])
    with pytest.raises(InputError, match="shapes"):
        paired_t_test([0.1, 0.2], [0.2])


def test_exact_randomisation_by_hand():
    # |d| = .2, .1, .3, .1 (total .7). Flipping a subset S of total x gives |.7 - 2x| >= .5 iff x <= .1 or x >= .6:
    # x <= .1 for {}, {.1}, {.1'}; x >= .6 for their complements -> 6 of 16 sign vectors
    r = exact_randomisation_test(BASE, TREAT)
    assert r.p_value == 6 / 16 and r.statistic == pytest.approx(0.5)


def test_monte_carlo_agrees_with_exact_enumeration():
    rng = np.random.default_rng(7)
    for n, shift in [(10, 0.05), (12, 0.0), (14, 0.1)]:
        a = rng.random(n)
        b = a + rng.normal(shift, 0.1, n)
        exact = exact_randomisation_test(a, b).p_value
        mc = randomisation_test(a, b, n_permutations=40_000, seed=1).p_value
        se = math.sqrt(exact * (1 - exact) / 40_000) + 1 / 40_000
        assert abs(mc - exact) < 5 * se, (n, exact, mc)


def test_randomisation_seeded_and_valid():
    a = [0.1, 0.4, 0.3, 0.8, 0.5, 0.2]
    b = [0.3, 0.5, 0.2, 0.9, 0.7, 0.6]
    one = randomisation_test(a, b, n_permutations=5000, seed=3)
    assert randomisation_test(a, b, n_permutations=5000, seed=3) == one  # declared seed: reproducible
    assert randomisation_test(a, a, n_permutations=100).p_value == 1.0  # identical systems
    # 6 equal-sign differences: only the identity and the all-flipped vectors reach T -> exact p = 2 / 64
    c = [x + 0.1 for x in a]
    assert exact_randomisation_test(a, c).p_value == 2 / 64
    assert randomisation_test(a, c, n_permutations=20_000, seed=0).p_value == pytest.approx(2 / 64, abs=0.006)
    with pytest.raises(ConfigError, match="n_permutations"):
        randomisation_test(a, b, n_permutations=0)
    with pytest.raises(ConfigError, match="limit is 20 queries"):
        exact_randomisation_test(np.zeros(21), np.ones(21))


def test_bonferroni():
    assert bonferroni([0.01, 0.02, 0.5]) == pytest.approx([0.03, 0.06, 1.0])
    out = bonferroni([math.nan, 0.01, 0.04], comparisons=4)
    assert math.isnan(out[0]) and out[1:] == pytest.approx([0.04, 0.16])


def test_compare_table_by_hand():
    per_query = {
        "base": {"nDCG@10": dict(zip("abcd", BASE))},
        "good": {"nDCG@10": dict(zip("abcd", [x + 0.5 for x in BASE]))},  # about +.5 everywhere: p ~ 1e-48
        "mixed": {"nDCG@10": dict(zip("abcd", TREAT))},
    }
    df = compare(per_query, "base", test="t-test")
    assert list(df["system"]) == ["base", "good", "mixed"]
    assert df.attrs["comparisons"] == 2 and df.attrs["correction"] == "bonferroni"
    good, mixed = df.iloc[1], df.iloc[2]
    assert good["mean"] == pytest.approx(0.425 + 0.5) and good["baseline_mean"] == pytest.approx(0.425)
    assert good["p_corrected"] < 1e-40 and good["marker"] == MARKER and bool(good["significant"])
    p = paired_t_test(BASE, TREAT).p_value
    assert mixed["p_value"] == pytest.approx(p) and mixed["p_corrected"] == pytest.approx(min(1, 2 * p))
    assert mixed["marker"] == "" and mixed["difference"] == pytest.approx(0.125)
    assert math.isnan(df.iloc[0]["p_value"]) and df.iloc[0]["marker"] == ""
    wide = format_table(df)
    assert wide.loc["good", "nDCG@10"] == f"{0.925:.4f}{MARKER}" and wide.loc["mixed", "nDCG@10"] == "0.5500"

    rnd = compare(per_query, "base", test="randomisation", n_permutations=2000, seed=5)
    assert rnd.attrs["n_permutations"] == 2000 and rnd.attrs["seed"] == 5
    # "good": all 4 differences equal -> only 2 of 16 sign vectors reach T (exact p = 1/8), Bonferroni x2
    assert rnd.iloc[1]["p_value"] == pytest.approx(1 / 8, abs=0.03)


def test_compare_family_per_measure():
    per_query = {s: {"RR@10": dict(zip("abcd", v)), "MAP": dict(zip("abcd", v))}
                 for s, v in [("base", BASE), ("x", TREAT)]}
    assert compare(per_query, "base").attrs["comparisons"] == 2  # 1 system x 2 measures
    assert compare(per_query, "base", family="measure").attrs["comparisons"] == 1


def test_compare_runs_uses_trec_eval_ranking():
    qrels = {"q1": {"a": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
    base = {"q1": {"z": 1.0, "a": 1.0}, "q2": {"c": 2.0}, "q3": {"x": 2.0, "d": 1.0}}  # q1: z before a (tie)
    other = {"q1": {"a": 2.0, "z": 1.0}, "q2": {"c": 2.0}, "q3": {"d": 3.0}}
    df = compare_runs(qrels, {"base": base, "other": other}, "base", ["RR@10"])
    assert df.iloc[0]["mean"] == pytest.approx((0.5 + 1 + 0.5) / 3)
    assert df.iloc[0]["mean"] == pytest.approx(evaluate(qrels, base, ["RR@10"])["RR@10"])
    assert df.iloc[1]["difference"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("per_query, baseline, message", [
    ({"a": {"MAP": {"q": 1.0}}}, "b", "baseline 'b' is not among the systems"),
    ({"a": {"MAP": {"q1": 1.0, "q2": 0.0}}, "b": {"MAP": {"q1": 1.0, "q3": 0.0}}}, "a",
     r"system 'b', MAP: 2 queries differ from the baseline's \(e.g. q2, q3\)"),
    ({"a": {"MAP": {"q": 1.0}}, "b": {"RR": {"q": 1.0}}}, "a", "has measures"),
])
def test_compare_errors(per_query, baseline, message):
    with pytest.raises(InputError, match=message):
        compare(per_query, baseline)


def test_compare_options_validated():
    per_query = {s: {"MAP": dict(zip("abcd", v))} for s, v in [("base", BASE), ("x", TREAT)]}
    with pytest.raises(ConfigError, match="expected one of t-test, randomisation"):
        compare(per_query, "base", test="wilcoxon")
    with pytest.raises(ConfigError, match="expected one of table, measure"):
        compare(per_query, "base", family="all")
