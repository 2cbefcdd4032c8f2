"""What machine runs lsr-eval: CPU model and the instruction sets that decide precision and speed, cores, memory,
and the GPU when torch has one. Recorded in every manifest (:func:`lsr_eval.manifest.write_manifest`), so that a
figure names the hardware that made it, and read by :mod:`lsr_eval.models.precision` (``auto``).

Torch-free and import-light: the CPU is read from ``/proc/cpuinfo`` and ``/proc/meminfo`` (Linux); the GPU is
described only when the process has already imported torch (a manifest never loads torch for it).

:func:`cpu_flags` is the one reader of the CPU's flags: tests replace it (``monkeypatch.setattr(hardware,
"cpu_flags", ...)``) to simulate a CPU with or without native bf16; callers look it up on this module at call
time (``hardware.cpu_flags()``, never a copy imported by name).
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from pathlib import Path
from typing import Any

CPUINFO = Path("/proc/cpuinfo")
MEMINFO = Path("/proc/meminfo")

#: /proc/cpuinfo flags that make CPU bf16 matrix products native (see :mod:`lsr_eval.models.precision`).
CPU_BF16_FLAGS: tuple[str, ...] = ("avx512_bf16", "amx_bf16")
#: Flags a manifest records: the vector and matrix instruction sets that decide the kernels' speed and precision.
RELEVANT_FLAGS: tuple[str, ...] = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16",
                                   "amx_int8", "asimd", "sve")


def _cpuinfo_field(text: str, names: tuple[str, ...]) -> str | None:
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in names:
            return value.strip()
    return None


@functools.lru_cache(maxsize=4)
def _cpuinfo(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@functools.lru_cache(maxsize=4)
def cpu_flags(path: Path = CPUINFO) -> frozenset[str]:
    """The CPU's instruction-set flags (empty when ``path`` is unreadable, e.g. not Linux)."""
    value = _cpuinfo_field(_cpuinfo(path), ("flags", "Features"))
    return frozenset(value.split()) if value else frozenset()


def cpu_model(path: Path = CPUINFO) -> str | None:
    """The CPU's model name (``platform.processor()`` where /proc/cpuinfo has none)."""
    return _cpuinfo_field(_cpuinfo(path), ("model name", "Model", "cpu model")) or platform.processor() or None


def native_bf16_flags() -> list[str]:
    """The flags of :data:`CPU_BF16_FLAGS` this CPU has (through :func:`cpu_flags`, so simulations apply)."""
    return sorted(set(CPU_BF16_FLAGS) & cpu_flags())


def memory_bytes(path: Path = MEMINFO) -> int | None:
    """Physical memory (``MemTotal``), or None when unreadable."""
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def gpus() -> list[dict[str, Any]] | None:
    """Name, memory and compute capability of each CUDA device, with the CUDA version, when this process has
    imported torch and CUDA is available; None otherwise (torch is never imported here)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    out = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        out.append({"index": i, "name": props.name, "memory_bytes": int(props.total_memory),
                    "capability": f"{props.major}.{props.minor}", "cuda": torch.version.cuda})
    return out


def describe() -> dict[str, Any]:
    """The machine as a manifest records it."""
    flags = cpu_flags()
    record: dict[str, Any] = {
        "cpu": cpu_model(), "cpu_flags": [f for f in RELEVANT_FLAGS if f in flags],
        "cpu_bf16_native": bool(native_bf16_flags()), "cores": os.cpu_count(), "memory_bytes": memory_bytes(),
        "platform": platform.platform(),
    }
    cuda = gpus()
    if cuda is not None:
        record["gpus"] = cuda
    return record
