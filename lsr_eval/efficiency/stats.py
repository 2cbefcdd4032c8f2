"""Percentiles for latency and posting-list summaries, with one stated definition."""

from __future__ import annotations

import math
from typing import Sequence

from lsr_eval.errors import InputError
from lsr_eval.settings import Setting, check

#: A percentile's rank.
PERCENTILE = Setting(help="the percentile's rank", ge=0, le=100)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0 <= q <= 100) by linear interpolation between closest ranks (Hyndman & Fan type
    7, numpy's default ``linear``): with ``x`` sorted and ``r = (n - 1) q / 100``,
    ``x[floor r] + (r - floor r) (x[floor r + 1] - x[floor r])``. E.g. ``[1, 2, 3, 4]``: p50 = 2.5, p99 = 3.97."""
    check("percentile q", q, float, PERCENTILE)
    x = sorted(float(v) for v in values)
    if not x:
        raise InputError("percentile of an empty sample")
    r = (len(x) - 1) * q / 100
    lo = math.floor(r)
    hi = min(lo + 1, len(x) - 1)
    return x[lo] + (r - lo) * (x[hi] - x[lo])
