"""Pareto front of an effectiveness-cost trade-off (lower cost and higher effectiveness are better)."""

from __future__ import annotations

import math
from typing import Sequence

from lsr_eval.errors import InputError


def pareto_front(costs: Sequence[float], values: Sequence[float]) -> list[int]:
    """Indices of the points that no other point dominates, by increasing cost.

    Point j dominates i when ``cost_j <= cost_i`` and ``value_j >= value_i`` with one inequality strict. Sorting
    by (cost ascending, value descending), a point is on the front exactly when its value exceeds every value
    before it (of identical points, the first is kept). O(n log n).
    """
    if len(costs) != len(values):
        raise InputError(f"pareto_front: {len(costs)} costs but {len(values)} values")
    for i, (c, v) in enumerate(zip(costs, values)):
        if not (math.isfinite(c) and math.isfinite(v)):
            raise InputError(f"pareto_front: point {i} has cost {c!r} and value {v!r}; expected finite numbers")
    order = sorted(range(len(costs)), key=lambda i: (costs[i], -values[i], i))
    front, best = [], -math.inf
    for i in order:
        if values[i] > best:
            front.append(i)
            best = values[i]
    return front
