"""D2 (studies/msmarco_scale/README.md, "8.8M"): the 8,841,823-document generated collection through PISA and
Anserini with the real MS MARCO dev queries, each stage in a fresh process (scale.py's stages), the disk and each
engine's memory checked against the memory model before the stage starts. Resumable: a stage whose result file is
in ``--work`` is not run again.

    python studies/msmarco_scale/full.py --model results/studies/msmarco-scale-memory/scale.json \\
        --out results/studies/msmarco-scale-8.8m [--engines pisa anserini]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check import KEEP, SEED, SIGMA, read_tsv_queries  # noqa: E402
from scale import ENGINES, QUERIES, WARMUP, K, memory_model, run_stage  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SIZE, BUDGET_BYTES, ALL_QUERIES = 8_841_823, 16 * 2**30, 6_980
ALL_QUERIES_ENGINE = "pisa"  # the engine searched with every dev query


def steps(engines: list[str]) -> list[tuple[str, str | None, int]]:
    """(stage, engine, queries) in the order they run."""
    out: list[tuple[str, str | None, int]] = [("generate", None, 0)]
    for engine in engines:
        out += [("index", engine, 0), ("search", engine, QUERIES)]
        if engine == ALL_QUERIES_ENGINE:
            out.append(("search", engine, ALL_QUERIES))
    return out


def per_posting(rows: list[dict[str, Any]], engine: str, stage: str, key: str) -> float | None:
    """``key`` (bytes on disk) per posting at the largest size measured for (engine, stage)."""
    done = [r for r in rows if (r["engine"], r["stage"]) == (engine, stage) and r["status"] == "ok" and key in r]
    if not done:
        return None
    last = max(done, key=lambda r: r["size"])
    return last[key] / last["postings"]


def postings_per_document(rows: list[dict[str, Any]]) -> float:
    gen = max((r for r in rows if r["stage"] == "generate" and r["status"] == "ok"), key=lambda r: r["size"])
    return gen["postings"] / gen["documents"]


def disk_needed(rows: list[dict[str, Any]], engines: list[str], size: int) -> dict[str, float]:
    """Bytes each stage leaves on disk at ``size`` documents, at the measured bytes per posting of the model's
    largest size (the collection is kept until every index is built)."""
    postings = postings_per_document(rows) * size
    need = {"collection": (per_posting(rows, "shared", "generate", "collection_bytes") or 0.0) * postings}
    for engine in engines:
        need[f"{engine} index"] = (per_posting(rows, engine, "index", "index_bytes") or 0.0) * postings
    return need


def predicted_bytes(entry: dict[str, Any], postings: float) -> float:
    """The memory model's peak RSS (bytes) of one (engine, stage) at ``postings``: fixed + bytes per posting."""
    return entry["fixed_mb"] * 2**20 + entry["bytes_per_posting"] * postings


def memory_refusal(model: dict[str, Any], rows: list[dict[str, Any]], engine: str, stage: str, size: int,
                   budget: int = BUDGET_BYTES, postings: float | None = None) -> str | None:
    """Why (engine, stage) must not start at ``size`` documents, or None: only when its memory model, checked on a
    measured size, predicts more than ``budget`` even at the low end of the error it showed there. ``postings``: the
    collection's (once it is generated), else estimated from the memory run's postings per document (``rows``)."""
    entry = model.get(f"{engine}/{stage}")
    if entry is None or "error" not in entry:
        return None
    predicted = predicted_bytes(entry, postings_per_document(rows) * size if postings is None else postings)
    # the error is (measured - predicted) / measured: the lowest measured size it allows is predicted / (1 + |error|)
    # (the committed 8.8M run used predicted x (1 - |error|), a lower bound still: the decision there is the same)
    low = predicted / (1 + abs(entry["error"]))
    if low <= budget:
        return None
    return (f"{engine} {stage} at {size:,} documents: the memory model predicts {predicted / 2**30:.1f} GiB "
            f"(error {100 * entry['error']:+.1f}% at {entry['check_size']:,}), over the {budget / 2**30:.0f} GiB "
            f"budget; not started: it needs about {predicted / 2**30:.1f} GiB of memory")


