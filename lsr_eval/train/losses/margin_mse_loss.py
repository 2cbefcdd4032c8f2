"""MarginMSE distillation (Hofstätter et al., arXiv:2010.02666): the squared difference between the student's and the
teacher's margins s(q, d+) - s(q, d-), averaged over queries and negatives."""

from __future__ import annotations

import torch

from lsr_eval.train.losses.base import Distillation


def margin_mse(pos: torch.Tensor, neg: torch.Tensor, t_pos: torch.Tensor,
               t_neg: torch.Tensor) -> dict[str, torch.Tensor]:
    """``pos``/``t_pos``: B student/teacher positive scores; ``neg``/``t_neg``: B x n negative scores."""
    margin = pos.unsqueeze(1) - neg
    t_margin = t_pos.unsqueeze(1) - t_neg
    return {"rank": ((margin - t_margin.to(margin.dtype)) ** 2).mean()}


class MarginMSE(Distillation):
    def compare(self, pos, neg, t_pos, t_neg):
        return margin_mse(pos, neg, t_pos, t_neg)
