"""A regulariser applied to a micro-batch, and a batch's sparsity statistics."""

from __future__ import annotations

import torch

from lsr_eval.train.distributed import sum_nograd
from lsr_eval.train.regularizers import NONE, get_regularizer


def regularize(kind: str, w: torch.Tensor, slots: int = 1) -> torch.Tensor | None:
    """Regulariser ``kind`` (a name of :data:`lsr_eval.train.regularizers.REGULARIZERS`, or ``none``) of ``w``
    whose rows are ``slots`` equal consecutive groups (averaged); None for ``none``."""
    if kind == NONE:
        return None
    fn = get_regularizer(kind)
    groups = w.reshape(slots, -1, w.shape[-1])
    return torch.stack([fn(g) for g in groups]).mean()


@torch.no_grad()
def sparsity_stats(q: torch.Tensor, d: torch.Tensor) -> dict[str, float]:
    """Batch statistics over all processes: mean active (> 0) dimensions of queries and documents, and the
    FLOPs estimate ``sum_j p_j^q p_j^d`` (p_j: fraction of queries / documents with term j active), the
    expected number of posting matches of a query-document pair (Paria et al. 2020, eq. 2)."""
    aq, ad = (q > 0).float(), (d > 0).float()
    counts = sum_nograd(torch.cat([aq.sum(0), ad.sum(0), q.new_tensor([len(q), len(d)])]))
    v = q.shape[1]
    cq, cd, (nq, nd) = counts[:v], counts[v:2 * v], counts[2 * v:].tolist()
    return {
        "active_dims_q": float(cq.sum()) / nq,
        "active_dims_d": float(cd.sum()) / nd,
        "flops": float(((cq / nq) * (cd / nd)).sum()),
    }
