"""The scale curve's outputs: its plot, its console summary, and its table made again from a results folder's raw
records (:mod:`studies.scale_curve.scaling`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from lsr_eval.report.formatting import csv_text
from studies.scale_curve.scaling import MSMARCO_PASSAGES, SHARED, STAGES, TABLE_FIELDS, table_rows


def plot(results: Sequence[Mapping[str, Any]], path: Path, target: int = MSMARCO_PASSAGES) -> None:
    """Log-log seconds and peak memory per stage against documents, with a slope-1 guide, into ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[tuple[str, str], list[tuple[int, float, float | None]]] = {}
    for res in results:
        for rec in res["stages"]:
            if rec.get("status") == "ok" and rec.get("seconds"):
                series.setdefault((rec["engine"], rec["stage"]), []).append(
                    (rec["docs"], rec["seconds"], rec.get("rss_peak_mb")))
    engines = sorted({e for e, _ in series}, key=lambda e: (e != SHARED, e))
    colors = {e: f"C{i}" for i, e in enumerate(engines)}
    markers = {"export": "s", "index": "o", "search": "^", "evaluate": "x"}
    styles = {"export": ":", "index": "-", "search": "--", "evaluate": "-."}
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(13, 5.2))
    xs_all = sorted({n for pts in series.values() for n, _, _ in pts})
    order = sorted(series.items(), key=lambda kv: (engines.index(kv[0][0]), STAGES.index(kv[0][1])))
    for (engine, stage), pts in order:
        pts.sort()
        label = f"{engine} {stage}"
        ax_t.plot([p[0] for p in pts], [p[1] for p in pts], styles[stage], marker=markers[stage],
                  color=colors[engine], label=label)
        mem = [(p[0], p[2]) for p in pts if p[2]]
        if mem:
            ax_m.plot([m[0] for m in mem], [m[1] for m in mem], styles[stage], marker=markers[stage],
                      color=colors[engine], label=label)
    if len(xs_all) >= 2:  # slope-1 guide through the smallest-size median
        lo, hi = xs_all[0], xs_all[-1]
        first = [p[1] for pts in series.values() for p in pts if p[0] == lo]
        if first:
            y0 = float(np.median(first))
            ax_t.plot([lo, hi], [y0, y0 * hi / lo], color="grey", lw=0.8, alpha=0.6, label="linear (slope 1)")
    for ax, title, ylabel in ((ax_t, "wall time per stage", "seconds"),
                              (ax_m, "peak resident memory per stage (process; JVM included)", "MB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("documents")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=7, ncol=2)
    ax_m.legend(fontsize=7, ncol=2)
    fig.suptitle(f"Scale curve on synthetic Zipf collections (extrapolate to {target:,} MS MARCO passages)",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)



def summary_text(rows: Sequence[Mapping[str, Any]], fit: Mapping[str, Mapping[str, Any]]) -> str:
    """The console table: every run and stage, then the fits and their extrapolation."""
    def f(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) else "-"

    lines = [f"{'docs':>8} {'engine':<9} {'stage':<9} {'status':<8} {'seconds':>9} {'docs/s|q/s':>11} "
             f"{'RSS peak':>9} {'heap peak':>9} {'index MB':>9}  note"]
    for r in rows:
        lines.append(f"{r['docs']:>8} {r['engine']:<9} {r['stage']:<9} {r['status']:<8} {f(r['seconds'], '9.2f')} "
                     f"{f(r['throughput'], '11.1f')} {f(r['rss_peak_mb'], '9.0f')} {f(r['heap_peak_mb'], '9.0f')} "
                     f"{f(r['index_mb'], '9.1f')}  {(r.get('note') or '')[:80]}")
    lines.append("")
    lines.append(f"fits (extrapolated to {MSMARCO_PASSAGES:,} documents; exponent: log-log slope largest vs smallest "
                 "size, 1 = linear; ratio: per-document cost largest / smallest size)")
    lines.append(f"{'engine/stage':<18} {'s/1k docs':>10} {'exponent':>8} {'ratio':>6} {'cpu exp.':>8} "
                 f"{'cpu ratio':>9} {'8.8M s (fit)':>13} {'8.8M s (marg.)':>14} {'8.8M RSS MB':>12} "
                 f"{'8.8M index MB':>14}")
    for key, e in fit.items():
        s = e.get("seconds")
        if not s:
            continue
        m = (e.get("rss_peak_mb") or {}) if e["stage"] in ("index", "search", "total") else {}
        ix = e.get("index_mb") or {}
        c = e.get("cpu_seconds") or {}
        lines.append(f"{key:<18} {s['slope_per_1k_docs']:>10.4f} {f(s['loglog_exponent'], '8.3f')} "
                     f"{f(s['per_doc_ratio_largest_vs_smallest'], '6.2f')} {f(c.get('loglog_exponent'), '8.3f')} "
                     f"{f(c.get('per_doc_ratio_largest_vs_smallest'), '9.2f')} {s['extrapolated']:>13.1f} "
                     f"{s['extrapolated_marginal']:>14.1f} {f(m.get('extrapolated_marginal'), '12.0f')} "
                     f"{f(ix.get('extrapolated_marginal'), '14.0f')}")
    return "\n".join(lines)



def summaries(folder: Path) -> dict[str, str]:
    """``table.csv`` of a results folder of studies/scale_curve/run.py, made again from the per-run records in its
    ``results.json`` (the query count from the manifest): what tests/integration/test_committed_results.py compares with
    the committed one."""
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    queries = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["experiment"]["queries"]
    return {"table.csv": csv_text(TABLE_FIELDS, table_rows(results["runs"], queries))}

