"""Two arms compared across training seeds: a paired t-test on per-seed means, or Welch's t-test when the seeds
are not paired (Student 1908; Welch, Biometrika 1947).

Paired: ``t = d̄ / (s_d / sqrt(n))`` with ``df = n - 1`` over the per-seed differences; unpaired: Welch's t
with the Welch-Satterthwaite df. The unit of replication is the training run, not the query.

Design notes: docs/design.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Mapping

import numpy as np

from lsr_eval.errors import InputError
from lsr_eval.significance.seed_interval import LEVEL, finite_values, t_quantile

Pairing = Literal["auto", "paired", "welch"]


@dataclass(frozen=True, slots=True)
class SeedComparison:
    """Treatment minus baseline over seeds: the mean difference, its 95% interval, t, df, p and which test."""

    mean_difference: float
    low: float
    high: float
    statistic: float
    df: float
    p_value: float
    paired: bool
    seeds: tuple[int, ...]  #: the common seeds (paired) or every seed of either arm (Welch)

    @property
    def excludes_zero(self) -> bool:
        """The decision rule: the 95% interval lies wholly on one side of 0."""
        return self.low > 0 or self.high < 0


def _t_result(diff: float, se: float, df: float, level: float) -> tuple[float, float, float, float]:
    """(t, p, low, high) of a difference with standard error ``se`` on ``df`` degrees of freedom."""
    from scipy import stats

    if se == 0.0:
        t = 0.0 if diff == 0.0 else math.copysign(math.inf, diff)
        return t, (1.0 if diff == 0.0 else 0.0), diff, diff
    t = diff / se
    half = t_quantile(df, level)
    return t, float(min(1.0, 2.0 * stats.t.sf(abs(t), df))), diff - half * se, diff + half * se


def seed_t_test(baseline: Mapping[int, float], treatment: Mapping[int, float], pair: Pairing = "auto",
                level: float = LEVEL) -> SeedComparison:
    """Treatment against baseline over seeds (``{seed: value}`` per arm), paired by seed number or Welch."""
    if pair not in ("auto", "paired", "welch"):
        raise InputError(f"seed t-test: pair={pair!r}: expected auto, paired or welch")
    same = set(baseline) == set(treatment)
    if pair == "paired" and not same:
        raise InputError(f"seed t-test: paired by seed needs the same seeds in both arms, got "
                         f"{sorted(baseline)} and {sorted(treatment)}")
    if pair == "paired" or (pair == "auto" and same):
        seeds = tuple(sorted(baseline))
        a = finite_values([baseline[s] for s in seeds], "seed t-test (baseline)")
        b = finite_values([treatment[s] for s in seeds], "seed t-test (treatment)")
        if len(seeds) < 2:
            raise InputError(f"seed t-test: needs at least 2 seeds, got {len(seeds)}")
        d = b - a
        n = len(d)
        diff = math.fsum(d.tolist()) / n
        se = float(np.std(d, ddof=1)) / math.sqrt(n)
        t, p, low, high = _t_result(diff, se, n - 1, level)
        return SeedComparison(diff, low, high, t, float(n - 1), p, True, seeds)
    a = finite_values(list(baseline.values()), "seed t-test (baseline)")
    b = finite_values(list(treatment.values()), "seed t-test (treatment)")
    if len(a) < 2 or len(b) < 2:
        raise InputError(f"seed t-test (Welch): needs at least 2 seeds per arm, got {len(a)} and {len(b)}")
    va, vb = float(np.var(a, ddof=1)) / len(a), float(np.var(b, ddof=1)) / len(b)
    diff = math.fsum(b.tolist()) / len(b) - math.fsum(a.tolist()) / len(a)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else float(len(a) + len(b) - 2)
    t, p, low, high = _t_result(diff, se, df, level)
    return SeedComparison(diff, low, high, t, df, p, False, tuple(sorted(set(baseline) | set(treatment))))
