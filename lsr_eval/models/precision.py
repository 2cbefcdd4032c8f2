"""Inference precision chosen at run time from what the hardware does fast.

bf16 matrix products pay off on CUDA GPUs that support them and on CPUs with AVX-512 BF16 or AMX-BF16 instructions;
on an AVX2 / plain AVX-512 CPU, PyTorch emulates them and they ran 3-40x slower than float32 (measured on the
development machines; splade-tiny encoding 7x slower on an AVX2 EPYC), so ``auto`` picks float32 there. The CPU's instruction sets are read from ``/proc/cpuinfo``
(Linux) each time a process first asks; elsewhere ``auto`` means float32 on CPUs.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from lsr_eval.models.options import PRECISIONS, check_choice

#: name -> dtype of the forward pass (``auto`` resolves to one of these; the names are PRECISIONS but ``auto``).
DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16}
#: /proc/cpuinfo flags that make CPU bf16 matrix products native.
CPU_BF16_FLAGS: tuple[str, ...] = ("avx512_bf16", "amx_bf16")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True, slots=True)
class Precision:
    """A resolved precision: ``name`` (fp32 or bf16), what was asked, and why (recorded in manifests)."""

    name: str
    requested: str
    reason: str

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.name]

    @property
    def bf16(self) -> bool:
        return self.name == "bf16"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def cpu_flags(path: Path = CPUINFO) -> frozenset[str]:
    """The CPU's instruction-set flags (empty when ``path`` is unreadable, e.g. not Linux)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def _auto(device: torch.device, flags: frozenset[str]) -> tuple[str, str]:
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return "bf16", f"{torch.cuda.get_device_name(device)} supports bf16"
        return "fp32", f"{torch.cuda.get_device_name(device)} lacks bf16"
    if device.type == "cpu":
        native = sorted(set(CPU_BF16_FLAGS) & flags)
        if native:
            return "bf16", f"CPU has {', '.join(native)}"
        return "fp32", f"CPU lacks {' and '.join(CPU_BF16_FLAGS)} (bf16 would be emulated)"
    return "fp32", f"no bf16 rule for device type {device.type!r}"


def resolve_precision(requested: str, device: torch.device | str = "cpu",
                      flags: frozenset[str] | None = None) -> Precision:
    """``requested`` (auto, fp32, bf16) on ``device`` -> a :class:`Precision`; ``flags`` overrides the CPU's."""
    check_choice("precision", requested, PRECISIONS)
    device = torch.device(device)
    if requested != "auto":
        return Precision(requested, requested, "requested")
    name, reason = _auto(device, cpu_flags() if flags is None else flags)
    return Precision(name, "auto", reason)
