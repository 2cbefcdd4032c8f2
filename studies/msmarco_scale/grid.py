"""D4: every engine on generated MS MARCO-like collections of 10k to 2M documents (studies/msmarco_scale/README.md,
"D4"): PISA, Anserini, BMP (safe and one faster setting) and Seismic (defaults and tuned) at k = 10 and 1,000 with
splade-tiny's dev queries capped at 256 terms, and at k = 10 capped at 32; recall against PISA's exact top k (ties with
the k-th score found); memory and time models of Seismic's and BMP's stages. Each stage runs in a fresh process and a
finished stage is not run again (its result file is read), so the run resumes where it stopped.

    python studies/msmarco_scale/grid.py --out results/studies/msmarco-scale-engines --phase build
    python studies/msmarco_scale/grid.py --out results/studies/msmarco-scale-engines --phase search
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
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
from scale import WARMUP, peak_rss_bytes, stage_generate  # noqa: E402

from lsr_eval.workdir import folder_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIT_SIZES, CHECK_SIZE = (10_000, 100_000, 1_000_000), 2_000_000
ENGINES = ("pisa", "anserini", "bmp", "seismic")
QUERIES, TUNE = 1000, 500            # measured queries after WARMUP unmeasured; the first TUNE of them tune Seismic
#: query settings: splade-tiny's dev queries capped at 256 terms (k = 10 and 1,000) and at 32 terms (k = 10)
QSETS = {"q256": (256, (10, 1000)), "q32": (32, (10,))}
#: search settings per engine; Seismic's "tuned" is chosen per size and query setting by the tune stage
SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "pisa": {"exact": {}},
    "anserini": {"exact": {}},
    "bmp": {"safe": {"alpha": 1.0, "beta": 1.0}, "fast": {"alpha": 0.8, "beta": 1.0}},
    "seismic": {"default": {}},
}
#: Seismic's tuning grid (12 settings), the rule: the fastest mean (k = 10) with recall@10 >= TARGET on the tuning
#: queries; if none reaches it, the highest recall@10
TUNE_GRID = [{"query_cut": c, "heap_factor": h} for c in (3, 5, 8, 12) for h in (0.8, 0.9, 1.0)]
TARGET = 0.95
EXACT = "pisa/exact"                 # the reference every recall is measured against


# -- queries --------------------------------------------------------------------------------------------------------
def queries(work: Path, qset: str) -> list[tuple[str, dict[str, int]]]:
    """The WARMUP unmeasured then the QUERIES measured dev queries of a query setting, in scale.py's order."""
    items = list(json.loads((work / f"grid-queries-{qset}.json").read_text()).items())
    return items[:WARMUP + QUERIES]


def prepare_queries(work: Path, data: Path) -> None:
    """splade-tiny's encodings of the same dev queries (scale.py's queries.json order) at each query setting."""
    import lsr_eval
    from lsr_eval.export.queries import query_weight_maps

    scale_queries = json.loads((work / "queries.json").read_text())   # splade-tiny, 256 terms at most
    order = list(scale_queries)[:WARMUP + QUERIES]
    wanted = set(order)
    texts = [q for q in read_tsv_queries(data / "msmarco-passage" / "queries.dev.small.tsv") if q.id in wanted]
    for qset, (top_k, _) in QSETS.items():
        path = work / f"grid-queries-{qset}.json"
        if path.is_file():
            continue
        if top_k == 256:   # scale.py's own encodings (D1-D3's queries)
            path.write_text(json.dumps({q: scale_queries[q] for q in order}))
            continue
        splade = lsr_eval.Splade("splade-tiny", encode=lsr_eval.EncodeOptions(doc_top_k=1024, query_top_k=top_k),
                                 work=work / "cache")
        maps = query_weight_maps(splade.encode_queries(texts))
        path.write_text(json.dumps({q: maps[q] for q in order}))


