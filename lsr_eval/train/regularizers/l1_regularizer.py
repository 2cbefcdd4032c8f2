"""L1 (Lassance & Clinchant, SIGIR 2022): ``mean_i sum_j |w_ij|`` over this process's rows."""

from __future__ import annotations

import torch


def l1(w: torch.Tensor) -> torch.Tensor:
    """``mean_i sum_j |w_ij|`` over this process's rows."""
    return w.abs().sum(1).mean()
