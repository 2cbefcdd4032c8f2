"""Two-sided paired Student's t-test on per-query scores (Student 1908; for IR, Smucker, Allan & Carterette, CIKM
2007, who find it agrees closely with the randomisation test).

With differences ``d_i = treatment_i - baseline_i`` over ``n`` queries, mean ``d̄`` and sample standard deviation
``s = sqrt(sum (d_i - d̄)^2 / (n - 1))``::

    t = d̄ / (s / sqrt(n)),        p = 2 P(T_{n-1} >= |t|)

with ``T_{n-1}`` Student's t distribution with n - 1 degrees of freedom (``scipy.stats.t.sf``); this is
``scipy.stats.ttest_rel``. When every difference is zero (``s = 0``, ``d̄ = 0``) the systems are identical on these
queries: t = 0 and p = 1 (scipy gives NaN); when the differences are all equal and non-zero, t = ±inf and p = 0.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from lsr_eval.significance._paired import TestResult, differences


def paired_t_test(baseline: Sequence[float] | np.ndarray, treatment: Sequence[float] | np.ndarray) -> TestResult:
    """Two-sided paired t-test of ``treatment`` against ``baseline`` (same queries, same order)."""
    from scipy import stats

    d = differences(baseline, treatment, min_queries=2)
    n = len(d)
    mean = math.fsum(d.tolist()) / n
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        t = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
        p = 1.0 if mean == 0.0 else 0.0
    else:
        t = mean / (sd / math.sqrt(n))
        p = float(min(1.0, 2.0 * stats.t.sf(abs(t), n - 1)))
    return TestResult(mean, t, p, n)
