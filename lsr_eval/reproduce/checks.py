"""Before anything reruns: is the data the data the result was computed on, and the model its model?

Design notes: docs/design.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from lsr_eval.data.trec_files import file_sha256
from lsr_eval.errors import InputError
from lsr_eval.models.offline import OFFLINE_MODELS, offline_path
from lsr_eval.pipeline.splade import model_fingerprint
from lsr_eval.reproduce.compare import COULD_NOT_RUN, REFUSED
from lsr_eval.reproduce.paths import PathMap


@dataclass(frozen=True)
class Blocker:
    """Why rows are not rerun: ``could not run`` (something is missing here) or ``refused`` (it differs)."""

    status: str
    reason: str


def _mismatches(pairs: Iterable[tuple[str, Any, Any]]) -> list[str]:
    return [f"{what} {old} -> {new}" for what, old, new in pairs if old is not None and old != new]


def _fingerprint_pairs(recorded: Mapping[str, Any], now: Mapping[str, Any], prefix: str) -> list[tuple[str, Any, Any]]:
    """(what, recorded, now) for every field of a recorded fingerprint but the corpus path."""
    pairs = []
    for part in ("corpus", "queries", "qrels"):
        for key, value in (recorded.get(part) or {}).items():
            if key != "path":
                pairs.append((f"{prefix}{part} {key}", value, (now.get(part) or {}).get(key)))
    return pairs


def _legacy_pairs(manifest: Mapping[str, Any], dataset, now_counts: Mapping[str, int]) -> list[tuple[str, Any, Any]]:
    """(what, recorded, now) from a run manifest made before data fingerprints: corpus size or docs id, local
    topics/qrels sha256, numbers of queries and judged queries."""
    described = ((manifest.get("experiment") or {}).get("dataset") or {})
    corpus, key = described.get("corpus") or {}, dataset.corpus_key()
    pairs = [(f"corpus {k}", corpus.get(k), key.get(k)) for k in ("source", "bytes", "docs_id") if k in corpus]
    files = dataset.describe().get("topics_and_qrels") or {}
    for part, rec in (described.get("topics_and_qrels") or {}).items():
        pairs.append((f"{part} sha256", rec.get("sha256"), (files.get(part) or {}).get("sha256")))
    counts = manifest.get("counts") or {}
    topics = counts.get("topics") or {}
    pairs += [("queries", topics.get("queries"), now_counts["queries"]),
              ("judged queries", topics.get("judged_queries"), now_counts["judged"]),
              ("judged queries", (counts.get("evaluation") or {}).get("judged"), now_counts["judged"])]
    return pairs


def check_dataset(dataset, recorded: Mapping[str, Any] | None, manifests: Iterable[Mapping[str, Any]],
                  what: str) -> Blocker | None:
    """Refuse ``dataset`` when it differs from the recorded fingerprint (``recorded``) or, without one, from what
    the run ``manifests`` made on it record. ``what`` names it in the message."""
    try:
        now_counts = {"queries": len(dataset.queries()), "judged": len(dataset.qrels())}
        if recorded:
            pairs = _fingerprint_pairs(recorded, dataset.fingerprint(), "")
        else:
            pairs = [p for m in manifests for p in _legacy_pairs(m, dataset, now_counts)]
    except (InputError, OSError) as e:
        return Blocker(COULD_NOT_RUN, f"missing data: {what}: {e}")
    found = list(dict.fromkeys(_mismatches(pairs)))
    if found:
        return Blocker(REFUSED, f"{what} differs from the data the result was computed on: {'; '.join(found)}")
    return None


def check_run_file(path: str, recorded: Mapping[str, Any] | None, paths: PathMap) -> tuple[str, Blocker | None]:
    """A ``kind: run`` system's file here (mapped) and its blocker: missing, or a sha256 other than recorded."""
    here = paths.here(path)
    if not Path(here).is_file():
        return here, Blocker(COULD_NOT_RUN, f"missing data: run file {here}")
    want = (recorded or {}).get("sha256")
    if want and file_sha256(here) != want:
        return here, Blocker(REFUSED, f"run file {here} differs from the recorded one (sha256 {want[:12]}… -> "
                                      f"{file_sha256(here)[:12]}…)")
    return here, None


def _file_sizes(files: Mapping[str, Any]) -> dict[str, int]:
    return {name: (v[0] if isinstance(v, list) else v) for name, v in files.items()}


def check_model(name: str, recorded: Mapping[str, Any] | None, paths: PathMap) -> tuple[str, Blocker | None]:
    """The model ``name`` (alias, folder or hub id) here and its blocker: missing (could not run), or weights
    other than the recorded ones (refused)."""
    recorded = recorded or {}
    if name in OFFLINE_MODELS:
        try:
            here = str(offline_path(name))
        except InputError as e:
            return name, Blocker(COULD_NOT_RUN, f"missing model: {e}")
    else:
        here = paths.here(name)
        if not Path(here).is_dir():
            hub = recorded.get("hub_id")
            why = (f"missing model: hub id {hub} (no network here; give a local copy with --path-map)" if hub else
                   f"missing model: {here} (not on this machine; --path-map OLD=NEW points to a copy)")
            return here, Blocker(COULD_NOT_RUN, why)
    now = model_fingerprint(here)
    if "offline" in recorded:
        want, got = recorded["offline"].get("sha256"), (now.get("offline") or {}).get("sha256")
        if want != got:
            return here, Blocker(REFUSED, f"model {name}: weights sha256 {str(want)[:12]}… -> {str(got)[:12]}…")
    elif "files" in recorded:
        old, new = _file_sizes(recorded["files"]), _file_sizes(now.get("files") or {})
        if not now.get("files") and now.get("offline"):  # recorded as a folder, now known as an alias's folder
            new = {f.relative_to(here).as_posix(): f.stat().st_size for f in Path(here).rglob("*") if f.is_file()}
        moved = [f"{f} {old[f]} -> {new.get(f, '(absent)')} bytes" for f in old if new.get(f) != old[f]]
        if moved:
            return here, Blocker(REFUSED, f"model {here} differs from the recorded files: {'; '.join(moved[:3])}")
    return here, None


def needs_gpu(device: str | None) -> Blocker | None:
    """A system that asks for CUDA explicitly, on a machine without it."""
    if not device or not str(device).startswith("cuda"):
        return None
    import torch

    if torch.cuda.is_available():
        return None
    return Blocker(COULD_NOT_RUN, f"needs a GPU (device: {device}); this machine has none")
