"""FLOPS (Paria et al., ICLR 2020, eq. 4): ``sum_j (mean_i |w_ij|)^2``, the mean over the documents of all
processes."""

from __future__ import annotations

import torch

from lsr_eval.train.distributed import all_reduce_mean


def flops(w: torch.Tensor) -> torch.Tensor:
    """``sum_j (mean_i |w_ij|)^2``, the mean over the rows of every process."""
    return (all_reduce_mean(w.abs().mean(0)) ** 2).sum()
