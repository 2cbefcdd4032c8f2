"""Ranking losses on SPLADE scores s(q, d) = q . d (dot product of vocabulary-sized weight vectors).

InfoNCE with in-batch and hard negatives (SPLADE v2, Formal et al., arXiv:2109.10086, eq. 3), MarginMSE
(Hofstätter et al., arXiv:2010.02666) and KL-divergence distillation (Lin et al., arXiv:2010.11386); each
returns ``{"rank": tensor}``, the mean over this process's queries.

Design notes: docs/design.md."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def info_nce(scores: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """``scores``: B x N candidate scores; ``target``: B indices of the positives; ``mask``: B x N, True where a
    candidate must not count as a negative (never the target)."""
    if mask is not None:
        keep_target = torch.zeros_like(mask)
        keep_target[torch.arange(len(target)), target] = True
        scores = scores.masked_fill(mask & ~keep_target, float("-inf"))
    return {"rank": F.cross_entropy(scores, target)}


def margin_mse(pos: torch.Tensor, neg: torch.Tensor, t_pos: torch.Tensor,
               t_neg: torch.Tensor) -> dict[str, torch.Tensor]:
    """``pos``/``t_pos``: B student/teacher positive scores; ``neg``/``t_neg``: B x n negative scores."""
    margin = pos.unsqueeze(1) - neg
    t_margin = t_pos.unsqueeze(1) - t_neg
    return {"rank": ((margin - t_margin.to(margin.dtype)) ** 2).mean()}


def kl_div(pos: torch.Tensor, neg: torch.Tensor, t_pos: torch.Tensor, t_neg: torch.Tensor) -> dict[str, torch.Tensor]:
    """Same arguments as :func:`margin_mse`; KL(teacher || student) over each query's (positive, negatives)."""
    student = torch.log_softmax(torch.cat([pos.unsqueeze(1), neg], dim=1), dim=1)
    teacher = torch.log_softmax(torch.cat([t_pos.unsqueeze(1), t_neg], dim=1).to(student.dtype), dim=1)
    return {"rank": (teacher.exp() * (teacher - student)).sum(1).mean()}
