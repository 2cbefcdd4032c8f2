"""A benchmark's rows against published figures (a model card's), within a tolerance in points: the gate a paper's
chain runs before it trains (``pipelines/paper_efficient_splade.sh all``: naver's released efficient SPLADE pairs
against their model cards on MS MARCO dev). The verdict (passed, failed or skipped, with every figure compared) is
written beside the benchmark's results as :data:`CHECK_FILE`, a manifest."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsr_eval.benchmark.row import TABLE_RECORDS
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.manifest import load_json, write_manifest
from lsr_eval.settings import Setting, check

#: The verdict's manifest, beside the benchmark's ``manifest.json`` and ``table.json``.
CHECK_FILE = "published-check.json"
TABLE = "table.json"


@dataclass(frozen=True)
class Published:
    """Published figures: ``figures[system][measure]`` in points (the measure x 100) on ``dataset``, each to be met
    within ``tolerance`` points; ``source`` says where they were published, ``on_miss`` what a miss means."""

    dataset: str
    tolerance: float
    figures: dict[str, dict[str, float]]
    source: str = ""
    on_miss: str = ""


#: The published figures: system -> {measure: points}, at least one of each.
FIGURES = Setting(help="published figures: system -> {measure: points}", min_items=1)
#: How far a published figure may be missed.
TOLERANCE_POINTS = Setting(help="how far (in points) a published figure may be missed", ge=0, unit="points")


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def read_published(path: str | os.PathLike) -> Published:
    """The figures file (JSON: ``dataset``, ``tolerance_points``, ``published`` {system: {measure: points}},
    optional ``source`` and ``on_miss``); a bad file is one error naming it and the key."""
    doc = check("the figures file", load_json(path), dict, FIGURES, str(path))
    for key in ("dataset", "tolerance_points", "published"):
        if key not in doc:
            raise ConfigError(f"{path}: missing '{key}'")
    tol = check("tolerance_points", doc["tolerance_points"], float, TOLERANCE_POINTS, str(path))
    figures = check("published", doc["published"], dict[str, dict], FIGURES, str(path))
    for system, measures in figures.items():
        check(f"published.{system}", measures, dict[str, float], FIGURES, str(path))
    return Published(str(doc["dataset"]), float(tol), {s: {m: float(v) for m, v in ms.items()}
                                                        for s, ms in figures.items()},
                     str(doc.get("source", "")), str(doc.get("on_miss", "")))


def compare(rows: list[dict[str, Any]], published: Published) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each published figure beside the row's (``measured`` in points, ``off`` the difference) and the misses, one
    phrase each: a row that is absent, not ok or without the measure, or off by more than the tolerance."""
    by = {(r.get("dataset"), r.get("system")): r for r in rows}
    compared: dict[str, dict[str, Any]] = {}
    misses = []
    for system, measures in published.figures.items():
        row = by.get((published.dataset, system))
        compared[system] = {}
        for measure, card in measures.items():
            entry: dict[str, Any] = {"published": card}
            compared[system][measure] = entry
            if row is None:
                misses.append(f"{system}: no {published.dataset} row")
                break
            if row.get("status") != "ok":
                misses.append(f"{system} on {published.dataset}: {row.get('status')}")
                break
            value = row.get(measure)
            if not _number(value):
                misses.append(f"{system}: no {measure} on {published.dataset}")
                continue
            entry["measured"] = round(100 * value, 4)
            entry["off"] = round(100 * value - card, 4)
            if abs(100 * value - card) > published.tolerance + 1e-9:
                misses.append(f"{system} {measure} {100 * value:.2f}, published {card:g} (off by "
                              f"{abs(100 * value - card):.2f} > {published.tolerance:g} points)")
    return compared, misses


def results_folder(results: str | os.PathLike) -> Path:
    """The results folder of a benchmark: ``results`` itself, or the ``out`` of a benchmark YAML file."""
    path = Path(results)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        from lsr_eval.benchmark.config import load_config

        return Path(load_config(path).out)
    return path


def check_published(results: str | os.PathLike, expect: str | os.PathLike, *, skip: bool = False) -> str:
    """Compare the benchmark results folder ``results`` (its ``table.json``; or a benchmark YAML: its ``out``) with
    the figures file ``expect``, write the verdict (:data:`CHECK_FILE`) and return one line; a miss raises one line
    naming every miss (the verdict is written first). ``skip``: compare nothing, record that the check was
    skipped."""
    results, published = results_folder(results), read_published(expect)
    experiment = {"published": str(expect), "dataset": published.dataset, "tolerance_points": published.tolerance}
    if skip:
        results.mkdir(parents=True, exist_ok=True)
        path = write_manifest(results, "check-published", experiment, manifest_name=CHECK_FILE, status="skipped")
        return (f"check against {expect} skipped (asked for): nothing compared; recorded in {path}")
    table = results / TABLE
    if not table.is_file():
        raise InputError(f"{table} does not exist: run the benchmark first (its results are checked against "
                         f"{expect})")
    rows = check("the table", load_json(table), list[dict], TABLE_RECORDS, str(table))
    compared, misses = compare(rows, published)
    path = write_manifest(results, "check-published", experiment, manifest_name=CHECK_FILE,
                          status="failed" if misses else "passed", compared=compared, misses=misses)
    if misses:
        raise InputError(f"{results} misses {expect} ({published.source or 'published figures'}): "
                         f"{'; '.join(misses)}{f'. {published.on_miss}' if published.on_miss else ''} "
                         f"(recorded in {path})")
    shown = "; ".join(f"{s} " + ", ".join(f"{m} {e['measured']:.2f} ({e['published']:g})" for m, e in ms.items())
                      for s, ms in compared.items())
    return f"{results} meets {expect} within {published.tolerance:g} points: {shown}; recorded in {path}"
