"""KL-divergence distillation (Lin et al., arXiv:2010.11386): KL(teacher || student) over the softmax of each query's
(positive, negatives) scores, averaged over queries."""

from __future__ import annotations

import torch

from lsr_eval.train.losses.base import Distillation


def kl_div(pos: torch.Tensor, neg: torch.Tensor, t_pos: torch.Tensor, t_neg: torch.Tensor) -> dict[str, torch.Tensor]:
    """Same arguments as :func:`lsr_eval.train.losses.margin_mse_loss.margin_mse`."""
    student = torch.log_softmax(torch.cat([pos.unsqueeze(1), neg], dim=1), dim=1)
    teacher = torch.log_softmax(torch.cat([t_pos.unsqueeze(1), t_neg], dim=1).to(student.dtype), dim=1)
    return {"rank": (teacher.exp() * (teacher - student)).sum(1).mean()}


class KLDiv(Distillation):
    def compare(self, pos, neg, t_pos, t_neg):
        return kl_div(pos, neg, t_pos, t_neg)
