"""A cost curve over collection sizes: per-stage records (seconds, CPU seconds, peak memory) of runs at growing
sizes, the linear fit of each stage and its extrapolation to MS MARCO, the prediction that decides whether the next
size fits a time and memory budget, and the check that every exact engine returned the reference engine's run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

#: the stages of one run; export is shared by the engines (row engine :data:`SHARED`)
STAGES = ("export", "index", "search", "evaluate")
SHARED = "shared"
#: MS MARCO v1 passages: the collection the curve is extrapolated to.
MSMARCO_PASSAGES = 8_841_823


def compare_exact(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per collection size, each exact engine's run (:attr:`EngineSpec.exact`) against the reference engine's
    (Anserini's, else the first exact engine that searched): the same run from every exact engine is the contract
    (lsr_eval/engines/base.py). Counts the queries with identical hits (docids and scores) and with the same set
    of docids. The per-query digests are taken out of every record (they are only for this)."""
    from lsr_eval.engines.registry import ENGINES, REFERENCE_ENGINE

    by_size: dict[int, dict[str, dict[str, Any]]] = {}
    for res in results:
        spec = ENGINES.get(res["engine"])
        search = next((r for r in res["stages"] if r["stage"] == "search"), {})
        digests = search.pop("query_sha256", None)
        if spec is not None and spec.exact and digests is not None:
            by_size.setdefault(res["docs"], {})[res["engine"]] = digests
    out = []
    for n_docs, searches in sorted(by_size.items()):
        ref = REFERENCE_ENGINE if REFERENCE_ENGINE in searches else next(iter(searches))
        a = searches[ref]
        for engine, b in searches.items():
            if engine == ref:
                continue
            qids = sorted(set(a) | set(b))
            identical = [q for q in qids if q in a and q in b and a[q][0] == b[q][0]]
            same_sets = sum(q in a and q in b and a[q][1] == b[q][1] for q in qids)
            out.append({"docs": n_docs, "reference": ref, "engine": engine, "queries": len(qids),
                        "identical_queries": len(identical), "same_docid_set_queries": same_sets,
                        "identical": len(identical) == len(qids),
                        "differing_queries": [q for q in qids if q not in set(identical)][:10]})
    return out



def available_memory_mb() -> float | None:
    """The memory the kernel says is available now (``MemAvailable``), MiB; None where it does not say."""
    kb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                kb = int(line.split()[1])
    except OSError:
        return None
    return kb / 1024 if kb else None



def predict(previous: Sequence[Mapping[str, Any]], n_docs: int) -> dict[str, Any] | None:
    """A run's total seconds and peak resident memory at ``n_docs``, predicted linearly from the same engine's
    complete runs at smaller sizes: from the two largest, the line through them (the marginal cost); from one,
    seconds scaled by the size ratio (fixed costs scaled too: pessimistic) and memory as the memory at its index
    stage's start plus the growth during its stages scaled by the ratio."""
    done = []
    for res in previous:
        stages = [s for s in res["stages"] if s.get("status") == "ok"]
        if len(stages) == len(STAGES) - 1:
            done.append((res["docs"], sum(s["seconds"] for s in stages),
                         max(s.get("rss_peak_mb") or 0.0 for s in stages), stages[0].get("rss_start_mb") or 0.0))
    done = sorted(d for d in done if d[0] < n_docs)
    if not done:
        return None
    if len(done) >= 2 and done[-1][0] > done[-2][0]:
        (n0, t0, m0, _), (n1, t1, m1, _) = done[-2:]
        slope_t, slope_m = max((t1 - t0) / (n1 - n0), 0.0), max((m1 - m0) / (n1 - n0), 0.0)
        return {"from_docs": [n0, n1], "seconds": t1 + slope_t * (n_docs - n1),
                "rss_peak_mb": m1 + slope_m * (n_docs - n1)}
    n1, t1, m1, base = done[-1]
    ratio = n_docs / n1
    return {"from_docs": [n1], "seconds": t1 * ratio, "rss_peak_mb": base + max(m1 - base, 0.0) * ratio}



