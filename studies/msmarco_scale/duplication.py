"""D3: how much the generated documents owe to duplication (studies/msmarco_scale/README.md, "D3"): the template pool
varied (500, 1,000, 2,500, 5,000 templates) at 1M documents, the generator's statistics fitted on all 5,000 passages;
per pool the postings in the dev queries' lists, PISA's k-th scores at k = 10 and 1,000, PISA's mean latency and
Seismic's recall@10 at its defaults. Each stage runs in a fresh process; a finished stage is not run again.

    python studies/msmarco_scale/duplication.py --out results/studies/msmarco-scale-duplication
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import KEEP, SEED, SIGMA  # noqa: E402
from generator import draw  # noqa: E402
from scale import FILE_DOCS, WARMUP, fit_state, peak_rss_bytes  # noqa: E402

from lsr_eval.workdir import folder_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
POOLS, SIZE, QUERIES, KS, RECALL_K = (500, 1000, 2500, 5000), 1_000_000, 1000, (10, 1000), 10
STAGES = ("generate", "index-pisa", "index-seismic", "search-pisa", "search-seismic")
THRESHOLD = 0.10   # the registered rule: a move of more than 10% against the 5,000 pool


def pool_state(work: Path, pool: int):
    """The generator fitted on all 5,000 passages, drawing templates from the first ``pool`` of a seeded permutation
    (all 5,000 in their own order: D2's generator itself)."""
    state = fit_state(work)
    if pool >= state.documents:
        return state
    order = np.random.default_rng(SEED).permutation(state.documents)[:pool]
    return dataclasses.replace(state, templates=[state.templates[i] for i in order])


def measured_queries(work: Path) -> list[tuple[str, dict[str, int]]]:
    """The first WARMUP + QUERIES dev queries (the first WARMUP unmeasured), as scale.py's search stage takes them."""
    items = list(json.loads((work / "queries.json").read_text()).items())
    return items[:WARMUP + QUERIES]


# -- stages (each in its own process) -----------------------------------------------------------------------------
def stage_generate(work: Path, pool: int) -> dict[str, Any]:
    from lsr_eval.anserini.collections import write_lines

    folder = work / f"dup-{pool}"
    d2 = work / f"collection-{SIZE}"
    out = folder / "collection"
    shutil.rmtree(out, ignore_errors=True)
    df: Counter[str] = Counter()
    if pool >= 5000 and d2.is_dir():   # D2's own collection at 1M: read its document frequencies
        os.symlink(d2.resolve(), out)
        for path in sorted(d2.rglob("*.jsonl")):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    df.update(json.loads(line)["vector"].keys())
        documents = SIZE
    else:
        def lines():
            for docid, vector in draw(pool_state(work, pool), SIZE, keep=KEEP, sigma=SIGMA, seed=SEED):
                df.update(vector.keys())
                yield {"id": docid, "contents": "", "vector": vector}

        documents = write_lines(lines(), out, shard_size=FILE_DOCS).documents
    (folder / "df.json").write_text(json.dumps(df))
    return {"documents": documents, "postings": sum(df.values()), "distinct_terms": len(df)}


def stage_index(work: Path, pool: int, engine: str) -> dict[str, Any]:
    from lsr_eval.engines.registry import get_engine

    folder = work / f"dup-{pool}"
    index = folder / f"index-{engine}"
    shutil.rmtree(index, ignore_errors=True)
    d2 = work / f"index-{engine}-{SIZE}"
    if pool >= 5000 and (d2 / "lsr_eval_engine.json").is_file():   # D2's own index of that collection (scale.py)
        os.symlink(d2.resolve(), index)
        return {"documents_indexed": json.loads((d2 / "lsr_eval_engine.json").read_text())["documents"],
                "index_bytes": folder_bytes(d2), "reused": str(d2.name)}
    built = get_engine(engine).build(folder / "collection", index, threads=2)
    return {"documents_indexed": built.documents_indexed, "index_bytes": folder_bytes(index)}


def stage_search_pisa(work: Path, pool: int) -> dict[str, Any]:
    """PISA, the whole search call, one round after WARMUP unmeasured queries, at each k; the k-th scores and the
    exact top 10 (integer scores) kept for Seismic's recall."""
    from lsr_eval.engines.registry import get_engine

    folder = work / f"dup-{pool}"
    items = measured_queries(work)
    out: dict[str, Any] = {}
    top: dict[str, list[tuple[str, int]]] = {}
    with get_engine("pisa").open(folder / "index-pisa") as searcher:
        for k in KS:
            ms, kth = [], []
            for i, (qid, weights) in enumerate(items):
                t0 = time.perf_counter()
                hits = searcher.search(weights, k, qid=qid)
                dt = (time.perf_counter() - t0) * 1e3
                if i < WARMUP:
                    continue
                ms.append(dt)
                if len(hits) >= k:
                    kth.append(round(hits[k - 1][1]))   # Anserini's tie adjustment off: the integer dot product
                if k == RECALL_K:
                    top[qid] = [(d, round(s)) for d, s in hits]
            a = np.asarray(ms)
            out[f"k{k}"] = {"latency_ms": {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
                                           "p99": float(np.percentile(a, 99))},
                            "kth_score_median": float(np.median(kth)) if kth else None, "queries_with_k_hits": len(kth)}
    (folder / "pisa-top10.json").write_text(json.dumps(top))
    return out


def stage_search_seismic(work: Path, pool: int) -> dict[str, Any]:
    """Seismic at lsr-eval's defaults, top 10, against PISA's exact top 10 (ties with the 10th score found)."""
    from lsr_eval.engines.registry import get_engine

    folder = work / f"dup-{pool}"
    exact = json.loads((folder / "pisa-top10.json").read_text())
    recalls, ms = [], []
    with get_engine("seismic").open(folder / "index-seismic") as searcher:
        for i, (qid, weights) in enumerate(measured_queries(work)):
            t0 = time.perf_counter()
            hits = searcher.search(weights, RECALL_K, qid=qid)
            dt = (time.perf_counter() - t0) * 1e3
            if i < WARMUP:
                continue
            ms.append(dt)
            truth = exact[qid]
            if not truth:
                continue
            ids, cut = {d for d, _ in truth}, min(s for _, s in truth)
            found = sum(1 for d, s in hits if d in ids or (len(truth) >= RECALL_K and round(s) == cut))
            recalls.append(min(found, len(truth)) / len(truth))
    return {"recall_at_10": float(np.mean(recalls)), "queries": len(recalls),
            "latency_ms": {"mean": float(np.mean(ms)), "p50": float(np.percentile(ms, 50))}}


def postings_in_lists(work: Path, pool: int) -> float:
    df = json.loads((work / f"dup-{pool}" / "df.json").read_text())
    measured = measured_queries(work)[WARMUP:]
    return float(np.mean([sum(df.get(t, 0) for t in w) for _, w in measured]))


def child(args: argparse.Namespace) -> int:
    work, pool = Path(args.work), args.pool
    load = os.getloadavg()[0]
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    if args.child == "generate":
        out = stage_generate(work, pool)
    elif args.child.startswith("index-"):
        out = stage_index(work, pool, args.child[len("index-"):])
    elif args.child == "search-pisa":
        out = stage_search_pisa(work, pool)
    else:
        out = stage_search_seismic(work, pool)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    out.update(seconds=time.perf_counter() - t0, cpu_seconds=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
               peak_rss_bytes=peak_rss_bytes(), load_at_start=load)
    Path(args.result).write_text(json.dumps(out))
    return 0


def run_stage(work: Path, stage: str, pool: int) -> dict[str, Any]:
    """The stage's recorded result, or the stage run now in a fresh process."""
    result = work / f"dup-{pool}" / f"result-{stage}.json"
    if result.is_file():
        return {"status": "ok", **json.loads(result.read_text())}
    result.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, __file__, "--child", stage, "--pool", str(pool), "--work", str(work), "--result",
           str(result)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else str(done.returncode)
        return {"status": f"failed: {tail}"}
    return {"status": "ok", **json.loads(result.read_text())}


def verdict(pools: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The registered rule over the pools measured (the 5,000 pool the reference)."""
    ref = pools.get(5000)
    if not ref or any("latency_mean_ms" not in p for p in pools.values()):
        return {"status": "incomplete"}
    moves = {}
    for pool, p in pools.items():
        moves[pool] = {"latency": p["latency_mean_ms"] / ref["latency_mean_ms"] - 1,
                       "kth_score_k10": p["kth_score_k10"] / ref["kth_score_k10"] - 1}
    worst = max(abs(v) for m in moves.values() for v in m.values())
    return {"status": "complete", "moves": moves, "largest_move": worst,
            "duplication_matters": worst > THRESHOLD, "threshold": THRESHOLD}


def summary_md(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = ["# D3: duplication in the generated documents (1M documents, template pools)", "",
             f"Machine: {m.get('cpu')}, {m.get('cores')} cores. Generator fitted on all 5,000 msmarco-dl19-5k passages;"
             " templates drawn from a pool of P of them; 1,000 real dev queries after 20 unmeasured; PISA MaxScore "
             "(exact), Seismic at lsr-eval's defaults; one thread (studies/msmarco_scale/README.md, D3).", "",
             "| templates | copies a template | postings | distinct terms | postings in the queries' lists | "
             "k-th score k=10 (median) | k-th score k=1000 (median) | PISA mean k=1000 (ms) | PISA mean k=10 (ms) | "
             "Seismic recall@10 | Seismic mean (ms) |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(v, f="{:,.1f}"):
        return "" if v is None else f.format(v)

    for pool, p in sorted(doc["pools"].items(), key=lambda x: int(x[0])):
        lines.append(f"| {int(pool):,} | {SIZE // int(pool):,} | {cell(p.get('postings'), '{:,}')} | "
                     f"{cell(p.get('distinct_terms'), '{:,}')} | {cell(p.get('postings_in_lists'), '{:,.0f}')} | "
                     f"{cell(p.get('kth_score_k10'), '{:,.0f}')} | {cell(p.get('kth_score_k1000'), '{:,.0f}')} | "
                     f"{cell(p.get('latency_mean_ms'), '{:.2f}')} | {cell(p.get('latency_k10_mean_ms'), '{:.2f}')} | "
                     f"{cell(p.get('seismic_recall_at_10'), '{:.3f}')} | {cell(p.get('seismic_mean_ms'), '{:.2f}')} |")
    v = doc["verdict"]
    lines.append("")
    if v["status"] == "complete":   # the largest move in magnitude, said with its sign, measure and pool
        pool, what, move = max(((p, w, x) for p, m in v["moves"].items() for w, x in m.items()),
                               key=lambda t: abs(t[2]))
        named = {"latency": "PISA's mean latency", "kth_score_k10": "the median k-th score at k = 10"}[what]
        lines.append(f"Registered rule (a move of more than {v['threshold']:.0%} in PISA's mean latency or the median "
                     f"k-th score at k = 10 against the 5,000 pool): largest move {move:+.1%} ({named}, "
                     f"{int(pool):,} templates) -> duplication "
                     f"{'matters' if v['duplication_matters'] else 'does not matter'} by that rule.")
    else:
        lines.append("Registered rule: not decided yet (not every pool measured).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out")
    p.add_argument("--work", default=str(REPO / "work" / "msmarco-scale"),
                   help="scale.py's work folder (real.json, queries.json; D2's 1M collection if there)")
    p.add_argument("--pools", type=int, nargs="+", default=list(POOLS))
    p.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES),
                   help="run only these stages (the others are read if done): the builds while other work runs, the "
                        "searches on an idle machine")
    p.add_argument("--child", choices=STAGES)
    p.add_argument("--pool", type=int)
    p.add_argument("--result")
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    if not args.out:
        p.error("--out is required")
    from lsr_eval.manifest import machine, write_manifest

    work, out = Path(args.work), Path(args.out)
    t0 = time.perf_counter()
    pools: dict[int, dict[str, Any]] = {}
    stages: dict[str, dict[str, Any]] = {}
    for pool in args.pools:
        row: dict[str, Any] = {}
        for stage in STAGES:
            done = (work / f"dup-{pool}" / f"result-{stage}.json").is_file()
            if stage not in args.stages and not done:
                stages[f"{pool}/{stage}"] = {"status": "not run yet"}
                break
            rec = run_stage(work, stage, pool)
            stages[f"{pool}/{stage}"] = rec
            print(json.dumps({"pool": pool, "stage": stage, **rec}), flush=True)
            if rec["status"] != "ok":
                break
        gen, pisa, seis = (stages.get(f"{pool}/{s}", {}) for s in ("generate", "search-pisa", "search-seismic"))
        if gen.get("status") == "ok":
            row.update(postings=gen["postings"], distinct_terms=gen["distinct_terms"],
                       postings_in_lists=postings_in_lists(work, pool))
        if pisa.get("status") == "ok":
            row.update(kth_score_k10=pisa["k10"]["kth_score_median"], kth_score_k1000=pisa["k1000"]["kth_score_median"],
                       latency_mean_ms=pisa["k1000"]["latency_ms"]["mean"],
                       latency_k10_mean_ms=pisa["k10"]["latency_ms"]["mean"])
        if seis.get("status") == "ok":
            row.update(seismic_recall_at_10=seis["recall_at_10"], seismic_mean_ms=seis["latency_ms"]["mean"])
        pools[pool] = row
        doc = {"machine": machine(), "size": SIZE, "queries": QUERIES, "pools": pools, "stages": stages,
               "verdict": verdict(pools), "seconds": round(time.perf_counter() - t0, 1)}
        out.mkdir(parents=True, exist_ok=True)
        (out / "duplication.json").write_text(json.dumps(doc, indent=2) + "\n")
        (out / "summary.md").write_text(summary_md(doc))
        write_manifest(out, "study", {"study": "msmarco-scale-duplication", "pools": args.pools, "size": SIZE,
                                      "keep": KEEP, "sigma": SIGMA, "seed": SEED, "queries": QUERIES},
                       outputs=["duplication.json", "summary.md"], timings={"seconds": doc["seconds"]})
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