def read_model(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows and model of the memory model run: its ``scale.json``, or the result files of a run still going in its
    work folder (``result-{stage}-{engine}-{size}.json``; the model from the sizes finished so far)."""
    if path.is_file():
        memory = json.loads(path.read_text())
        return memory["rows"], memory["model"]
    rows = []
    for f in sorted(path.glob("result-*.json")):
        stage, engine, size = f.stem.split("-")[1:4]
        if size.isdigit():
            rows.append({"size": int(size), "engine": engine, "stage": stage, "status": "ok",
                         **json.loads(f.read_text())})
    gen = {r["size"]: r["postings"] for r in rows if r["stage"] == "generate"}
    for r in rows:
        r.setdefault("postings", gen.get(r["size"]))
    sizes = sorted(gen)
    return rows, memory_model(rows, sizes[:3], sizes[3] if len(sizes) > 3 else -1)


def summary_md(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [f"# {doc['size']:,} generated MS MARCO-like documents, real dev queries (D2)", "",
             f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_bytes', 0) / 2**30:.0f} GiB, flags "
             f"{', '.join(m.get('cpu_flags', []))}. Pre-registration: studies/msmarco_scale/README.md (D2). "
             "Real queries, generated documents (the generator of the 5,000-passage check, fitted on all of them).",
             "", f"Disk before the run: {doc['disk']['free_bytes'] / 2**30:,.1f} GiB free; predicted need "
             + ", ".join(f"{k} {v / 2**30:,.1f} GiB" for k, v in doc["disk"]["needed_bytes"].items()) + ".", "",
             "| stage | engine | queries | status | seconds | CPU seconds | peak RSS (GiB) | predicted peak RSS (GiB) "
             "| on disk (GiB) | search mean / p50 / p99 (ms) | load at start |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        pred = r.get("predicted_peak_rss_bytes")
        pred_s = "" if pred is None else f"{pred / 2**30:.2f}"
        if r["status"] != "ok":
            lines.append(f"| {r['stage']} | {r['engine']} | {r.get('queries_asked') or ''} | {r['status']} | | | "
                         f"| {pred_s} | | | |")
            continue
        disk = r.get("index_bytes", r.get("collection_bytes"))
        lat = r.get("search_ms")
        lat_s = "" if lat is None else f"{lat['mean']:.2f} / {lat['p50']:.2f} / {lat['p99']:.2f}"
        lines.append(f"| {r['stage']} | {r['engine']} | {r.get('queries') or ''} | ok | {r['seconds']:,.0f} | "
                     f"{r['cpu_seconds']:,.0f} | {r['peak_rss_bytes'] / 2**30:.2f} | {pred_s} | "
                     f"{'' if disk is None else f'{disk / 2**30:.2f}'} | {lat_s} | {r.get('load_at_start', 0):.2f} |")
    gen = next((r for r in doc["rows"] if r["stage"] == "generate" and r["status"] == "ok"), None)
    if gen:
        lines += ["", f"Collection: {gen['documents']:,} documents, {gen['postings']:,} postings."]
    lines += ["", f"Search: MS MARCO dev (small) queries encoded by splade-tiny (query terms capped at 256), "
              f"{WARMUP} unmeasured first, then one at a time on one thread, k = {K}. Predicted peak RSS: the memory "
              "model of results/studies/msmarco-scale-memory (fixed + bytes per posting x postings), whose error on "
              "its check size that summary states. 'load at start': the 1-minute load average when the stage "
              "started (other work on the 2-core machine)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--model", required=True, help="scale.json of the memory model run (its rows and its model), or "
                   "the work folder of one still running")
    p.add_argument("--only", nargs="+", choices=["generate", *ENGINES], help="run these steps only (then stop)")
    p.add_argument("--stages", nargs="+", choices=["generate", "index", "search"],
                   default=["generate", "index", "search"], help="of those steps, these stages only (a stage left "
                   "out is listed as not run yet; e.g. index now, search when the machine is quiet)")
    p.add_argument("--out", required=True)
    p.add_argument("--work", default=str(REPO / "work" / "msmarco-scale-full"))
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    p.add_argument("--size", type=int, default=SIZE)
    p.add_argument("--keep-work", action="store_true", help="keep the collection and indexes when done")
    args = p.parse_args(argv)
    from lsr_eval.manifest import machine, write_manifest

    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    rows_model, model = read_model(Path(args.model))
    if not (work / "queries.json").is_file() or not (work / "real.json").is_file():  # as scale.py makes them
        import lsr_eval
        from lsr_eval.export.queries import query_weight_maps

        splade = lsr_eval.Splade("splade-tiny", encode=lsr_eval.EncodeOptions(doc_top_k=1024, query_top_k=256),
                                 work=work / "cache")
        real = lsr_eval.load_dataset(str(Path(args.data) / "beir" / "msmarco-dl19-5k"), split="test")
        (work / "real.json").write_text(json.dumps(query_weight_maps(splade.encode(real))))
        queries = read_tsv_queries(Path(args.data) / "msmarco-passage" / "queries.dev.small.tsv")
        qmaps = {q: w for q, w in query_weight_maps(splade.encode_queries(queries)).items() if w}
        (work / "queries.json").write_text(json.dumps(qmaps))
    need = disk_needed(rows_model, args.engines, args.size)
    free = shutil.disk_usage(work).free
    print(f"disk: {free / 2**30:,.1f} GiB free in {work}; predicted need "
          + ", ".join(f"{k} {v / 2**30:,.1f} GiB" for k, v in need.items()), flush=True)
    state = work / "disk.json"
    if not state.is_file():  # the disk as it was before the first stage (a resumed run keeps it)
        if sum(need.values()) > free:
            print(f"not started: {sum(need.values()) / 2**30:,.1f} GiB needed, {free / 2**30:,.1f} GiB free in "
                  f"{work}; free space or choose another --work", file=sys.stderr)
            return 2
        state.write_text(json.dumps({"free_bytes": free, "needed_bytes": need}))
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    doc: dict[str, Any] = {}
    postings = None
    for stage, engine, queries in steps(args.engines):
        tag = "" if queries in (0, QUERIES) else f"-q{queries}"
        result = work / f"result-{stage}-{engine or 'shared'}-{args.size}{tag}.json"
        skipped = not result.is_file() and ((args.only and (engine or "generate") not in args.only)
                                            or stage not in args.stages)
        if engine:
            rows_model, model = read_model(Path(args.model))  # a model run still going has more sizes now
        row: dict[str, Any] = {"size": args.size, "engine": engine or "shared", "stage": stage}
        if queries:
            row["queries_asked"] = queries
        entry = model.get(f"{engine}/{stage}") if engine else None
        if entry is not None and postings is not None:
            row["predicted_peak_rss_bytes"] = predicted_bytes(entry, postings)
        failed = [r for r in rows
                  if r["status"] != "ok" and r["engine"] in ("shared", engine) and r["stage"] != "search"]
        if result.is_file():
            row.update(status="ok", **json.loads(result.read_text()))
        elif skipped:
            row["status"] = "not run yet"
        elif failed:
            row["status"] = f"not run: {failed[0]['engine']} {failed[0]['stage']} did not run to the end"
        elif engine and (why := memory_refusal(model, rows_model, engine, stage, args.size, postings=postings)):
            print(why, flush=True)
            row["status"] = "refused: " + why
        else:
            row.update(run_stage(work, stage, args.size, engine, queries or QUERIES))
        if stage == "generate":
            postings = row.get("postings")
        row.setdefault("postings", postings)
        rows.append(row)
        print(json.dumps(row), flush=True)
        doc = {"machine": machine(), "size": args.size, "budget_bytes": BUDGET_BYTES, "disk": json.loads(
            state.read_text()), "rows": rows, "seconds": round(time.perf_counter() - t0, 1)}
        out.mkdir(parents=True, exist_ok=True)  # written after every stage: a finished part can be committed
        (out / "full.json").write_text(json.dumps(doc, indent=2) + "\n")
        (out / "summary.md").write_text(summary_md(doc))
        write_manifest(out, "study", {"study": "msmarco-scale-8.8m", "keep": KEEP, "sigma": SIGMA, "seed": SEED,
                                      "size": args.size, "engines": args.engines, "k": K, "queries": QUERIES,
                                      "all_queries_engine": ALL_QUERIES_ENGINE},
                       outputs=["full.json", "summary.md"], timings={"seconds": doc["seconds"]})
    if not args.keep_work and not args.only and len(args.stages) == 3:
        for name in [f"collection-{args.size}", *(f"index-{e}-{args.size}" for e in args.engines)]:
            shutil.rmtree(work / name, ignore_errors=True)
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
