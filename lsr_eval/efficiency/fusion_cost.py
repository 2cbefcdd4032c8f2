"""Cost of a fusion from the costs of its parts: every part retrieves in full, then the runs are fused (fusing a
few thousand scored hits per query is not counted: it is negligible beside retrieval).

- FLOPs: the sum of the parts' expected FLOPs;
- latency, per query: the **sum** of the parts' times (``sequential``: the parts run one after the other) and their
  **max** (``parallel``: the parts run at the same time, on enough cores), then summarised (mean, p50, p99) over
  the queries, which must be the same queries in the same order for every part.

E.g. parts with per-query times [1, 4] and [2, 2] ms: sequential [3, 6] (mean 4.5), parallel [2, 4] (mean 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence, get_args

from lsr_eval.efficiency.latency import LatencySummary
from lsr_eval.errors import ConfigError, InputError

Combine = Literal["sequential", "parallel"]
COMBINE_RULES: tuple[str, ...] = get_args(Combine)
_COMBINE = {"sequential": sum, "parallel": max}
#: What the cost of a fusion is, in words (figure notes and tables say it once).
RULE = ("fusion cost = its parts' cost: FLOPs summed; latency per query summed (parts one after the other, "
        "'sequential') or the max (parts in parallel); fusing itself not counted")


def fused_flops(parts: Sequence[float]) -> float:
    """Sum of the parts' FLOPs."""
    if not parts:
        raise InputError("a fusion needs at least one part")
    return float(sum(parts))


def fused_latency(parts: Mapping[str, Sequence[float]], combine: Combine = "sequential") -> LatencySummary:
    """Per-query times (ms) of each part (same queries, same order) combined per query by ``combine``."""
    if combine not in _COMBINE:
        raise ConfigError(f"combine={combine!r}: expected one of {', '.join(COMBINE_RULES)}")
    if not parts:
        raise InputError("a fusion needs at least one part")
    lengths = {name: len(ms) for name, ms in parts.items()}
    if len(set(lengths.values())) != 1:
        raise InputError(f"fusion parts were timed on different numbers of queries: {lengths}")
    per_query = [_COMBINE[combine](times) for times in zip(*parts.values())]
    return LatencySummary.from_ms(per_query)


@dataclass(frozen=True)
class FusionCost:
    flops: float | None
    sequential: LatencySummary | None
    parallel: LatencySummary | None

    def row(self) -> dict[str, Any]:
        """Columns of a benchmark table row."""
        out: dict[str, Any] = {}
        if self.flops is not None:
            out["flops"] = self.flops
        if self.sequential is not None and self.parallel is not None:
            out.update(latency_mean_ms=self.sequential.mean_ms, latency_p50_ms=self.sequential.p50_ms,
                       latency_p99_ms=self.sequential.p99_ms, latency_parallel_mean_ms=self.parallel.mean_ms,
                       latency_parallel_p50_ms=self.parallel.p50_ms, latency_parallel_p99_ms=self.parallel.p99_ms,
                       latency_rule="sequential (sum of parts); parallel: max of parts")
        return out


def fusion_cost(flops: Sequence[float | None], latency_ms: Mapping[str, Sequence[float] | None]) -> FusionCost:
    """The cost of a fusion whose parts have ``flops`` and per-query ``latency_ms``; a cost is None when a part
    lacks it (never a partial sum)."""
    f = fused_flops([float(x) for x in flops]) if flops and all(x is not None for x in flops) else None
    if latency_ms and all(v is not None for v in latency_ms.values()):
        times = {k: list(v) for k, v in latency_ms.items()}  # type: ignore[arg-type]
        return FusionCost(f, fused_latency(times, "sequential"), fused_latency(times, "parallel"))
    return FusionCost(f, None, None)
