"""Memory model per engine and stage on generated MS MARCO-like collections (studies/msmarco_scale/README.md, "Memory
model"): generate, index and search at each size, every stage in a fresh process (its own peak RSS), then
peak RSS = fixed + bytes per posting x postings fitted on the fit sizes and checked on the check size.

    python studies/msmarco_scale/scale.py --out results/studies/msmarco-scale-memory
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import KEEP, SEED, SIGMA, read_tsv_queries  # noqa: E402
from generator import draw, fit  # noqa: E402

from lsr_eval.workdir import folder_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIT_SIZES, CHECK_SIZE = (10_000, 100_000, 1_000_000), 2_000_000
ENGINES = ("pisa", "anserini")
QUERIES, WARMUP, K, FILE_DOCS = 1000, 20, 1000, 500_000


def peak_rss_bytes() -> int:
    """This process's peak resident memory (``VmHWM``: the JVM's too, which lives in the process)."""
    from lsr_eval.anserini.search_collection import process_rss_mb

    return int(process_rss_mb()["rss_peak_mb"] * 1024 * 1024)


# -- the stages, each run as a child process ----------------------------------------------------------------------
def stage_generate(work: Path, n: int) -> dict[str, Any]:
    from lsr_eval.anserini.collections import write_lines

    state = fit_state(work)
    out = work / f"collection-{n}"
    shutil.rmtree(out, ignore_errors=True)
    postings = 0

    def lines():
        nonlocal postings
        for docid, vector in draw(state, n, keep=KEEP, sigma=SIGMA, seed=SEED):
            postings += len(vector)
            yield {"id": docid, "contents": "", "vector": vector}

    written = write_lines(lines(), out, shard_size=FILE_DOCS)
    return {"documents": written.documents, "postings": postings, "collection_bytes": folder_bytes(out)}


def stage_index(work: Path, n: int, engine_name: str) -> dict[str, Any]:
    from lsr_eval.engines.registry import get_engine

    index = work / f"index-{engine_name}-{n}"
    shutil.rmtree(index, ignore_errors=True)
    built = get_engine(engine_name).build(work / f"collection-{n}", index, threads=2)
    return {"documents_indexed": built.documents_indexed, "index_bytes": folder_bytes(index)}


def stage_search(work: Path, n: int, engine_name: str, count: int = QUERIES) -> dict[str, Any]:
    from lsr_eval.engines.registry import get_engine

    queries = json.loads((work / "queries.json").read_text())
    items = list(queries.items())
    # the first WARMUP queries unmeasured, then the next ``count``; asked for more than there are: every query
    # measured after the first WARMUP ran unmeasured
    items = items[:WARMUP] + (items if count + WARMUP > len(items) else items[WARMUP:WARMUP + count])
    ms = []
    with get_engine(engine_name).open(work / f"index-{engine_name}-{n}") as searcher:
        for qid, weights in items:
            t = time.perf_counter()
            searcher.search(weights, K, qid=qid)
            ms.append((time.perf_counter() - t) * 1e3)
    a = np.asarray(ms[WARMUP:])
    return {"queries": int(a.size), "search_ms": {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
                                                  "p99": float(np.percentile(a, 99))}}


def fit_state(work: Path):
    vectors = json.loads((work / "real.json").read_text())
    return fit(list(vectors.values()))


def child(args: argparse.Namespace) -> int:
    """Run one stage here and write what it measured to ``args.result``."""
    work = Path(args.work)
    load = os.getloadavg()[0]  # other work on the machine when the stage started (1-minute load average)
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    if args.stage == "generate":
        out = stage_generate(work, args.size)
    elif args.stage == "index":
        out = stage_index(work, args.size, args.engine)
    else:
        out = stage_search(work, args.size, args.engine, args.queries)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    out.update(seconds=time.perf_counter() - t0,
               cpu_seconds=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), peak_rss_bytes=peak_rss_bytes(),
               load_at_start=load)
    Path(args.result).write_text(json.dumps(out))
    return 0


def run_stage(work: Path, stage: str, size: int, engine: str | None = None, queries: int = QUERIES) -> dict[str, Any]:
    tag = "" if queries == QUERIES else f"-q{queries}"
    result = work / f"result-{stage}-{engine or 'shared'}-{size}{tag}.json"
    cmd = [sys.executable, __file__, "--child", stage, "--size", str(size), "--work", str(work), "--result",
           str(result), "--queries", str(queries)] + (["--engine", engine] if engine else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"status": f"failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"}
    return {"status": "ok", **json.loads(result.read_text())}


# -- the model ----------------------------------------------------------------------------------------------------
def memory_model(rows: list[dict[str, Any]], fit_sizes, check_size: int) -> dict[str, Any]:
    """peak RSS = fixed + bytes per posting x postings per (engine, stage), least squares over ``fit_sizes``; its
    prediction and error at ``check_size``."""
    out: dict[str, Any] = {}
    keys = sorted({(r["engine"], r["stage"]) for r in rows})
    for engine, stage in keys:
        pts = {r["size"]: r for r in rows if (r["engine"], r["stage"]) == (engine, stage) and r["status"] == "ok"}
        if not all(s in pts for s in fit_sizes):
            continue
        x = np.array([pts[s]["postings"] for s in fit_sizes], dtype=np.float64)
        y = np.array([pts[s]["peak_rss_bytes"] for s in fit_sizes], dtype=np.float64)
        slope, fixed = np.polyfit(x, y, 1)
        entry: dict[str, Any] = {"fixed_mb": fixed / 2**20, "bytes_per_posting": float(slope),
                                 "fit_sizes": list(fit_sizes)}
        if check_size in pts:
            predicted = fixed + slope * pts[check_size]["postings"]
            measured = pts[check_size]["peak_rss_bytes"]
            entry.update(check_size=check_size, predicted_mb=predicted / 2**20, measured_mb=measured / 2**20,
                         error=(measured - predicted) / measured)
        out[f"{engine}/{stage}"] = entry
    return out


def _latency(lat: dict[str, float] | None) -> str:
    return "" if lat is None else f"{lat['mean']:.2f} / {lat['p50']:.2f} / {lat['p99']:.2f}"


def summary_md(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = ["# Memory per engine and stage on generated MS MARCO-like collections (real dev queries)", "",
             f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_bytes', 0) / 2**30:.0f} GiB, flags "
             f"{', '.join(m.get('cpu_flags', []))}. Generator fitted on splade-tiny's encodings of the 5,000 "
             "msmarco-dl19-5k passages (studies/msmarco_scale/README.md); real queries, generated documents.", "",
             "| documents | postings | engine | stage | seconds | CPU seconds | peak RSS (MiB) | on disk (MiB) | "
             "search mean / p50 / p99 (ms) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        if r["status"] != "ok":
            lines.append(f"| {r['size']:,} | | {r['engine']} | {r['stage']} | {r['status']} | | | | |")
            continue
        disk = r.get("index_bytes", r.get("collection_bytes"))
        lat = r.get("search_ms")
        lines.append(f"| {r['size']:,} | {r['postings']:,} | {r['engine']} | {r['stage']} | {r['seconds']:.1f} | "
                     f"{r['cpu_seconds']:.1f} | {r['peak_rss_bytes'] / 2**20:,.0f} | "
                     f"{'' if disk is None else f'{disk / 2**20:,.0f}'} | "
                     f"{_latency(lat)} |")
    lines += ["", "Memory model: peak RSS = fixed + bytes per posting x postings, least squares over "
              f"{', '.join(f'{s:,}' for s in doc['fit_sizes'])} documents; checked on {doc['check_size']:,}.", "",
              "| engine / stage | fixed (MiB) | bytes per posting | predicted (MiB) | measured (MiB) | error |",
              "|---|---|---|---|---|---|"]
    for name, e in doc["model"].items():
        check = (f"{e['predicted_mb']:,.0f} | {e['measured_mb']:,.0f} | {100 * e['error']:+.1f}%"
                 if "error" in e else "| | not measured")
        lines.append(f"| {name} | {e['fixed_mb']:,.0f} | {e['bytes_per_posting']:.1f} | {check} |")
    lines += ["", "Every stage ran in a fresh process: its peak RSS includes the interpreter, the libraries and, for "
              "Anserini, the JVM. Indexes built with threads = 2 (Anserini: a thread per file of 500,000 documents; "
              "PISA's inverter is single-threaded). Search: the first 1,000 MS MARCO dev queries (splade-tiny, query "
              "terms capped at 256) after 20 unmeasured, one at a time, one thread, k = 1,000."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--out")
    p.add_argument("--work", default=str(REPO / "work" / "msmarco-scale"))
    p.add_argument("--sizes", type=int, nargs="+", default=list(FIT_SIZES))
    p.add_argument("--check-size", type=int, default=CHECK_SIZE)
    p.add_argument("--child", choices=["generate", "index", "search"])
    p.add_argument("--size", type=int)
    p.add_argument("--engine")
    p.add_argument("--result")
    p.add_argument("--queries", type=int, default=QUERIES, help="dev queries a search stage measures")
    args = p.parse_args(argv)
    if args.child:
        args.stage = args.child
        return child(args)
    if args.queries != QUERIES:
        p.error("--queries applies to one stage (--child search); the memory model measures the registered 1,000")
    if not args.out:
        p.error("--out is required")
    import lsr_eval
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.manifest import machine, write_manifest

    data, out, work = Path(args.data), Path(args.out), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    splade = lsr_eval.Splade("splade-tiny", encode=lsr_eval.EncodeOptions(doc_top_k=1024, query_top_k=256),
                             work=work / "cache")
    real = query_weight_maps(splade.encode(lsr_eval.load_dataset(str(data / "beir" / "msmarco-dl19-5k"),
                                                                  split="test")))
    (work / "real.json").write_text(json.dumps(real))
    queries = read_tsv_queries(data / "msmarco-passage" / "queries.dev.small.tsv")
    qmaps = {q: w for q, w in query_weight_maps(splade.encode_queries(queries)).items() if w}
    (work / "queries.json").write_text(json.dumps(qmaps))
    rows: list[dict[str, Any]] = []
    for size in [*args.sizes, args.check_size]:
        gen = run_stage(work, "generate", size)
        rows.append({"size": size, "engine": "shared", "stage": "generate", **gen})
        print(json.dumps(rows[-1]), flush=True)
        postings = gen.get("postings")
        for engine in ENGINES:
            for stage in ("index", "search"):
                rec = run_stage(work, stage, size, engine)
                rows.append({"size": size, "engine": engine, "stage": stage, "postings": postings, **rec})
                print(json.dumps(rows[-1]), flush=True)
            shutil.rmtree(work / f"index-{engine}-{size}", ignore_errors=True)
        shutil.rmtree(work / f"collection-{size}", ignore_errors=True)
    doc = {"machine": machine(), "fit_sizes": args.sizes, "check_size": args.check_size, "rows": rows,
           "model": memory_model(rows, args.sizes, args.check_size), "seconds": round(time.perf_counter() - t0, 1)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "summary.md").write_text(summary_md(doc))
    write_manifest(out, "study", {"study": "msmarco-scale-memory", "keep": KEEP, "sigma": SIGMA, "seed": SEED,
                                  "fit_sizes": args.sizes, "check_size": args.check_size, "engines": list(ENGINES),
                                  "k": K, "queries": QUERIES},
                   outputs=["scale.json", "summary.md"], timings={"seconds": doc["seconds"]})
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
