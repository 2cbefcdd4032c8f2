"""Process groups under ``torchrun`` and the two differentiable collectives the objective needs.

With them (and DDP's 1/W), the loss and its gradient for W processes x batch B equal those of one process x
batch W*B.

Design notes: docs/design.md."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from lsr_eval.errors import ConfigError

#: Seconds a collective may wait for the other processes before failing.
TIMEOUT_S = 1800

_group = None  # process group of the objective's collectives (created with the default one)


@dataclass(frozen=True)
class DistInfo:
    """Where this process stands: ``rank`` of ``world_size``; ``enabled`` when a process group is in use."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    enabled: bool = False
    owned: bool = False       # the process group was created here (and is destroyed by :func:`shutdown`)

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device_type: str) -> DistInfo:
    """Join the process group described by torchrun's environment (``WORLD_SIZE`` > 1), else single process.

    Backend: NCCL for CUDA, gloo otherwise. A group already initialised (by the caller) is used as it is.
    """
    global _group
    world = int(os.environ.get("WORLD_SIZE", "1"))
    owned = False
    if not (dist.is_available() and dist.is_initialized()):
        if world <= 1:
            return DistInfo()
        if not dist.is_available():
            raise ConfigError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
        backend = "nccl" if device_type == "cuda" else "gloo"
        dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=TIMEOUT_S))
        owned = True
    if _group is None and dist.get_world_size() > 1:
        _group = dist.new_group(timeout=datetime.timedelta(seconds=TIMEOUT_S))
    return DistInfo(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")), True, owned)


def active() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _objective_group():
    """The objective's process group (created on first use when the caller initialised the default group)."""
    global _group
    if _group is None:
        _group = dist.new_group(timeout=datetime.timedelta(seconds=TIMEOUT_S))
    return _group


class _GatherCat(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x, group=_objective_group())
        ctx.rows = x.shape[0]
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=_objective_group())
        start = dist.get_rank() * ctx.rows
        return grad[start:start + ctx.rows]


class _AllReduceMean(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y = x.contiguous().clone()
        dist.all_reduce(y, group=_objective_group())
        return y / dist.get_world_size()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        g = grad.contiguous().clone()
        dist.all_reduce(g, group=_objective_group())
        return g / dist.get_world_size()


def gather_cat(x: torch.Tensor) -> torch.Tensor:
    """Concatenation over processes (rank order) of equally shaped ``x``, differentiable (docs/design.md)."""
    return _GatherCat.apply(x) if active() else x


def all_reduce_mean(x: torch.Tensor) -> torch.Tensor:
    """Mean over processes of ``x``, differentiable (docs/design.md)."""
    return _AllReduceMean.apply(x) if active() else x


def gather_nograd(x: torch.Tensor) -> torch.Tensor:
    """Concatenation over processes of equally shaped ``x`` (no gradient)."""
    if not active():
        return x
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous(), group=_objective_group())
    return torch.cat(parts)


def sum_nograd(x: torch.Tensor) -> torch.Tensor:
    """Sum over processes (no gradient; a new tensor)."""
    y = x.detach().clone()
    if active():
        dist.all_reduce(y, group=_objective_group())
    return y


def barrier() -> None:
    if active():
        dist.barrier()


def shutdown(info: DistInfo) -> None:
    """Leave the process groups that :func:`init_distributed` created."""
    global _group
    if info.owned and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
        _group = None
