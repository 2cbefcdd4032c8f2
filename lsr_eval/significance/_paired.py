"""Shared input handling of the paired tests: two equally long vectors of per-query scores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lsr_eval.errors import InputError


@dataclass(frozen=True, slots=True)
class TestResult:
    """A two-sided paired test of treatment against baseline: mean difference, statistic, p-value."""

    mean_difference: float  #: mean over queries of treatment - baseline
    statistic: float  #: t for the t-test; |sum of differences| for the randomisation test
    p_value: float
    queries: int


def differences(baseline: Sequence[float] | np.ndarray, treatment: Sequence[float] | np.ndarray,
                min_queries: int = 1) -> np.ndarray:
    """``treatment - baseline`` per query as float64; errors on unequal lengths, too few queries or non-finite
    values."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(treatment, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise InputError(f"paired test: baseline and treatment need one score per query each, got shapes "
                         f"{a.shape} and {b.shape}")
    if len(a) < min_queries:
        raise InputError(f"paired test: needs at least {min_queries} queries, got {len(a)}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("paired test: scores must be finite numbers")
    return b - a