# -- top k: digests and recall ------------------------------------------------------------------------------------
def tie_aware(hits: list[tuple[str, int]], k: int) -> tuple[list[str], int | None]:
    """The documents scored above the k-th score (sorted) and the k-th score; every hit when there are fewer than k.
    Which of the documents tied with the k-th score an engine keeps is its tie-break, not its answer."""
    if len(hits) < k:
        return sorted(d for d, _ in hits), None
    cut = hits[k - 1][1]
    return sorted(d for d, s in hits[:k] if s > cut), cut


def digest(hits: list[tuple[str, int]], k: int) -> str:
    above, cut = tie_aware(hits, k)
    n = min(len(hits), k)
    return hashlib.sha1(f"{n}|{cut}|{','.join(above)}".encode()).hexdigest()[:16]


def recall(approx: list[tuple[str, int]], exact: list[tuple[str, int]], k: int) -> float | None:
    """|approximate top k ∩ exact top k| / k, a document scored at least the exact k-th score counting as found
    (fewer than k exact hits: over those); None for a query without exact hits."""
    truth = exact[:k]
    if not truth:
        return None
    ids = {d for d, _ in truth}
    cut = truth[-1][1] if len(truth) >= k else None
    found = sum(1 for d, s in approx[:k] if d in ids or (cut is not None and s >= cut))
    return min(found, len(truth)) / len(truth)


def latency(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99))}


# -- stages (each in its own process) -----------------------------------------------------------------------------
def stage_index(work: Path, n: int, engine: str) -> dict[str, Any]:
    from lsr_eval.engines.registry import get_engine

    index = work / f"index-{engine}-{n}"
    shutil.rmtree(index, ignore_errors=True)
    built = get_engine(engine).build(work / f"collection-{n}", index, threads=2)
    return {"documents_indexed": built.documents_indexed, "index_bytes": folder_bytes(index)}


def open_searcher(work: Path, n: int, engine: str, knobs: dict[str, Any]):
    from lsr_eval.engines.registry import get_engine

    return get_engine(engine).open(work / f"index-{engine}-{n}", **knobs)


def timed(searcher, items, k: int) -> tuple[dict[str, list[tuple[str, int]]], list[float]]:
    """Every query's hits (integer scores) and the whole search call's milliseconds, the first WARMUP unmeasured."""
    hits, ms = {}, []
    for i, (qid, weights) in enumerate(items):
        t0 = time.perf_counter()
        got = searcher.search(weights, k, qid=qid)
        dt = (time.perf_counter() - t0) * 1e3
        if i >= WARMUP:
            ms.append(dt)
            hits[qid] = [(d, round(s)) for d, s in got]
    return hits, ms


def stage_search(work: Path, n: int, engine: str, setting: str, qset: str) -> dict[str, Any]:
    """One engine setting over a query setting at each of its k: latency, and the hits kept for digests and recall.
    Seismic's tuned setting is measured on the queries after the first TUNE (it was chosen on those)."""
    folder = work / "grid" / str(n)
    items = queries(work, qset)
    if setting == "tuned":
        knobs = json.loads((folder / f"result-tune-seismic-{qset}.json").read_text())["chosen"]
        items = items[:WARMUP] + items[WARMUP + TUNE:]
    else:
        knobs = SETTINGS[engine][setting]
    out: dict[str, Any] = {"knobs": knobs}
    kept: dict[str, Any] = {}
    with open_searcher(work, n, engine, knobs) as searcher:
        for k in QSETS[qset][1]:
            hits, ms = timed(searcher, items, k)
            out[f"k{k}"] = {"latency_ms": latency(ms), "queries": len(ms)}
            kept[f"k{k}"] = {"hits": hits, "ms": ms}
    (folder / f"hits-{engine}-{setting}-{qset}.json").write_text(json.dumps(kept))
    return out


