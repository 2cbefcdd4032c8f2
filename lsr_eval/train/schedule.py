"""Schedules of the training loop, as functions of the optimizer step t = 1, 2, ... (the step being taken).

Regulariser weight: quadratic warm-up, ``lambda_t = lambda * (min(t, T) / T)^2`` (Paria et al., ICLR 2020;
naver/splade); learning rate: linear warm-up over W steps, then linear decay or constant.

Design notes: docs/design.md."""

from __future__ import annotations

from lsr_eval.errors import ConfigError
from lsr_eval.settings import Setting, check

#: An optimizer step (0: before the first), or a number of warm-up steps.
STEP = Setting(help="optimizer steps", ge=0, unit="steps")


def reg_weight(lam: float, warmup: int, t: int) -> float:
    """``lambda * (min(t, T) / T)^2`` (``lambda`` when ``T == 0``)."""
    check("t", t, float, STEP)
    check("warmup", warmup, float, STEP)
    if warmup == 0:
        return float(lam)
    return float(lam) * (min(t, warmup) / warmup) ** 2


def lr_factor(t: int, warmup: int, total: int, decay: str = "linear") -> float:
    """Multiplier of the base learning rate at optimizer step ``t`` (1-based) of ``total``."""
    if decay not in ("linear", "constant"):
        raise ConfigError(f"decay={decay!r}: expected one of linear, constant")
    if t < 1 or t > total:
        return 0.0
    if warmup > 0 and t <= warmup:
        return t / warmup
    if decay == "constant":
        return 1.0
    return max(0.0, (total - t + 1) / (total - warmup))


def lr_lambda(warmup: int, total: int, decay: str):
    """For ``torch.optim.lr_scheduler.LambdaLR``, whose counter is the number of scheduler steps taken so far:
    the rate used by optimizer step t is ``lr_factor(t)`` with t = counter + 1."""
    lr_factor(1, warmup, total, decay)  # validates ``decay`` now rather than at the first step

    def fn(count: int) -> float:
        return lr_factor(count + 1, warmup, total, decay)

    return fn
