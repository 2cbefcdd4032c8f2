"""How long a rerun should take, from the times its manifests record (for ``--max-minutes``): an estimate, not a
promise, since the recording machine's speed and load are not this one's.

A benchmark: each distinct encoding's encode time, each distinct index's build time, each run's query encoding
and search times, each latency measurement's samples, plus a fixed start-up cost per run (a JVM, a model load). A
single stage: the same from its manifest. A pipeline: the sum of its recorded ``timings`` / ``seconds``. A training
run: its recorded elapsed time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

#: Seconds added per run for what no manifest times (JVM start, model load, evaluation).
PER_RUN_S = 5.0
#: Seconds added once per rerun (imports, the first JVM start).
START_S = 15.0


def _get(doc: Mapping[str, Any], *keys: str) -> float:
    for key in keys:
        doc = doc.get(key) if isinstance(doc, Mapping) else None
    return float(doc) if isinstance(doc, (int, float)) and not isinstance(doc, bool) else 0.0


def in_cache(work: Path | None, recorded: str | None) -> bool:
    """Whether the cached artefact recorded at ``recorded`` (``<work>/<kind>/<label>-<key hash>[/index]``, a folder
    named by what made it) is complete in the work folder ``work`` too."""
    if work is None or not recorded:
        return False
    path = Path(recorded)
    slot = path.parent if path.name == "index" else path
    return (work / slot.parent.name / slot.name / "manifest.json").is_file()


def runs_seconds(manifests: Iterable[Mapping[str, Any]], work: Path | None = None) -> float:
    """Seconds to redo these run manifests (shared encodings and indexes counted once; none that the work folder
    ``work`` holds already)."""
    seen: set[str] = set()
    total = START_S
    for m in manifests:
        total += PER_RUN_S
        paths = m.get("paths") or {}
        encoding, index = paths.get("encoding"), paths.get("index") or (m.get("index") or {}).get("path")
        seen.update(p for p in (encoding, index) if in_cache(work, p))
        if encoding not in seen:
            total += _get(m, "throughput", "encoding", "encode_seconds")
            seen.add(encoding)
        if index not in seen:
            total += _get(m, "counts", "index", "seconds")
            seen.add(index)
        total += (_get(m, "counts", "queries", "seconds") + _get(m, "throughput", "search_seconds")
                  + _get(m, "timings", "search_seconds"))
    return total


def efficiency_seconds(folder: Path) -> float:
    """Seconds of the latency measurement recorded in ``folder/efficiency.json`` (0 when none)."""
    path = folder / "efficiency.json"
    if not path.is_file():
        return 0.0
    latency = json.loads(path.read_text(encoding="utf-8")).get("latency") or {}
    samples = (latency.get("samples_ms") or {}).get("total") or []
    measured = sum(samples) / 1000.0
    warmup = latency.get("warmup_queries") or 0
    per_query = measured / len(samples) if samples else 0.0
    return (measured + warmup * per_query) * int(latency.get("rounds") or 1)


def _sum_numbers(doc: Any) -> float:
    if isinstance(doc, Mapping):
        return sum(_sum_numbers(v) for v in doc.values())
    return float(doc) if isinstance(doc, (int, float)) and not isinstance(doc, bool) else 0.0


def _in_seconds(key: str) -> bool:
    return key == "seconds" or (key.endswith(("_seconds", "_s")) and not key.endswith("per_s"))


def _seconds_leaves(doc: Any, key: str = "") -> float:
    """The sum of every value recorded in seconds (under a key ``seconds``, ``*_seconds`` or ``*_s``) in ``doc``."""
    if isinstance(doc, Mapping):
        return sum(_seconds_leaves(v, key if _in_seconds(key) else str(k)) for k, v in doc.items())
    if isinstance(doc, list):
        return sum(_seconds_leaves(v, key) for v in doc)
    return float(doc) if _in_seconds(key) and isinstance(doc, (int, float)) and not isinstance(doc, bool) else 0.0


def recorded_seconds(manifest: Mapping[str, Any], outputs: Iterable[Mapping[str, Any]] = ()) -> float | None:
    """A pipeline's or training run's recorded duration: its ``timings`` or ``seconds``, else the times its
    ``outputs`` (their JSON documents) record; None when nothing records one."""
    if _get(manifest, "timings", "elapsed_s"):
        return _get(manifest, "timings", "elapsed_s")
    for key in ("seconds", "timings"):
        if key in manifest:
            seconds = _sum_numbers(manifest[key])
            if seconds:
                return START_S + seconds
    seconds = _seconds_leaves(dict(manifest)) + sum(_seconds_leaves(doc) for doc in outputs)
    return START_S + seconds if seconds else None