def budget_decision(prediction: Mapping[str, float] | None, budget_s: float, mem_limit_mb: float | None,
                    force: bool) -> str | None:
    """Why a run is skipped (None: run it)."""
    if prediction is None or force:
        return None
    why = []
    if prediction["seconds"] > budget_s:
        why.append(f"predicted {prediction['seconds'] / 60:.1f} min (linear from {prediction['from_docs']} docs) > "
                   f"budget {budget_s / 60:.0f} min")
    if mem_limit_mb is not None and prediction["rss_peak_mb"] > mem_limit_mb:
        why.append(f"predicted peak RSS {prediction['rss_peak_mb']:.0f} MB > {mem_limit_mb:.0f} MB allowed")
    return "; ".join(why) or None



def close_result(result: dict | None, n_docs: int, engine: str, problem: str | None) -> dict:
    """A child's result with every stage left pending or running marked as failed by ``problem``."""
    stages = STAGES[:1] if engine == SHARED else STAGES[1:]
    if result is None:
        result = {"docs": n_docs, "engine": engine,
                  "stages": [{"stage": s, "engine": engine, "docs": n_docs, "status": "pending"} for s in stages]}
    for rec in result["stages"]:
        if rec.get("status") in ("pending", "running"):
            status = "timeout" if problem and problem.startswith("timeout") else "failed"
            rec.update(status=status, note=problem or "the run ended without finishing this stage")
    return result



def skipped_result(n_docs: int, engine: str, why: str, stages: Sequence[str]) -> dict:
    """The record of a run not made (over budget), every stage ``skipped`` for ``why``."""
    return {"docs": n_docs, "engine": engine, "skipped": why,
            "stages": [{"stage": s, "engine": engine, "docs": n_docs, "status": "skipped", "note": why}
                       for s in stages]}



TABLE_FIELDS = ["docs", "engine", "stage", "status", "seconds", "seconds_per_1k_docs", "throughput",
                "throughput_unit", "cpu_seconds", "rss_start_mb", "rss_peak_mb", "heap_peak_mb",
                "heap_committed_peak_mb", "heap_max_mb", "index_mb", "collection_mb", "postings", "queries", "hits",
                "load_1min", "note"]



def table_rows(results: Sequence[Mapping[str, Any]], n_queries: int) -> list[dict[str, Any]]:
    """One row of :data:`TABLE_FIELDS` per run and stage, with seconds per 1k documents and the throughput."""
    rows = []
    for res in results:
        for rec in res["stages"]:
            row = {k: rec.get(k) for k in TABLE_FIELDS}
            secs = rec.get("seconds")
            if rec.get("status") == "ok" and secs:
                row["seconds_per_1k_docs"] = round(secs / rec["docs"] * 1000, 5)
                if rec["stage"] in ("export", "index"):
                    row["throughput"], row["throughput_unit"] = round(rec["docs"] / secs, 1), "docs/s"
                else:
                    row["throughput"], row["throughput_unit"] = round(n_queries / secs, 1), "queries/s"
            else:
                row["seconds"] = row["cpu_seconds"] = None if rec.get("status") != "ok" else secs
            note = rec.get("note") or rec.get("error")
            row["note"] = note
            rows.append(row)
    return rows



