"""Whether a SPLADE training run diverged or collapsed, read from its ``log.jsonl`` records.

Criteria (pre-registered for the rescaling grid, ``pipelines/train/rescale-mlm-minilm-base.yaml``), on the ranking
loss (log key ``rank``; the regularisers' warm-up would move the total):

* **diverged**: a non-finite loss at any step (logged as null), or the mean ranking loss of the last ``window``
  steps not below that of the first ``window`` (means over the finite values of those steps);
* **collapsed**: the mean ranking loss of the last ``window`` steps within ``tolerance`` (relative) of ln(C), the
  InfoNCE loss when every candidate gets the same score (C candidates per query: with in-batch negatives, every
  positive and negative of the batch, ``batch_size x (1 + n_negatives)``). A model that scores every text alike
  sits there however long it trains (docs/training.md, the MiniLM side note: k = 16 with divided input).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from lsr_eval.errors import InputError

WINDOW = 10
TOLERANCE = 0.05


@dataclass(frozen=True)
class Stability:
    """Summary of one run's log (definitions in the module doc)."""

    steps: int
    first_rank: float          # mean ranking loss, first ``window`` steps
    last_rank: float           # mean ranking loss, last ``window`` steps
    non_finite_steps: int
    uniform_loss: float        # ln(candidates)
    diverged: bool
    collapsed: bool
    max_grad_norm: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def stability(records: Iterable[Mapping[str, Any]], candidates: int, *, key: str = "rank", window: int = WINDOW,
              tolerance: float = TOLERANCE) -> Stability:
    """:class:`Stability` of a run's log ``records`` (one per step, ``None`` for a non-finite value) for an InfoNCE
    loss over ``candidates`` documents per query."""
    if candidates < 2:
        raise InputError(f"candidates={candidates}: InfoNCE needs at least 2 candidates per query")
    rows = sorted(records, key=lambda r: r["step"])
    if not rows:
        raise InputError("stability: the log has no record")
    if any(key not in r for r in rows):
        raise InputError(f"stability: a log record has no {key!r} (known: {', '.join(rows[0])})")
    values = [r[key] for r in rows]
    ok = [v is not None and math.isfinite(v) for v in values]
    bad = ok.count(False)
    first = _mean([float(v) for v, good in zip(values[:window], ok[:window]) if good])
    last = _mean([float(v) for v, good in zip(values[-window:], ok[-window:]) if good])
    uniform = math.log(candidates)
    grads = [r.get("grad_norm") for r in rows]
    return Stability(
        steps=len(rows), first_rank=first, last_rank=last, non_finite_steps=bad, uniform_loss=uniform,
        diverged=bool(bad) or not last < first,
        collapsed=math.isfinite(last) and abs(last - uniform) <= tolerance * uniform,
        max_grad_norm=max((float(g) for g in grads if g is not None and math.isfinite(g)), default=math.nan))
