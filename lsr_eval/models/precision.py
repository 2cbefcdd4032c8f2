"""Forward-pass precision: ``fp32`` (the default, :data:`~lsr_eval.models.options.DEFAULT_PRECISION`), ``bf16``,
or ``auto``, resolved at run time from what the hardware does fast.

bf16 matrix products pay off on CUDA GPUs that support them and on CPUs with AVX-512 BF16 or AMX-BF16 instructions;
on an AVX2 / plain AVX-512 CPU, PyTorch emulates them and they ran 3-40x slower than float32 (measured on the
development machines; splade-tiny encoding 7x slower on an AVX2 EPYC), so ``auto`` picks float32 there. The CPU's
instruction sets come from :func:`lsr_eval.hardware.cpu_flags`. Every stage resolves its precision for the device
its model is on and records the resolved :class:`Precision` (cache keys carry the resolved name, never ``auto``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from lsr_eval import hardware
from lsr_eval.models.options import DEFAULT_PRECISION, PRECISIONS, check_choice

#: name -> dtype of the forward pass (``auto`` resolves to one of these; the names are PRECISIONS but ``auto``).
DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16}


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


def _auto(device: torch.device, flags: frozenset[str]) -> tuple[str, str]:
    if device.type == "cuda":
        if torch.cuda.is_bf16_supported():
            return "bf16", f"{torch.cuda.get_device_name(device)} supports bf16"
        return "fp32", f"{torch.cuda.get_device_name(device)} lacks bf16"
    if device.type == "cpu":
        native = sorted(set(hardware.CPU_BF16_FLAGS) & flags)
        if native:
            return "bf16", f"CPU has {', '.join(native)}"
        return "fp32", f"CPU lacks {' and '.join(hardware.CPU_BF16_FLAGS)} (bf16 would be emulated)"
    return "fp32", f"no bf16 rule for device type {device.type!r}"


def resolve_precision(requested: str = DEFAULT_PRECISION, device: torch.device | str = "cpu",
                      flags: frozenset[str] | None = None) -> Precision:
    """``requested`` (auto, fp32, bf16) on ``device`` -> a :class:`Precision`; ``flags`` overrides the CPU's."""
    check_choice("precision", requested, PRECISIONS)
    device = torch.device(device)
    if requested != "auto":
        return Precision(requested, requested, "requested")
    name, reason = _auto(device, hardware.cpu_flags() if flags is None else flags)
    return Precision(name, "auto", reason)
