"""Which device a model runs on: ``auto`` picks ``cuda:LOCAL_RANK`` when CUDA is available (one process per GPU
under torchrun), else the CPU; ``cpu``, ``cuda`` and ``cuda:N`` are taken as given, after checking that CUDA and
that device exist. The device is recorded in manifests, never in cache keys (the vectors of one precision agree
across devices within that precision's tolerance)."""

from __future__ import annotations

import os

import torch

from lsr_eval.errors import ConfigError
from lsr_eval.models.options import DEFAULT_DEVICE, check_device


def resolve_device(name: str = DEFAULT_DEVICE, local_rank: int | None = None) -> torch.device:
    """``name`` (:data:`~lsr_eval.models.options.DEVICE_CHOICES`) -> a ``torch.device`` that exists here.
    ``local_rank`` (default ``$LOCAL_RANK``, else 0) is the GPU ``auto`` and ``cuda`` pick."""
    check_device(name)
    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"device={name!r}: CUDA is not available (torch {torch.__version__}, "
                          f"{'built with CUDA ' + torch.version.cuda if torch.version.cuda else 'a CPU build'}); "
                          "use --device cpu, or install a CUDA build of torch (docs/guide.md, Precision and device)")
    if name in ("auto", "cuda"):
        index = int(os.environ.get("LOCAL_RANK", 0)) if local_rank is None else local_rank
    else:
        index = int(name.split(":")[1])
    count = torch.cuda.device_count()
    if index >= count:
        raise ConfigError(f"device={name!r}: cuda:{index} does not exist ({count} CUDA device(s))")
    return torch.device("cuda", index)
