"""The long-queries benchmark's tables and console summary (:mod:`studies.long_queries.measure`), made again
from a results folder's raw ``results.json`` by :func:`summaries`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.report.formatting import csv_text
from studies.long_queries.measure import ANSERINI, OURS, old_gen_peak_mb

TABLE_FIELDS = ["engine", "path", "queries", "seconds", "cpu_seconds", "ratio_vs_searchcollection",
                "identical_queries", "same_docids_queries", "hits", "heap_peak_sampled_mb", "heap_after_gc_mb",
                "runs_seconds"]

HEAP_FIELDS = ["engine", "path", "queries", "seconds", "hits", "before_mb", "peak_sampled_mb", "old_gen_peak_mb",
               "after_gc_mb", "process_rss_mb", "process_rss_peak_mb"]



def table_rows(engines: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for engine, r in engines.items():
        cmp = r["comparison"]
        for path, p in r["paths"].items():
            rows.append({"engine": engine, "path": path, "queries": cmp["queries"], "seconds": p["seconds"],
                         "cpu_seconds": p["cpu_seconds"],
                         "ratio_vs_searchcollection": r["ratio"] if path == OURS else 1.0,
                         "identical_queries": cmp["identical_queries"],
                         "same_docids_queries": cmp["same_docids_queries"],
                         "hits": cmp["hits_ours"] if path == OURS else cmp["hits_searchcollection"],
                         "heap_peak_sampled_mb": p["heap"]["peak_sampled_mb"],
                         "heap_after_gc_mb": p["heap"]["after_gc_mb"],
                         "runs_seconds": " ".join(f"{x['seconds']:.2f}" for x in p["runs"])})
    return rows



def heap_rows(engines: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"engine": engine, **row, "old_gen_peak_mb": old_gen_peak_mb(row)}
            for engine, r in engines.items() for row in r["heap_sweep"]]



def tables(engines: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    """``table.csv`` and ``heap.csv`` of the engines' results (``results.json``'s ``engines``)."""
    return {"table.csv": csv_text(TABLE_FIELDS, table_rows(engines)),
            "heap.csv": csv_text(HEAP_FIELDS, heap_rows(engines))}



def summaries(folder: Path) -> dict[str, str]:
    """The tables of a results folder of studies/long_queries/run.py, made again from its raw file (``results.json``):
    what tests/integration/test_committed_results.py compares with the committed ones."""
    return tables(json.loads((folder / "results.json").read_text(encoding="utf-8"))["engines"])



def summary_text(engines: Mapping[str, dict[str, Any]]) -> str:
    lines = [f"{'engine':<8} {'path':<17} {'seconds':>8} {'cpu s':>8} {'ratio':>6} {'identical':>11} "
             f"{'heap peak':>9} {'after gc':>8}"]
    for row in table_rows(engines):
        lines.append(f"{row['engine']:<8} {row['path']:<17} {row['seconds']:>8.2f} {row['cpu_seconds']:>8.2f} "
                     f"{row['ratio_vs_searchcollection']:>6.2f} {row['identical_queries']:>5}/{row['queries']:<5} "
                     f"{row['heap_peak_sampled_mb']:>9.0f} {row['heap_after_gc_mb']:>8.0f}")
    for engine, r in engines.items():
        for path in (OURS, ANSERINI):
            sweep = [x for x in r["heap_sweep"] if x["path"] == path]
            if sweep:
                cells = ", ".join(f"{x['queries']}: {x['after_gc_mb']:.0f}/{old_gen_peak_mb(x):.0f}/"
                                  f"{x['peak_sampled_mb']:.0f}" for x in sweep)
                lines.append(f"{engine} {path} heap MB by queries (after gc/old-gen peak/sampled peak): {cells}")
    return "\n".join(lines)

