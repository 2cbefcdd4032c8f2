"""Corrections for multiple comparisons: Bonferroni, Holm and Benjamini-Hochberg, as adjusted p-values.

Testing ``m`` hypotheses with p-values ``p_1 .. p_m``, sorted ascending as ``p_(1) <= .. <= p_(m)``:

* **Bonferroni** (Bonferroni 1936; Dunn, JASA 1961): ``p_i' = min(1, m p_i)``. Rejecting when ``p_i' < alpha`` keeps
  the family-wise error rate (the probability of any false rejection) at most ``alpha``, for any dependence.
* **Holm** (Holm, Scand. J. Statist. 1979), step-down: ``p_(i)' = max_{j <= i} min(1, (m - j + 1) p_(j))``. The same
  family-wise guarantee as Bonferroni, under any dependence, and never less powerful.
* **Benjamini-Hochberg** (Benjamini & Hochberg, JRSS B 1995), step-up: ``p_(i)' = min_{j >= i} min(1, m p_(j) / j)``.
  Controls the false discovery rate (the expected share of false rejections among the rejections) at ``alpha`` for
  independent or positively dependent tests: a weaker promise than the family-wise error, and more discoveries.

NaN p-values (a baseline's own row) stay NaN and are not counted in ``m``. ``comparisons`` may name a larger family
than the p-values given (``m`` hypotheses, of which only these are tested here).
"""

from __future__ import annotations

import math
from typing import Callable, Literal, Sequence, get_args

from lsr_eval.errors import ConfigError
from lsr_eval.settings import Setting, check

Correction = Literal["bonferroni", "holm", "bh"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)
#: Each correction's name, and what a significance marker then controls (for legends and notes).
NAMES = {"bonferroni": "Bonferroni", "holm": "Holm", "bh": "Benjamini-Hochberg"}
CONTROLS = {"bonferroni": "family-wise error rate", "holm": "family-wise error rate", "bh": "false discovery rate"}


def _family(p_values: Sequence[float], comparisons: int | None, name: str) -> tuple[list[int], int]:
    """Indices of the finite p-values in ascending order (stable), and the family size ``m``."""
    tested = sorted((i for i, p in enumerate(p_values) if not math.isnan(p)), key=lambda i: p_values[i])
    m = comparisons if comparisons is not None else len(tested)
    check("comparisons", m, int, Setting(help="the family's size: at least the p-values given", ge=max(1, len(tested))),
          name)
    return tested, m


def bonferroni(p_values: Sequence[float], comparisons: int | None = None) -> list[float]:
    """``min(1, m p)`` for each p-value (module doc)."""
    _, m = _family(p_values, comparisons, "Bonferroni")
    return [p if math.isnan(p) else min(1.0, p * m) for p in p_values]


def holm(p_values: Sequence[float], comparisons: int | None = None) -> list[float]:
    """Holm's step-down adjusted p-values (module doc), in the order given."""
    order, m = _family(p_values, comparisons, "Holm")
    out = list(p_values)
    running = 0.0
    for rank, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - rank + 1) * p_values[i]))
        out[i] = running
    return out


def benjamini_hochberg(p_values: Sequence[float], comparisons: int | None = None) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values (module doc), in the order given."""
    order, m = _family(p_values, comparisons, "Benjamini-Hochberg")
    out = list(p_values)
    running = 1.0
    for rank in range(len(order), 0, -1):
        i = order[rank - 1]
        running = min(running, min(1.0, m * p_values[i] / rank))
        out[i] = running
    return out


_METHODS: dict[str, Callable[[Sequence[float], int | None], list[float]]] = {
    "bonferroni": bonferroni, "holm": holm, "bh": benjamini_hochberg}


def check_correction(method: str) -> None:
    if method not in CORRECTIONS:
        raise ConfigError(f"correction={method!r}: expected one of {', '.join(CORRECTIONS)}")


def correct(p_values: Sequence[float], method: Correction = "bonferroni",
            comparisons: int | None = None) -> list[float]:
    """Adjusted p-values of one family by ``method`` (``bonferroni``, ``holm`` or ``bh``)."""
    check_correction(method)
    return _METHODS[method](p_values, comparisons)
