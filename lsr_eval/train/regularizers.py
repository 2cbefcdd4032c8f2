"""Sparsity regularisers on a batch of SPLADE vectors w (N x V), and batch sparsity statistics.

FLOPS (Paria et al., ICLR 2020, eq. 4): ``sum_j (mean_i |w_ij|)^2``, the mean over the documents of all
processes; L1 (Lassance & Clinchant, SIGIR 2022): ``mean_i sum_j |w_ij|``.

Design notes: docs/design.md."""

from __future__ import annotations

import torch

from lsr_eval.train.distributed import all_reduce_mean, sum_nograd


def flops(w: torch.Tensor) -> torch.Tensor:
    """``sum_j (mean_i |w_ij|)^2``, the mean over the rows of every process."""
    return (all_reduce_mean(w.abs().mean(0)) ** 2).sum()


def l1(w: torch.Tensor) -> torch.Tensor:
    """``mean_i sum_j |w_ij|`` over this process's rows."""
    return w.abs().sum(1).mean()


REGULARIZERS = {"flops": flops, "l1": l1}


def regularize(kind: str, w: torch.Tensor, slots: int = 1) -> torch.Tensor | None:
    """Regulariser ``kind`` (``none``, ``l1``, ``flops``) of ``w`` whose rows are ``slots`` equal consecutive
    groups (averaged); None for ``none``."""
    if kind == "none":
        return None
    fn = REGULARIZERS[kind]
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
