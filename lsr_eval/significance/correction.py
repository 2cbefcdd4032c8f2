"""Bonferroni correction for multiple comparisons (Bonferroni 1936; Dunn, JASA 1961).

Testing ``m`` hypotheses, each p-value is multiplied by ``m`` (capped at 1): ``p_i' = min(1, m p_i)``. Rejecting
when ``p_i' < alpha`` keeps the probability of any false rejection (family-wise error rate) at most ``alpha``, for any
dependence between the tests.
"""

from __future__ import annotations

import math
from typing import Sequence

from lsr_eval.errors import ConfigError


def bonferroni(p_values: Sequence[float], comparisons: int | None = None) -> list[float]:
    """``min(1, m p)`` for each p-value; ``m`` is ``comparisons`` or, by default, the number of p-values (NaN, e.g.
    for a baseline row, stays NaN and is not counted)."""
    m = comparisons if comparisons is not None else sum(1 for p in p_values if not math.isnan(p))
    if m < 1:
        raise ConfigError(f"Bonferroni: the number of comparisons must be positive, got {m}")
    return [p if math.isnan(p) else min(1.0, p * m) for p in p_values]
