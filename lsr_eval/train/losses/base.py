"""What every ranking loss takes from a micro-batch: query vectors ``wq`` (B x V) and slot-major document vectors
``wd`` (B(1+n) x V: the B positives, then the B first negatives, ...), and returns ``{"rank": tensor}``."""

from __future__ import annotations

from typing import Any, Sequence

import torch


class RankingLoss:
    """A ranking loss built from its config section (``loss.*``)."""

    def __init__(self, config: Any) -> None:
        self.config = config

    def __call__(self, wq: torch.Tensor, wd: torch.Tensor, examples: Sequence[Any],
                 rank: int = 0) -> dict[str, torch.Tensor]:
        raise NotImplementedError


class Distillation(RankingLoss):
    """A loss on each query's (positive, negatives) scores against a teacher's: the subclass's :meth:`compare`."""

    def __call__(self, wq: torch.Tensor, wd: torch.Tensor, examples: Sequence[Any],
                 rank: int = 0) -> dict[str, torch.Tensor]:
        b = len(examples)
        own = wd.view(wd.shape[0] // b, b, -1)
        pos = (wq * own[0]).sum(-1)
        neg = (wq.unsqueeze(0) * own[1:]).sum(-1).T                 # B x n
        t_pos = torch.tensor([e.teacher_pos for e in examples], dtype=torch.float32, device=wd.device)
        t_neg = torch.tensor([list(e.teacher_neg) for e in examples], dtype=torch.float32, device=wd.device)
        return self.compare(pos, neg, t_pos, t_neg)

    def compare(self, pos: torch.Tensor, neg: torch.Tensor, t_pos: torch.Tensor,
                t_neg: torch.Tensor) -> dict[str, torch.Tensor]:
        raise NotImplementedError
