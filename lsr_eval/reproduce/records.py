"""What one run folder records, as a flat row (:func:`lsr_eval.reproduce.compare.flatten`): the same function reads
the committed folder and the rerun, so both sides hold the same keys.

From a run's ``manifest.json``: its experiment (the identity: dataset, settings, model by sha256 or file sizes,
BM25 ``k1``/``b``; paths, file times and the machine's model folder left out), its counts, a fusion's settings and
tuning, the precision each encoder resolved to, the vectors' sizes, an approximate engine's exact recall, an
imported run's size and sha256; its ``efficiency.json`` (timings are skipped by kind); with ``metrics``, its
``metrics`` (a benchmark's table holds them already).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.manifest import read_manifest
from lsr_eval.reproduce.compare import flatten

#: Manifest sections recorded as they are (environment keys dropped by ``flatten``).
SECTIONS = ("counts", "settings", "tuning", "vectors", "quantization", "run")


def identity(experiment: Mapping[str, Any] | None) -> dict[str, Any]:
    """An experiment without what depends on the machine: a local model folder's file times (sizes stay), the
    model paths of its settings (the model is identified by ``model``), an imported run's path."""
    exp = copy.deepcopy(dict(experiment or {}))
    model = exp.get("model")
    if isinstance(model, dict) and isinstance(model.get("files"), dict):
        model["files"] = {name: (v[0] if isinstance(v, list) else v) for name, v in model["files"].items()}
    settings = exp.get("settings")
    if isinstance(settings, dict):
        for key in ("model", "query_model"):
            if settings.get(key) is not None:
                settings[key] = "(local path)"
    if isinstance(exp.get("run"), str):
        exp.pop("run")
    return exp


def run_record(folder: Path, metrics: bool = False) -> dict[str, Any]:
    """The flat row of the run in ``folder`` (empty when it has no manifest)."""
    manifest = read_manifest(folder)
    if manifest is None:
        return {}
    row = flatten(identity(manifest.get("experiment")), "experiment.")
    for section in SECTIONS:
        if isinstance(manifest.get(section), dict):
            row.update(flatten(manifest[section], f"{section}."))
    inference = manifest.get("inference") or {}
    for side, p in (inference.get("precision") or {}).items():
        row[f"inference.precision.{side}"] = (p or {}).get("name")
    approx = manifest.get("approximation") or {}
    if approx:
        row.update(flatten({k: v for k, v in approx.items() if k != "reference_index"}, "approximation."))
    if metrics:
        row.update(flatten(manifest.get("metrics") or {}, "metrics."))
    eff = folder / "efficiency.json"
    if eff.is_file():
        row.update(flatten(json.loads(eff.read_text(encoding="utf-8")), "efficiency."))
    return row
