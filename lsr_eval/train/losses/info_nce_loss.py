"""InfoNCE with in-batch and hard negatives (SPLADE v2, Formal et al., arXiv:2109.10086, eq. 3): the cross-entropy
of each query's positive among its candidates. ``loss.in_batch``: the positives and negatives of the other queries of
the batch, over all processes, are candidates too (a query's other judged positives never count as negatives)."""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F

from lsr_eval.train import distributed
from lsr_eval.train.data import doc_key
from lsr_eval.train.losses.base import RankingLoss


def info_nce(scores: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """``scores``: B x N candidate scores; ``target``: B indices of the positives; ``mask``: B x N, True where a
    candidate must not count as a negative (never the target)."""
    if mask is not None:
        keep_target = torch.zeros_like(mask)
        keep_target[torch.arange(len(target)), target] = True
        scores = scores.masked_fill(mask & ~keep_target, float("-inf"))
    return {"rank": F.cross_entropy(scores, target)}


class InfoNCE(RankingLoss):
    def __call__(self, wq: torch.Tensor, wd: torch.Tensor, examples: Sequence[Any],
                 rank: int = 0) -> dict[str, torch.Tensor]:
        b = len(examples)
        slots = wd.shape[0] // b
        if self.config.in_batch:
            docs = distributed.gather_cat(wd)
            ids = [e.pos_id for e in examples] + [e.neg_ids[k] for k in range(slots - 1) for e in examples]
            keys = distributed.gather_nograd(torch.tensor([doc_key(d) for d in ids], device=wd.device))
            pos_keys = [torch.tensor([doc_key(d) for d in e.positives], device=wd.device) for e in examples]
            mask = torch.stack([torch.isin(keys, pk) for pk in pos_keys])
            target = torch.arange(b, device=wd.device) + rank * wd.shape[0]
            return info_nce(wq @ docs.T, target, mask)
        own = wd.view(slots, b, -1).transpose(0, 1)             # B x slots x V
        scores = (wq.unsqueeze(1) * own).sum(-1)
        return info_nce(scores, torch.zeros(b, dtype=torch.long, device=wd.device))