def stage_tune(work: Path, n: int, qset: str) -> dict[str, Any]:
    """Seismic's TUNE_GRID on the first TUNE measured queries at k = 10, against PISA's exact top 10 (one open index,
    the knobs set between settings); the registered rule picks one."""
    from lsr_eval.engines.seismic import check_search_knobs

    folder = work / "grid" / str(n)
    exact = json.loads((folder / f"hits-pisa-exact-{qset}.json").read_text())["k10"]["hits"]
    items = queries(work, qset)[:WARMUP + TUNE]
    tried = []
    with open_searcher(work, n, "seismic", {}) as searcher:
        for knobs in TUNE_GRID:
            searcher.knobs = check_search_knobs(**knobs)
            hits, ms = timed(searcher, items, 10)
            r = [x for x in (recall(hits[q], exact[q], 10) for q in hits) if x is not None]
            tried.append({"knobs": knobs, "recall_at_10": float(np.mean(r)), "mean_ms": float(np.mean(ms))})
    best, reached = choose(tried)
    return {"tried": tried, "chosen": best["knobs"], "reached_target": reached}


def choose(tried: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    """The registered rule: the fastest mean among the settings with recall@10 >= TARGET, else the highest recall@10
    (the first listed on a tie); and whether the target was reached."""
    reaching = [t for t in tried if t["recall_at_10"] >= TARGET]
    if reaching:
        return min(reaching, key=lambda t: t["mean_ms"]), True
    return max(tried, key=lambda t: t["recall_at_10"]), False


def child(args: argparse.Namespace) -> int:
    work, n, stage = Path(args.work), args.size, args.child
    load = os.getloadavg()[0]   # other work on the machine when the stage started (1-minute load average)
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    if stage == "generate":
        out = stage_generate(work, n)
    elif stage.startswith("index-"):
        out = stage_index(work, n, stage.split("-", 1)[1])
    elif stage.startswith("tune-"):
        out = stage_tune(work, n, stage.split("-")[2])
    else:
        _, engine, setting, qset = stage.split("-")
        out = stage_search(work, n, engine, setting, qset)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    out.update(seconds=time.perf_counter() - t0, cpu_seconds=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
               peak_rss_bytes=peak_rss_bytes(), load_at_start=load, load_at_end=os.getloadavg()[0])
    Path(args.result).write_text(json.dumps(out))
    return 0


def result_path(work: Path, n: int, stage: str) -> Path:
    return work / "grid" / str(n) / f"result-{stage}.json"


def run_stage(work: Path, n: int, stage: str) -> dict[str, Any]:
    """The stage's recorded result; or, for the collection of 1M and PISA's index of it, scale.py's (built on this
    machine for studies/pisa_timing and D3); or the stage run now in a fresh process."""
    result = result_path(work, n, stage)
    if result.is_file():
        return {"status": "ok", **json.loads(result.read_text())}
    result.parent.mkdir(parents=True, exist_ok=True)
    earlier = {"generate": work / f"result-generate-shared-{n}.json",
               "index-pisa": work / f"result-index-pisa-{n}.json"}.get(stage)
    target = work / (f"collection-{n}" if stage == "generate" else f"index-pisa-{n}")
    if earlier is not None and earlier.is_file() and target.is_dir():
        rec = {**json.loads(earlier.read_text()), "reused": earlier.name}
        result.write_text(json.dumps(rec))
        return {"status": "ok", **rec}
    cmd = [sys.executable, __file__, "--child", stage, "--size", str(n), "--work", str(work), "--result", str(result)]
    env = {**os.environ, "RAYON_NUM_THREADS": "1" if not stage.startswith("index") else "2"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else str(done.returncode)
        return {"status": f"failed: {tail}"}
    return {"status": "ok", **json.loads(result.read_text())}


def build_stages() -> list[str]:
    return ["generate", *(f"index-{e}" for e in ENGINES)]


def search_stages() -> list[str]:
    out = []
    for qset in QSETS:
        out += [f"search-{e}-{s}-{qset}" for e in ENGINES for s in SETTINGS[e]]
        out += [f"tune-seismic-{qset}", f"search-seismic-tuned-{qset}"]
    return out


# -- what the run measured: rows, recall, digests, models -----------------------------------------------------------
def measure(work: Path, sizes: list[int], stages: dict[str, dict[str, Any]]) -> tuple[list[dict], dict, dict]:
    """One row per size, engine, setting, query setting and k (latency, recall against PISA's exact top k, the mean
    over the held-out queries); the per-query digests; the tuning tables."""
    rows, digests, tuning = [], {}, {}
    for n in sizes:
        folder = work / "grid" / str(n)
        gen = stages.get(f"{n}/generate", {})
        for qset, (_, ks) in QSETS.items():
            ref_path = folder / f"hits-pisa-exact-{qset}.json"
            ref = json.loads(ref_path.read_text()) if ref_path.is_file() else None
            tune = stages.get(f"{n}/tune-seismic-{qset}", {})
            if tune.get("status") == "ok":
                tuning[f"{n}/{qset}"] = {"tried": tune["tried"], "chosen": tune["chosen"],
                                         "reached_target": tune["reached_target"]}
            for engine in ENGINES:
                for setting in [*SETTINGS[engine], *(["tuned"] if engine == "seismic" else [])]:
                    rec = stages.get(f"{n}/search-{engine}-{setting}-{qset}", {})
                    path = folder / f"hits-{engine}-{setting}-{qset}.json"
                    if rec.get("status") != "ok" or not path.is_file():
                        continue
                    kept = json.loads(path.read_text())
                    for k in ks:
                        got = kept[f"k{k}"]
                        hits = {q: [tuple(h) for h in v] for q, v in got["hits"].items()}
                        digests[f"{n}/{engine}-{setting}/{qset}/k{k}"] = {q: digest(h, k) for q, h in hits.items()}
                        row = {"size": n, "postings": gen.get("postings"), "engine": engine, "setting": setting,
                               "knobs": rec["knobs"], "qset": qset, "k": k, "queries": len(got["ms"]),
                               "latency_ms": latency(got["ms"]), "seconds": rec["seconds"],
                               "cpu_seconds": rec["cpu_seconds"], "peak_rss_bytes": rec["peak_rss_bytes"],
                               "load_at_start": rec["load_at_start"]}
                        # the held-out queries (those the tuned setting is measured on), for a like-for-like mean
                        held = [ms for q, ms in zip(hits, got["ms"]) if q in _held_out(work, qset)]
                        row["held_out_mean_ms"] = float(np.mean(held)) if held else None
                        if ref is not None and f"{engine}/{setting}" != EXACT:
                            exact = ref[f"k{k}"]["hits"]
                            r = [x for x in (recall(hits[q], [tuple(h) for h in exact[q]], k) for q in hits)
                                 if x is not None]
                            row[f"recall_at_{k}"] = float(np.mean(r))
                        rows.append(row)
    return rows, digests, tuning


_HELD: dict[str, set[str]] = {}


def _held_out(work: Path, qset: str) -> set[str]:
    if qset not in _HELD:
        _HELD[qset] = {q for q, _ in queries(work, qset)[WARMUP + TUNE:]}
    return _HELD[qset]


def stage_models(stages: dict[str, dict[str, Any]], fit_sizes, check_size: int) -> dict[str, Any]:
    """peak RSS and wall seconds = fixed + per posting x postings for Seismic's and BMP's index and search stages
    (search: the defaults' / safe setting's stage over the 32-term queries at k = 10, whose kept hits are small beside
    the index), least squares over ``fit_sizes``; the prediction's error at ``check_size``,
    (measured - predicted) / measured."""
    first = {"seismic": "search-seismic-default-q32", "bmp": "search-bmp-safe-q32"}
    out: dict[str, Any] = {}
    for engine in ("seismic", "bmp"):
        for kind, stage in (("index", f"index-{engine}"), ("search", first[engine])):
            pts = {n: stages.get(f"{n}/{stage}", {}) for n in [*fit_sizes, check_size]}
            posts = {n: stages.get(f"{n}/generate", {}).get("postings") for n in pts}
            if not all(pts[n].get("status") == "ok" and posts[n] for n in fit_sizes):
                continue
            x = np.array([posts[n] for n in fit_sizes], dtype=np.float64)
            for what, key in (("peak_rss_mb", "peak_rss_bytes"), ("seconds", "seconds")):
                scale = 2**20 if what == "peak_rss_mb" else 1.0
                y = np.array([pts[n][key] / scale for n in fit_sizes], dtype=np.float64)
                slope, fixed = np.polyfit(x, y, 1)
                entry: dict[str, Any] = {"fixed": float(fixed), "per_million_postings": float(slope * 1e6)}
                if pts[check_size].get("status") == "ok" and posts[check_size]:
                    predicted = fixed + slope * posts[check_size]
                    measured = pts[check_size][key] / scale
                    entry.update(predicted=float(predicted), measured=float(measured),
                                 error=float((measured - predicted) / measured))
                out[f"{engine}/{kind}/{what}"] = entry
    return out


def _cell(v, f="{:,.2f}") -> str:
    return "" if v is None else f.format(v)


def summary_md(doc: dict[str, Any]) -> str:
    """The summary: rows by size, the tuning choices, the models; rebuilt from ``engines.json`` alone."""
    m = doc["machine"]
    lines = ["# D4: every engine on generated MS MARCO-like collections (real queries, generated documents)", "",
             f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_bytes', 0) / 2**30:.0f} GiB. "
             f"{doc['queries']:,} MS MARCO dev queries after {doc['warmup']} unmeasured (Seismic tuned: the last "
             f"{doc['queries'] - doc['tune']:,}, tuned on the first {doc['tune']:,}), one at a time, one thread, the "
             "whole search call. Recall@k against PISA's exact top k, documents scored at least the exact k-th score "
             "counting as found (studies/msmarco_scale/README.md, D4).", "",
             "| documents | queries | k | engine | setting | mean / p50 / p99 (ms) | mean, held-out 500 (ms) | "
             "recall@k | peak RSS (MiB) | load at start |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lat, rec = r["latency_ms"], r.get(f"recall_at_{r['k']}")
        lines.append(f"| {r['size']:,} | {r['qset']} | {r['k']:,} | {r['engine']} | {r['setting']} | "
                     f"{lat['mean']:.2f} / {lat['p50']:.2f} / {lat['p99']:.2f} | {_cell(r['held_out_mean_ms'])} | "
                     f"{_cell(rec, '{:.3f}')} | {r['peak_rss_bytes'] / 2**20:,.0f} | "
                     f"{r['load_at_start']:.2f} |")
    lines += ["", "Seismic's tuning (k = 10, the first 500 measured queries; registered rule: the fastest with "
              f"recall@10 >= {TARGET}, else the most accurate):", "",
              "| documents | queries | chosen query_cut / heap_factor | its recall@10 / mean (ms) on the tuning "
              "queries | reached the target |", "|---|---|---|---|---|"]
    for key, t in doc["tuning"].items():
        n, qset = key.split("/")
        c = t["chosen"]
        mine = next(x for x in t["tried"] if x["knobs"] == c)
        lines.append(f"| {int(n):,} | {qset} | {c['query_cut']} / {c['heap_factor']} | "
                     f"{mine['recall_at_10']:.3f} / {mine['mean_ms']:.2f} | {'yes' if t['reached_target'] else 'no'} |")
    lines += ["", "Builds (threads = 2) and their stages:", "",
              "| documents | postings | stage | seconds | CPU seconds | peak RSS (MiB) | on disk (MiB) | "
              "load at start |",
              "|---|---|---|---|---|---|---|---|"]
    for key, s in doc["stages"].items():
        n, stage = key.split("/")
        if stage != "generate" and not stage.startswith("index-"):
            continue
        post = doc["stages"].get(f"{n}/generate", {}).get("postings")
        if s.get("status") != "ok":
            lines.append(f"| {int(n):,} | | {stage} | {s.get('status')} | | | | |")
        elif "reused" in s:
            lines.append(f"| {int(n):,} | {_cell(post, '{:,}')} | {stage} | reused ({s['reused']}) | | | | |")
        else:
            disk = s.get("index_bytes", s.get("collection_bytes"))
            disk_mb = None if disk is None else disk / 2**20
            lines.append(f"| {int(n):,} | {_cell(post, '{:,}')} | {stage} | {s['seconds']:.1f} | "
                         f"{s['cpu_seconds']:.1f} | {s['peak_rss_bytes'] / 2**20:,.0f} | {_cell(disk_mb, '{:,.0f}')} | "
                         f"{s['load_at_start']:.2f} |")
    lines += ["", "Models: value = fixed + per million postings x postings, least squares over "
              f"{', '.join(f'{s:,}' for s in doc['fit_sizes'])} documents, checked on {doc['check_size']:,} "
              "(error = (measured - predicted) / measured):", "",
              "| engine / stage / value | fixed | per million postings | predicted | measured | error |",
              "|---|---|---|---|---|---|"]
    for name, e in doc["models"].items():
        check = (f"{e['predicted']:,.1f} | {e['measured']:,.1f} | {100 * e['error']:+.1f}%" if "error" in e
                 else "| | not measured")
        lines.append(f"| {name} | {e['fixed']:,.1f} | {e['per_million_postings']:,.2f} | {check} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out")
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--work", default=str(REPO / "work" / "msmarco-scale"),
                   help="scale.py's work folder (real.json, queries.json; its 1M collection and PISA index if there)")
    p.add_argument("--sizes", type=int, nargs="+", default=[*FIT_SIZES, CHECK_SIZE])
    p.add_argument("--phase", choices=["build", "search", "report"], default="report",
                   help="build: the collections and indexes (load tolerated; each stage's load is recorded); search: "
                        "the searches, on an idle machine; report: only rewrite the outputs from what ran")
    p.add_argument("--child")
    p.add_argument("--size", type=int)
    p.add_argument("--result")
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    if not args.out:
        p.error("--out is required")
    from lsr_eval.manifest import machine, write_manifest

    work, out = Path(args.work), Path(args.out)
    prepare_queries(work, Path(args.data))
    t0 = time.perf_counter()
    stages: dict[str, dict[str, Any]] = {}
    for n in args.sizes:
        names = build_stages() + search_stages()
        run_now = {"build": build_stages(), "search": search_stages(), "report": []}[args.phase]
        for stage in names:
            if stage in run_now or result_path(work, n, stage).is_file():
                rec = run_stage(work, n, stage)
                stages[f"{n}/{stage}"] = rec
                if stage in run_now:
                    print(json.dumps({"size": n, "stage": stage, **{k: v for k, v in rec.items() if k != "tried"}}),
                          flush=True)
        rows, digests, tuning = measure(work, args.sizes, stages)
        doc = {"machine": machine(), "fit_sizes": list(FIT_SIZES), "check_size": CHECK_SIZE, "queries": QUERIES,
               "warmup": WARMUP, "tune": TUNE, "rows": rows, "tuning": tuning, "stages": stages,
               "models": stage_models(stages, FIT_SIZES, CHECK_SIZE), "seconds": round(time.perf_counter() - t0, 1)}
        out.mkdir(parents=True, exist_ok=True)
        (out / "engines.json").write_text(json.dumps(doc, indent=1) + "\n")
        with lzma.open(out / "digests.json.xz", "wt") as f:
            json.dump(digests, f, sort_keys=True)
        (out / "summary.md").write_text(summary_md(doc))
        write_manifest(out, "study", {"study": "msmarco-scale-engines", "sizes": args.sizes, "keep": KEEP,
                                      "sigma": SIGMA, "seed": SEED, "queries": QUERIES, "tune": TUNE,
                                      "qsets": {q: {"query_top_k": t, "k": list(ks)} for q, (t, ks) in QSETS.items()},
                                      "settings": SETTINGS, "tune_grid": TUNE_GRID, "target": TARGET},
                       outputs=["engines.json", "digests.json.xz", "summary.md"],
                       timings={"seconds": doc["seconds"]})
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
