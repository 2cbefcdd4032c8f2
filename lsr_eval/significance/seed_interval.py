"""Mean, standard deviation and 95% interval of a measure over training seeds (Student 1908).

With one value ``x_s`` per seed (``n`` seeds, each the measure of one trained model over the whole query set), the
seeds are taken as a sample of the training randomness::

    mean = sum_s x_s / n,    sd = sqrt(sum_s (x_s - mean)^2 / (n - 1)),
    95% interval = mean -+ t_{0.975, n-1} * sd / sqrt(n)

with ``t_{0.975, n-1}`` the 0.975 quantile of Student's t distribution with n - 1 degrees of freedom
(``scipy.stats.t.ppf``; 4.303 for 3 seeds). The interval says where the mean over seeds of this recipe lies, not
where one more seed would land. One seed has no sd and no interval (NaN): it is reported, never widened by guess.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lsr_eval.errors import InputError

#: Two-sided confidence level of the interval.
LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class SeedSummary:
    """A measure over seeds: mean, sample sd, the t interval and the number of seeds."""

    mean: float
    sd: float          #: sample standard deviation (n - 1); NaN for one seed
    low: float         #: lower end of the 95% interval; NaN for one seed
    high: float
    seeds: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def t_quantile(df: float, level: float = LEVEL) -> float:
    """``t_{(1 + level) / 2, df}``: the two-sided critical value of Student's t."""
    from scipy import stats

    return float(stats.t.ppf((1 + level) / 2, df))


def finite_values(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    """``values`` as float64, refused when empty or not finite (``what`` names them in the error)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0:
        raise InputError(f"{what}: expected one value per seed, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise InputError(f"{what}: values must be finite numbers, got {x.tolist()}")
    return x


def seed_summary(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> SeedSummary:
    """Mean, sd and t interval of one value per seed."""
    x = finite_values(values, "seed summary")
    n = len(x)
    mean = math.fsum(x.tolist()) / n
    if n == 1:
        return SeedSummary(mean, math.nan, math.nan, math.nan, 1)
    sd = float(np.std(x, ddof=1))
    half = t_quantile(n - 1, level) * sd / math.sqrt(n)
    return SeedSummary(mean, sd, mean - half, mean + half, n)