def fit_stage(points: Sequence[tuple[int, float]], target: int = MSMARCO_PASSAGES) -> dict[str, Any] | None:
    """Least-squares ``value = a + b * docs`` over ``points`` ((docs, value), >= 2 sizes), its value at ``target``,
    the log-log exponent (1 = linear) and the per-document cost ratio of the largest to the smallest size."""
    pts = sorted((int(n), float(v)) for n, v in points if v is not None)
    if len({n for n, _ in pts}) < 2:
        return None
    x = np.array([n for n, _ in pts], dtype=float)
    y = np.array([v for _, v in pts], dtype=float)
    b, a = np.polyfit(x, y, 1)
    (n0, v0), (n1, v1) = pts[0], pts[-1]
    exponent = (math.log(v1) - math.log(v0)) / (math.log(n1) - math.log(n0)) if v0 > 0 and v1 > 0 else None
    per_doc_ratio = (v1 / n1) / (v0 / n0) if v0 > 0 else None
    # slope of the two largest sizes: the marginal cost, the best guess for larger collections (a falling value,
    # e.g. a constant cost measured with noise, is extrapolated flat)
    (m0, w0), (m1, w1) = pts[-2], pts[-1]
    marginal = (w1 - w0) / (m1 - m0)
    growth = None
    if len(pts) >= 3 and pts[1][0] > pts[0][0] and pts[1][1] > pts[0][1]:
        growth = marginal / ((pts[1][1] - pts[0][1]) / (pts[1][0] - pts[0][0]))
    return {"sizes": [int(n) for n in x], "values": [round(v, 4) for v in y],
            "marginal_growth_last_vs_first_interval": round(growth, 3) if growth is not None else None,
            "slope_per_1k_docs": round(b * 1000, 6), "intercept": round(a, 4),
            "marginal_per_1k_docs": round(marginal * 1000, 6),
            "extrapolated": round(a + b * target, 2),
            "extrapolated_marginal": round(w1 + max(marginal, 0.0) * (target - m1), 2),
            "loglog_exponent": round(exponent, 3) if exponent is not None else None,
            "per_doc_ratio_largest_vs_smallest": round(per_doc_ratio, 3) if per_doc_ratio is not None else None}



def fits(results: Sequence[Mapping[str, Any]], target: int = MSMARCO_PASSAGES) -> dict[str, dict[str, Any]]:
    """Per ``engine/stage``: fits of seconds and of peak RSS (and index size for ``index``) against documents."""
    points: dict[tuple[str, str], list[dict]] = {}
    for res in results:
        for rec in res["stages"]:
            if rec.get("status") == "ok" and rec.get("seconds") is not None:
                points.setdefault((rec["engine"], rec["stage"]), []).append(rec)
    out: dict[str, dict[str, Any]] = {}
    for (engine, stage), recs in sorted(points.items()):
        entry: dict[str, Any] = {"engine": engine, "stage": stage}
        for key, field in (("seconds", "seconds"), ("cpu_seconds", "cpu_seconds"), ("rss_peak_mb", "rss_peak_mb"),
                           ("index_mb", "index_mb"), ("heap_peak_mb", "heap_peak_mb")):
            f = fit_stage([(r["docs"], r.get(field)) for r in recs if r.get(field) is not None], target)
            if f is not None:
                entry[key] = f
        if "seconds" in entry:
            entry["extrapolated_hours"] = round(entry["seconds"]["extrapolated"] / 3600, 2)
        out[f"{engine}/{stage}"] = entry
    # whole runs: export + index + search + evaluate seconds, and the largest peak RSS of the engine's stages
    export = {r["docs"]: r["stages"][0] for r in results
              if r["engine"] == SHARED and r["stages"][0].get("status") == "ok"}
    totals: dict[str, list[tuple]] = {}
    for res in results:
        stages = res["stages"]
        if res["engine"] == SHARED or res["docs"] not in export or any(s.get("status") != "ok" for s in stages):
            continue
        totals.setdefault(res["engine"], []).append(
            (res["docs"], export[res["docs"]]["seconds"] + sum(s["seconds"] for s in stages),
             max(s.get("rss_peak_mb") or 0.0 for s in stages),
             next((s.get("index_mb") for s in stages if s["stage"] == "index"), None),
             sum(s.get("cpu_seconds") or 0.0 for s in [export[res["docs"]], *stages])))
    for engine, pts in sorted(totals.items()):
        entry = {"engine": engine, "stage": "total"}
        for key, i in (("seconds", 1), ("rss_peak_mb", 2), ("index_mb", 3), ("cpu_seconds", 4)):
            f = fit_stage([(p[0], p[i]) for p in pts if p[i] is not None], target)
            if f is not None:
                entry[key] = f
        if "seconds" in entry:
            entry["extrapolated_hours"] = round(entry["seconds"]["extrapolated"] / 3600, 2)
            out[f"{engine}/total"] = entry
    return out

