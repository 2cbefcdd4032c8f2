"""Bonferroni, Holm and Benjamini-Hochberg adjusted p-values, computed by hand (module doc of
lsr_eval.significance.correction), and their use by the significance table, per family."""

from __future__ import annotations

import math

import pytest

from lsr_eval.errors import ConfigError
from lsr_eval.significance import benjamini_hochberg, bonferroni, compare, correct, holm

P = [0.01, 0.04, 0.03, 0.005]


def test_by_hand():
    # sorted: 0.005, 0.01, 0.03, 0.04 (m = 4)
    # Holm: 4 x 0.005 = 0.02, 3 x 0.01 = 0.03, 2 x 0.03 = 0.06, max(0.06, 1 x 0.04) = 0.06
    assert holm(P) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 4 x p / rank = 0.02, 0.02, 0.04, 0.04; running minimum from the largest: 0.04, 0.04, 0.02, 0.02
    assert benjamini_hochberg(P) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert bonferroni(P) == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert correct(P, "holm") == holm(P) and correct(P, "bh") == benjamini_hochberg(P)


def test_nan_is_kept_and_not_counted_and_a_larger_family_weighs_more():
    p = [math.nan, 0.01, 0.02]
    assert math.isnan(holm(p)[0]) and holm(p)[1:] == pytest.approx([0.02, 0.02])
    # m = 5 hypotheses, two of them tested here: Holm 5 x 0.01, max(0.05, 4 x 0.02); BH 5 x 0.01 / 1, 5 x 0.02 / 2
    assert holm(p, comparisons=5)[1:] == pytest.approx([0.05, 0.08])
    assert benjamini_hochberg(p, comparisons=5)[1:] == pytest.approx([0.05, 0.05])


def test_capped_at_one_ties_and_order_kept():
    assert holm([0.6, 0.6]) == [1.0, 1.0] and benjamini_hochberg([0.6, 0.6]) == [0.6, 0.6]
    assert benjamini_hochberg([0.9, 0.001]) == pytest.approx([0.9, 0.002])


@pytest.mark.parametrize("bad", [0, 1])
def test_a_family_smaller_than_its_tests_is_refused(bad):
    with pytest.raises(ConfigError, match=f"comparisons must be >= 2, got {bad}"):
        holm([0.01, 0.02], comparisons=bad)
    with pytest.raises(ConfigError, match="correction='sidak'"):
        correct(P, "sidak")


def test_compare_corrects_each_family():
    """Two systems against a baseline on two measures: per measure (family of 2) or the whole table (family of 4)."""
    q = [f"q{i}" for i in range(8)]
    base = {m: dict(zip(q, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])) for m in ("a", "b")}
    up = {m: {k: v + d for (k, v), d in zip(base[m].items(), [0.1, 0.2, 0.05, 0.15, 0.1, 0.12, 0.08, 0.1])}
          for m in ("a", "b")}
    down = {m: {k: v - d for (k, v), d in zip(base[m].items(), [0.0, 0.1, 0.02, 0.05, 0.0, 0.01, 0.03, 0.0])}
            for m in ("a", "b")}
    per_query = {"base": base, "up": up, "down": down}
    raw = compare(per_query, "base", correction="bonferroni")
    p = raw[raw["system"] != "base"]["p_value"].tolist()
    for family, size in (("table", 4), ("measure", 2)):
        df = compare(per_query, "base", family=family, correction="holm")
        assert df.attrs["correction"] == "holm" and df.attrs["comparisons"] == size
        got = df[df["system"] != "base"]["p_corrected"].tolist()
        if family == "table":
            assert got == pytest.approx(holm(p))
        else:   # rows alternate measures: a, b for up, then a, b for down
            a, b = holm([p[0], p[2]]), holm([p[1], p[3]])
            assert got == pytest.approx([a[0], b[0], a[1], b[1]])
