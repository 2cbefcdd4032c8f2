"""The settings behind a table's rows, read from each run's manifest, and the note that says what the rows share and
where they differ ("rows differ in query max length: 64 (a) vs 128 (b)").

A silent setting is the commonest cause of "my numbers differ from yours" (query max length 256 against 512, self
hits kept in ArguAna and Quora, tie-breaking): each row carries what made it. A row without a manifest (a run file
brought from elsewhere carries only its file's sha256) says "settings unknown", never nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from lsr_eval.benchmark.row import POOLED
from lsr_eval.engines.registry import DEFAULT_ENGINE
from lsr_eval.errors import InputError
from lsr_eval.manifest import read_json_object, results_root

#: The label of a row whose settings no manifest records.
UNKNOWN = "settings unknown"
#: Every run lsr-eval makes ranks ties as trec_eval does (score, then docid descending: lsr_eval.runs.trec).
TIE_RULE = "trec_eval (score, then docid descending)"


def _model_length(manifest: Mapping[str, Any], side: str) -> Any:
    encoders = ((manifest.get("model") or {}).get("encoders") or {})
    return (encoders.get(side) or {}).get("max_length")


def _precision(s: Mapping[str, Any]) -> str:
    return str(s.get("precision") or ("bf16" if s.get("bf16") else "fp32"))


def row_settings(manifest: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The settings of one run by name (``query max length``: ``64``), from its manifest; None without one, or for
    a run file made elsewhere (its settings are its maker's)."""
    if not manifest:
        return None
    stage = manifest.get("stage")
    experiment = manifest.get("experiment") or {}
    out: dict[str, str] = {}
    if stage == "splade":
        s = experiment.get("settings") or {}
        q = s.get("max_length_q") or _model_length(manifest, "query")
        d = s.get("max_length_d") or _model_length(manifest, "document")
        out.update({
            "query encoder": str(s.get("query_model") or "the model's"),
            "query max length": str(q if q is not None else "model default"),
            "document max length": str(d if d is not None else "model default"),
            "query terms kept": str(s.get("query_top_k") or "all"),
            "document terms kept": str(s.get("doc_top_k") or "all"),
            "weight threshold": f"{s.get('threshold', 0.0):g}",
            "quantisation scale": f"{s.get('scale', 100.0):g}",
            "precision": _precision(s),
            "engine": str(s.get("engine") or DEFAULT_ENGINE)
            + (f" {json.dumps(s['engine_options'], sort_keys=True)}" if s.get("engine_options") else ""),
            "depth": str(s.get("hits", "")),
        })
        if s.get("prune_doc_top_k") or s.get("prune_doc_threshold"):
            out["export pruning"] = f"top {s.get('prune_doc_top_k') or 'all'}, threshold {s.get('prune_doc_threshold')}"
    elif stage == "bm25":
        out.update({"bm25": f"{experiment.get('method', 'bm25')} k1 {experiment.get('k1')} b {experiment.get('b')}",
                    "engine": str(experiment.get("engine") or DEFAULT_ENGINE)
                    + (f" {json.dumps(experiment['engine_options'], sort_keys=True)}"
                       if experiment.get("engine_options") else ""),
                    "depth": str(experiment.get("hits", ""))})
    elif stage == "fusion":
        s = manifest.get("settings") or {}
        params = ", ".join(f"{k} {v}" for k, v in sorted((s.get("params") or {}).items()))
        out["fusion"] = f"{s.get('method')}, norm {s.get('norm')}" + (f", {params}" if params else "")
        if s.get("depth"):
            out["depth"] = str(s["depth"])
    else:
        return None
    if "remove_query" in experiment:
        out["self hits removed"] = "yes" if experiment["remove_query"] else "no"
    out["tie rule"] = TIE_RULE
    return out


def _read(path: Path) -> dict | None:
    """The manifest at ``path``; None when there is none or it cannot be read (its row's settings are unknown)."""
    try:
        return read_json_object(path)
    except InputError:
        return None


