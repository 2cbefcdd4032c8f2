"""Ranking losses on SPLADE scores s(q, d) = q . d (dot product of vocabulary-sized weight vectors).

Each returns ``{"rank": tensor}`` (a scalar, mean over the queries of this process) so that the objective can
add its regularisers and log every part by name.

* InfoNCE with in-batch and hard negatives (SPLADE v2, Formal et al., arXiv:2109.10086, eq. 3; van den Oord et al.
  2018): for query i with positive d_i+ among the candidate documents D (every positive and hard negative of the
  batch, gathered over processes),

      L = -mean_i log( exp s(q_i, d_i+) / sum_{d in D, d not masked} exp s(q_i, d) )

  A candidate is masked for query i when it is another copy of one of i's judged positives (false negative).
  Without in-batch negatives D is i's own positive and hard negatives (naver/splade ``PairwiseNLL``).
* MarginMSE (Hofstätter et al., "Improving Efficient Neural Ranking Models with Cross-Architecture Knowledge
  Distillation", arXiv:2010.02666), over the n negatives of each query:

      L = mean_{i,k} ((s_i+ - s_ik-) - (t_i+ - t_ik-))^2

* KL-divergence distillation (Lin et al., "In-Batch Negatives for Knowledge Distillation with Tightly-Coupled
  Teachers for Dense Retrieval", arXiv:2010.11386; naver/splade ``DistilKLLoss``), over each query's list
  (positive, n negatives), with P = softmax(teacher scores), Q = softmax(student scores):

      L = mean_i KL(P_i || Q_i) = mean_i sum_k P_ik (log P_ik - log Q_ik)

  With one negative both distillation losses equal naver/splade's.
"""

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
