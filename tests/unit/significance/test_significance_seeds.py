"""A measure over training seeds (mean, sd, t interval) and two arms compared across seeds, against hand-computed
values."""

from __future__ import annotations

import math

import pytest

from lsr_eval.errors import InputError
from lsr_eval.significance import seed_summary, seed_t_test

T2 = 4.302653  # t_{0.975, 2}, the 95% critical value of Student's t on 2 degrees of freedom (any t table: 4.303)


def test_seed_summary_of_three_seeds():
    # values 1, 2, 3: mean 2; squared deviations 1 + 0 + 1 = 2, / (3 - 1) = 1: sd 1;
    # half width t_{0.975,2} * 1 / sqrt(3) = 4.302653 / 1.732051 = 2.484138: interval (-0.484138, 4.484138)
    s = seed_summary([1, 2, 3])
    assert (s.mean, s.sd, s.seeds) == (2.0, 1.0, 3)
    assert s.low == pytest.approx(2 - 2.484138, abs=1e-6) and s.high == pytest.approx(2 + 2.484138, abs=1e-6)
    assert s.half_width == pytest.approx(2.484138, abs=1e-6)


def test_one_seed_has_no_interval_and_constant_seeds_a_zero_one():
    one = seed_summary([0.5])
    assert one.mean == 0.5 and math.isnan(one.sd) and math.isnan(one.low) and math.isnan(one.high)
    flat = seed_summary([0.25, 0.25])
    assert (flat.sd, flat.low, flat.high) == (0.0, 0.25, 0.25)
    with pytest.raises(InputError, match="one value per seed"):
        seed_summary([])
    with pytest.raises(InputError, match="finite"):
        seed_summary([1.0, math.nan])


def test_paired_by_seed_number():
    # seeds 1, 2, 3: baseline 1, 2, 3; treatment 2, 4, 4 (given out of order: pairing is by seed, not position)
    # d = 1, 2, 1: mean 4/3; deviations -1/3, 2/3, -1/3, squares sum 6/9, / 2 = 1/3: s_d = sqrt(1/3);
    # se = s_d / sqrt(3) = 1/3; t = (4/3) / (1/3) = 4 on 2 df.
    # For 2 df, P(T >= t) = (1 - t / sqrt(t^2 + 2)) / 2 = (1 - 4 / sqrt(18)) / 2 = 0.0285955: p = 0.0571910.
    # interval 4/3 -+ 4.302653 / 3 = 1.333333 -+ 1.434218: (-0.100884, 2.767551): t = 4 and yet 0 is inside.
    r = seed_t_test({1: 1.0, 2: 2.0, 3: 3.0}, {3: 4.0, 1: 2.0, 2: 4.0})
    assert r.paired and r.seeds == (1, 2, 3) and r.df == 2
    assert r.mean_difference == pytest.approx(4 / 3) and r.statistic == pytest.approx(4.0)
    assert r.p_value == pytest.approx(0.0571910, abs=1e-7)
    assert (r.low, r.high) == (pytest.approx(-0.100884, abs=1e-6), pytest.approx(2.767551, abs=1e-6))
    assert not r.excludes_zero


def test_paired_interval_excluding_zero_and_no_spread():
    # d = 2, 2, 2: no spread, difference 2: t = inf, p = 0, the interval is the point 2 (it excludes 0)
    r = seed_t_test({1: 1.0, 2: 2.0, 3: 3.0}, {1: 3.0, 2: 4.0, 3: 5.0})
    assert (r.mean_difference, r.statistic, r.p_value, r.low, r.high) == (2.0, math.inf, 0.0, 2.0, 2.0)
    assert r.excludes_zero
    same = seed_t_test({1: 1.0, 2: 2.0}, {1: 1.0, 2: 2.0})
    assert (same.statistic, same.p_value) == (0.0, 1.0) and not same.excludes_zero


def test_welch_when_the_seeds_are_not_paired():
    # baseline seeds 1-3: 1, 2, 3 (mean 2, variance 1); treatment seeds 4-6: 3, 5, 7 (mean 5, variance 4)
    # v_a = 1/3, v_b = 4/3; se = sqrt(5/3) = 1.290994; t = 3 / 1.290994 = 2.323790
    # df = (5/3)^2 / ((1/3)^2 / 2 + (4/3)^2 / 2) = (25/9) / (17/18) = 50/17 = 2.941176
    r = seed_t_test({1: 1.0, 2: 2.0, 3: 3.0}, {4: 3.0, 5: 5.0, 6: 7.0})
    assert not r.paired and r.seeds == (1, 2, 3, 4, 5, 6)
    assert r.mean_difference == 3.0 and r.statistic == pytest.approx(2.323790, abs=1e-6)
    assert r.df == pytest.approx(50 / 17)
    from scipy import stats  # an independent implementation of the same test

    ref = stats.ttest_ind([3, 5, 7], [1, 2, 3], equal_var=False)
    assert r.p_value == pytest.approx(ref.pvalue) and r.statistic == pytest.approx(ref.statistic)
    half = stats.t.ppf(0.975, 50 / 17) * math.sqrt(5 / 3)
    assert (r.low, r.high) == (pytest.approx(3 - half), pytest.approx(3 + half))
    assert seed_t_test({1: 1.0, 2: 2.0, 3: 3.0}, {1: 2.0, 2: 4.0, 3: 4.0}, pair="welch").paired is False


def test_bad_seed_inputs_are_refused():
    with pytest.raises(InputError, match="same seeds"):
        seed_t_test({1: 1.0, 2: 2.0}, {1: 1.0, 3: 2.0}, pair="paired")
    with pytest.raises(InputError, match="at least 2 seeds"):
        seed_t_test({1: 1.0}, {1: 2.0})
    with pytest.raises(InputError, match="pair="):
        seed_t_test({1: 1.0, 2: 2.0}, {1: 1.0, 2: 2.0}, pair="blocked")


def test_seed_block_randomisation_by_hand():
    from lsr_eval.significance import seed_block_randomisation_test

    # seed 1: differences 1, 2; seed 2: 1, -1 (baseline 0): T = |1 + 2 + 1 - 1| = 3 over 4 cells, 16 sign vectors.
    # The 2 gives +-2, the three 1s give -3, -1, 1, 3 in 1, 3, 3, 1 ways: +2 -> -1, 1, 3, 5; -2 -> -5, -3, -1, 1.
    # |sum| >= 3: 3 (3 ways) and 5 (1) with +2, -5 (1) and -3 (3) with -2: 8 of 16, p = 0.5; mean difference 3/4.
    r = seed_block_randomisation_test({1: [0.0, 0.0], 2: [0.0, 0.0]}, {2: [1.0, -1.0], 1: [1.0, 2.0]})
    assert (r.mean_difference, r.p_value, r.queries) == (0.75, 0.5, 4)
    with pytest.raises(InputError, match="same seeds"):
        seed_block_randomisation_test({1: [0.0]}, {2: [0.0]})
    with pytest.raises(InputError, match="same queries"):
        seed_block_randomisation_test({1: [0.0, 1.0]}, {1: [0.0]})