def benchmark_settings(folder: str | Path, rows: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict | None]:
    """``{(dataset, system): settings or None}`` for the rows of a benchmark folder (``runs/<system>/<dataset>/
    manifest.json``; a ``kind: run`` row's settings are those of the manifest beside its run file, when lsr-eval
    made it: :func:`run_manifest`, its recorded path read from the checkout that holds the benchmark)."""
    root = results_root(folder)
    out: dict[tuple[str, str], dict | None] = {}
    for dataset, system in rows:
        manifest = _read(Path(folder) / "runs" / system / dataset / "manifest.json")
        if manifest is not None and manifest.get("stage") == "run-file":
            recorded = Path(str((manifest.get("run") or {}).get("path") or ""))
            here = recorded if recorded.is_absolute() or root is None else root.parent / recorded
            manifest = run_manifest(here) if recorded.name else None
        out[(dataset, system)] = row_settings(manifest)
    return out


def settings_notes(rows: Mapping[str, Mapping[str, str] | None]) -> list[str]:
    """The note of one table's rows (``{row label: settings or None}``): what every row shares, what some rows
    have (each with its rows), where rows differ, and which rows' settings are unknown."""
    known = {label: s for label, s in rows.items() if s is not None}
    lines = []
    keys = list(dict.fromkeys(k for s in known.values() for k in s))
    shared: list[str] = []
    partial: dict[tuple[str, ...], list[str]] = {}   # the rows that share them -> settings
    differ: list[str] = []
    for key in keys:
        values: dict[str, list[str]] = {}
        for label, s in known.items():
            if key in s:
                values.setdefault(s[key], []).append(label)
        if len(values) > 1:
            differ.append(f"rows differ in {key}: " + " vs ".join(f"{v} ({', '.join(ls)})" for v, ls in values.items()))
        elif sum(len(ls) for ls in values.values()) == len(known):
            shared.append(f"{key} {next(iter(values))}")
        else:
            value, labels = next(iter(values.items()))
            partial.setdefault(tuple(labels), []).append(f"{key} {value}")
    if shared:
        lines.append("settings of every row" + (" with a manifest" if len(known) < len(rows) else "") + ": "
                     + "; ".join(shared))
    lines += [f"settings of {', '.join(labels)}: " + "; ".join(items) for labels, items in partial.items()]
    lines += differ
    unknown = [label for label, s in rows.items() if s is None]
    if unknown:
        lines.append(f"{UNKNOWN}: {', '.join(unknown)} (no lsr-eval manifest: a run made elsewhere, or none beside it)")
    return lines


def table_settings_notes(folder: str | Path, rows: Sequence[tuple[str, str]]) -> list[str]:
    """:func:`settings_notes` of a benchmark's ``(dataset, system)`` rows, each system once when its settings are
    the same on every dataset (else once per dataset, as ``system on dataset``); rows without a run of their own
    (pooled over datasets, or failed) are left out."""
    found = benchmark_settings(folder, [(d, s) for d, s in rows if d != POOLED])
    by_system: dict[str, dict[str, dict | None]] = {}
    for (dataset, system), s in found.items():
        by_system.setdefault(system, {})[dataset] = s
    labelled: dict[str, dict | None] = {}
    for system, per_dataset in by_system.items():
        distinct = {json.dumps(s, sort_keys=True) for s in per_dataset.values()}
        if len(distinct) == 1:
            labelled[system] = next(iter(per_dataset.values()))
        else:
            labelled.update({f"{system} on {d}": s for d, s in per_dataset.items()})
    return settings_notes(labelled)


def run_manifest(path: str | Path) -> dict | None:
    """The manifest of a run file: ``FILE.manifest.json`` beside it, or the ``manifest.json`` of the lsr-eval output
    folder that lists it among its outputs; None when neither."""
    path = Path(path)
    for candidate, listed in ((path.with_name(path.name + ".manifest.json"), False),
                              (path.parent / "manifest.json", True)):
        manifest = _read(candidate)
        if manifest is not None and (not listed or path.name in (manifest.get("outputs") or [])):
            return manifest
    return None
