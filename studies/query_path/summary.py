"""The query-path benchmark's files (studies/query_path/run.py): the per-query CSV and the summary, which
tests/integration/test_committed_results.py makes again from a committed ``bench.json``."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any


def write_per_query(path: Path, queries, results, agreement, warmup: int) -> None:
    """Per query: each path's times and terms, the ms of each part of lsr-eval's rows, the top-10 overlaps."""
    names = list(results)
    parts = {n: list(results[n][0].get("parts", {})) if results[n] else [] for n in names}
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        header = ["qid", "warmup"]
        for n in names:
            header += [f"{n}:{c}" for c in ("encode_ms", "search_ms", "total_ms", "read_ms", "terms")]
            header += [f"{n}:part:{c}_ms" for c in parts[n]]
        header += [f"overlap10:{n}" for n in agreement]
        w.writerow(header)
        for i, q in enumerate(queries):
            row: list[Any] = [q.id, int(i < warmup)]
            for n in names:
                r = results[n][i]
                row += [f"{r['encode']:.3f}", f"{r['search']:.3f}", f"{r['total']:.3f}",
                        f"{r['read']:.3f}" if "read" in r else "", r["terms"]]
                row += [f"{r['parts'][c]:.3f}" if c in r["parts"] else "" for c in parts[n]]
            row += [f"{agreement[n]['overlaps'][i]:.2f}" for n in agreement]
            w.writerow(row)


def summary_md(b: dict) -> str:
    """The summary of one run of the benchmark (its ``bench.json``)."""
    p, lat = b["protocol"], b["latency_ms"]
    lines = [f"# Query path: lsr-eval [{b['engine']['engine']}] vs Pyserini ({p['measured']} measured queries, "
             f"{p['warmup']} warm-up, "
             f"k={p['k']}, 1 thread, {p['machine']['cpu']}, {p['machine']['cores']} cores)", "",
             "CPU flags (the instruction sets that decide the kernels' speed; the ratios below hold on this CPU): "
             + (", ".join(p["machine"]["cpu_flags"]) if "cpu_flags" in p["machine"]
                else "not recorded (measured before manifests recorded them)"), "",
             "Load average (1 / 5 / 15 min; other processes shared the CPUs): " + ", ".join(
                 f"{when} {' / '.join(f'{x:.1f}' for x in v)}" for when, v in p["load_average_1_5_15min"].items()),
             "",
             "| path | encode mean / p50 | search mean / p50 | read hits mean | total mean / p50 / p99 | terms |",
             "|---|---|---|---|---|---|"]
    for name, x in lat.items():
        tot = x.get("total_read", x["total"])
        read = f"{x['read']['mean_ms']:.2f}" if "read" in x else "(in search)"
        lines.append(f"| {name} | {x['encode']['mean_ms']:.2f} / {x['encode']['p50_ms']:.2f} | "
                     f"{x['search']['mean_ms']:.2f} / {x['search']['p50_ms']:.2f} | {read} | "
                     f"{tot['mean_ms']:.2f} / {tot['p50_ms']:.2f} / {tot['p99_ms']:.2f} | {x['mean_terms']:.1f} |")
    lines += breakdown_md(b.get("breakdown", {}))
    lines += ["", "pyserini: Pyserini's SpladeQueryEncoder as it loads the saved model (GELU back in the identity "
              "head); pyserini-same-weights: its model replaced by lsr-eval's (bypass kept). Both get lsr-eval's "
              "top-k on their float weights; Pyserini quantises queries at scale 51.2 and drops terms absent from the "
              "index, lsr-eval uses scale 100 (see pipelines/bench_query_path.py).",
              "", "Ratios Pyserini / lsr-eval (total with hits read; as is, without reading):", ""]
    for name, r in b["ratios"].items():
        if name == "anserini-per-hit":
            lines.append(f"* anserini-per-hit (the Anserini path before bulk hits): total mean "
                         f"{r['total_vs_total']['mean']:.2f}, p50 {r['total_vs_total']['p50']:.2f}; search mean "
                         f"{r['search']['mean']:.2f}, p50 {r['search']['p50']:.2f}")
            continue
        lines.append(f"* {name}: mean {r['total_read_vs_total']['mean']:.2f}, p50 {r['total_read_vs_total']['p50']:.2f}"
                     f" (as is: mean {r['total_vs_total']['mean']:.2f}, p50 {r['total_vs_total']['p50']:.2f}); "
                     f"encode mean {r['encode']['mean']:.2f}")
    lines += ["", "Top-10 agreement with lsr-eval (queries with the same ranked list / same set / mean overlap):", ""]
    for name, a in b["agreement_top10"].items():
        lines.append(f"* {name}: {a['same_ranked_list']}/{a['queries']} / {a['same_set']}/{a['queries']} / "
                     f"{a['mean_overlap']:.3f}")
    lines += ["", "Effectiveness (k hits, query id hits removed as the dataset says):", ""]
    for name, m in b["effectiveness"].items():
        lines.append(f"* {name}: " + ", ".join(f"{k} {v:.4f}" for k, v in m.items()))
    rep = b["latency_report_lsr_eval"]["latency_ms"]
    lines += ["", "lsr-eval latency report (separate pass, ms mean / p50 / p99): " + "; ".join(
        f"{k} {v['mean_ms']:.2f} / {v['p50_ms']:.2f} / {v['p99_ms']:.2f}" for k, v in rep.items())]
    if b["bf16_encoding"]:
        e = b["bf16_encoding"]["latency_ms"]
        lines.append(f"bf16 encoding on {e['encode_bf16']['n']} queries: mean {e['encode_bf16']['mean_ms']:.1f} ms "
                     f"vs fp32 {e['encode']['mean_ms']:.1f} ms on the same queries")
    f, ps = b["flops"], b["postings"]
    lines += ["", f"Expected FLOPs: {f['impact']['expected_flops']:.2f} (impacts > 0: what is indexed and searched),"
              f" {f['weight']['expected_flops']:.2f} (float weights > 0); avg active dims: documents "
              f"{f['impact']['documents']['avg_active_dims']:.1f}, queries "
              f"{f['impact']['queries']['avg_active_dims']:.1f}",
              f"Posting lists: {ps['terms_with_postings']} terms, {ps['total_postings']} postings, length mean "
              f"{ps['mean_length']:.1f} / median {ps['median_length']:.0f} / p99 {ps['p99_length']:.0f} / max "
              f"{ps['max_length']}; index {ps['index_bytes'] / 2**20:.2f} MiB; equal to Lucene's document "
              f"frequencies: {ps['lucene_check']['equal']}", ""]
    return "\n".join(lines)


def breakdown_md(breakdown: dict) -> list[str]:
    """Per-part table of lsr-eval's rows (:func:`studies.query_path.measure.part_breakdown`), measured in the
    side-by-side run."""
    lines = []
    for name, bd in breakdown.items():
        cands = f"; {bd['mean_candidates']:.1f} candidate ids per query" if "mean_candidates" in bd else ""
        lines += ["", f"Where {name}'s time goes (side-by-side run, ms per query{cands}):", "",
                  "| part | mean | p50 | p99 | share of mean total |", "|---|---|---|---|---|"]
        for part, x in [*bd["parts"].items(), ("total", bd["total"])]:
            share = f"{x['share_of_mean_total']:.0%}" if "share_of_mean_total" in x else "100%"
            lines.append(f"| {part} | {x['mean_ms']:.3f} | {x['p50_ms']:.3f} | {x['p99_ms']:.3f} | {share} |")
    return lines


def summaries(folder: Path) -> dict[str, str]:
    """The summary of a results folder of the benchmark, made again from its raw file (``bench.json``): what
    tests/integration/test_committed_results.py compares with the committed one (``per_query.csv`` holds the raw
    timings)."""
    return {"summary.md": summary_md(json.loads((folder / "bench.json").read_text(encoding="utf-8")))}
