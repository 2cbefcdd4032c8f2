"""D5: every engine at 8,841,823 documents (studies/msmarco_scale/README.md, "D5"; issue 60). A plan first (each
engine's stages predicted by D4's models: peak RSS, wall seconds, disk), then the collection drawn in seeded shards
that can be regenerated one by one and are checked by digest, then per engine the stages the plan lets run: at
8.8M when the low end of each stage's predicted peak is under 16 GiB and its predicted wall time under 2.5 hours,
else at the largest of 4M and 2M that fits. Each stage runs in a fresh process; a finished stage is never run again
(its result file is read), so any part can be interrupted and run again.

    python studies/msmarco_scale/full_engines.py plan --out results/studies/msmarco-scale-8.8m-engines
    python studies/msmarco_scale/full_engines.py collection --out results/studies/msmarco-scale-8.8m-engines
    python studies/msmarco_scale/full_engines.py run --out results/studies/msmarco-scale-8.8m-engines \\
        [--steps index-anserini-8841823 ...]
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
from check import KEEP, SEED, SIGMA  # noqa: E402
from generator import draw  # noqa: E402
from grid import (  # noqa: E402
    CHECK_SIZE,
    FIT_SIZES,
    QUERIES,
    TUNE,
    WARMUP,
    digest,
    latency,
    open_searcher,
    queries,
    recall,
    stage_index,
    timed,
)
from scale import FILE_DOCS, fit_state, peak_rss_bytes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
D4 = REPO / "results" / "studies" / "msmarco-scale-engines" / "engines.json"
SIZE, FALLBACKS = 8_841_823, (4_000_000, 2_000_000)
BUDGET_BYTES, TIME_LIMIT_S = 16 * 2**30, 2.5 * 3600
ALL_QUERIES = 6_980                     # MS MARCO dev (small) queries with a term; k = 10 for PISA and Anserini
KS = (10, 1000)
ENGINES = ("pisa", "anserini", "bmp", "seismic")
#: D4's search stage each engine's search model is fitted on (256-term queries, k = 10 and 1,000, hits kept: the
#: stage D5's searches repeat)
MODEL_STAGE = {"pisa": "search-pisa-exact-q256", "anserini": "search-anserini-exact-q256",
               "bmp": "search-bmp-safe-q256", "seismic": "search-seismic-default-q256"}
#: settings per engine; Seismic's "tuned" is the setting D4's rule chose at 2M for 256-term queries
SETTINGS: dict[str, tuple[str, ...]] = {"pisa": ("exact",), "anserini": ("exact",), "bmp": ("safe", "fast"),
                                        "seismic": ("default", "tuned")}
KNOBS = {"safe": {"alpha": 1.0, "beta": 1.0}, "fast": {"alpha": 0.8, "beta": 1.0}, "default": {}, "exact": {}}
REFERENCE = "pisa"                      # exact: every recall is measured against its top k at the same size


# -- the plan -------------------------------------------------------------------------------------------------------
def fit_line(points: dict[int, float], postings: dict[int, float], check: int) -> dict[str, float]:
    """value = fixed + per posting x postings, least squares over D4's fit sizes; the error at its check size,
    (measured - predicted) / measured (0 when the check size was not measured)."""
    x = np.array([postings[n] for n in FIT_SIZES], dtype=np.float64)
    y = np.array([points[n] for n in FIT_SIZES], dtype=np.float64)
    slope, fixed = np.polyfit(x, y, 1)
    error = 0.0
    if check in points:
        error = float((points[check] - (fixed + slope * postings[check])) / points[check])
    return {"fixed": float(fixed), "per_posting": float(slope), "error": error}


def models(d4: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """Per engine and stage (index, search), the peak-RSS (bytes) and wall-seconds models from D4's stages."""
    stages = d4["stages"]
    postings = {int(k.split("/")[0]): v["postings"] for k, v in stages.items() if k.endswith("/generate")}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for engine in ENGINES:
        for kind, stage in (("index", f"index-{engine}"), ("search", MODEL_STAGE[engine])):
            got = {n: stages[f"{n}/{stage}"] for n in postings if stages.get(f"{n}/{stage}", {}).get("status") == "ok"}
            out[f"{engine}/{kind}"] = {
                "peak_rss_bytes": fit_line({n: s["peak_rss_bytes"] for n, s in got.items()}, postings, CHECK_SIZE),
                "seconds": fit_line({n: s["seconds"] for n, s in got.items()}, postings, CHECK_SIZE)}
    return out


def predict(model: dict[str, float], postings: float) -> float:
    return model["fixed"] + model["per_posting"] * postings


def plan(d4: dict[str, Any]) -> dict[str, Any]:
    """Every engine's stages predicted at 8.8M, 4M and 2M; the size each engine runs at (the largest whose stages all
    pass the rule: low end of the predicted peak, predicted / (1 + |error|), under 16 GiB and predicted seconds under
    2.5 hours; PISA, the reference, at every size another engine runs at and at 8.8M); the disk each size needs."""
    fitted = models(d4)
    gen = d4["stages"][f"{CHECK_SIZE}/generate"]
    per_doc = gen["postings"] / CHECK_SIZE
    rows: list[dict[str, Any]] = []
    runs_at: dict[str, list[int]] = {}
    for engine in ENGINES:
        for n in (SIZE, *FALLBACKS):
            ok = True
            for kind in ("index", "search"):
                m = fitted[f"{engine}/{kind}"]
                peak = predict(m["peak_rss_bytes"], per_doc * n)
                low = peak / (1 + abs(m["peak_rss_bytes"]["error"]))
                seconds = predict(m["seconds"], per_doc * n)
                stage = kind
                if kind == "search" and engine in ("pisa", "anserini") and n == SIZE:
                    seconds *= 1 + ALL_QUERIES / QUERIES     # and the 6,980 queries at k = 10 (an upper estimate)
                    stage = "search + 6,980 queries"
                why = []
                if low >= BUDGET_BYTES:
                    why.append(f"low end of the predicted peak {low / 2**30:.1f} GiB >= 16 GiB")
                if seconds >= TIME_LIMIT_S:
                    why.append(f"predicted {seconds / 3600:.2f} h >= 2.5 h")
                ok = ok and not why
                rows.append({"engine": engine, "stage": stage, "size": n, "postings": round(per_doc * n),
                             "predicted_peak_rss_bytes": peak, "low_peak_rss_bytes": low,
                             "memory_error_at_2m": m["peak_rss_bytes"]["error"], "predicted_seconds": seconds,
                             "refused": "; ".join(why) or None})
            if ok and engine not in runs_at:
                runs_at[engine] = [n]
    others = {n for e, ns in runs_at.items() if e != REFERENCE for n in ns}
    runs_at[REFERENCE] = sorted(others | {SIZE}, reverse=True)
    disk = {}
    for n in (SIZE, *FALLBACKS):
        postings = per_doc * n
        need = {"collection": 0.0 if n != SIZE else gen["collection_bytes"] / gen["postings"] * postings}
        for engine in ENGINES:
            if n in runs_at.get(engine, []):
                idx = d4["stages"][f"{CHECK_SIZE}/index-{engine}"]
                need[f"index-{engine}"] = idx["index_bytes"] / gen["postings"] * postings
        disk[str(n)] = need
    return {"budget_bytes": BUDGET_BYTES, "time_limit_s": TIME_LIMIT_S, "postings_per_document": per_doc,
            "models": fitted, "rows": rows, "runs_at": runs_at, "disk_bytes": disk,
            "seismic_tuned": d4["tuning"][f"{CHECK_SIZE}/q256"]["chosen"], "steps": steps(runs_at)}


def steps(runs_at: dict[str, list[int]]) -> list[str]:
    """The stages in the order they run: Anserini's 8.8M build first (it cannot resume: alone, at a session's
    start), then per size PISA's index and searches (the reference) before the other engines'."""
    out = []
    if SIZE in runs_at.get("anserini", []):
        out.append(f"index-anserini-{SIZE}")
    for n in sorted({n for ns in runs_at.values() for n in ns}, reverse=True):
        for engine in ENGINES:
            if n not in runs_at.get(engine, []):
                continue
            if f"index-{engine}-{n}" not in out:
                out.append(f"index-{engine}-{n}")
            out += [f"search-{engine}-{s}-{n}" for s in SETTINGS[engine]]
            if engine in ("pisa", "anserini") and n == SIZE:
                out.append(f"searchall-{engine}-exact-{n}")
    return out


def plan_md(p: dict[str, Any]) -> str:
    lines = ["# D5's plan: each engine's stages predicted by D4's models (before any run)", "",
             f"Rule: a stage runs at a size when the low end of its predicted peak RSS (predicted / (1 + |error at "
             f"2M|)) is under {p['budget_bytes'] / 2**30:.0f} GiB and its predicted wall time under "
             f"{p['time_limit_s'] / 3600:.1f} h; an engine runs at the largest of 8.8M, 4M and 2M where both its "
             "stages pass. Models: D4's (fixed + per posting x postings over 10k, 100k, 1M; error at 2M).", "",
             "| engine | stage | documents | predicted peak (GiB) | low end (GiB) | error at 2M | predicted wall (h) | "
             "verdict |", "|---|---|---|---|---|---|---|---|"]
    for r in p["rows"]:
        verdict = "refused: " + r["refused"] if r["refused"] else "fits"
        lines.append(f"| {r['engine']} | {r['stage']} | {r['size']:,} | {r['predicted_peak_rss_bytes'] / 2**30:.2f} | "
                     f"{r['low_peak_rss_bytes'] / 2**30:.2f} | {100 * r['memory_error_at_2m']:+.1f}% | "
                     f"{r['predicted_seconds'] / 3600:.2f} | {verdict} |")
    lines += ["", "Runs at: " + "; ".join(f"{e} {', '.join(f'{n:,}' for n in ns)}" for e, ns in p["runs_at"].items())
              + "; " + ", ".join(e for e in ENGINES if e not in p["runs_at"]) + " at none (D4's 2M rows are its "
              "largest size that ran).", "", "Disk (GiB; a 4M or 2M collection is hard links to the 8.8M shards): "
              + "; ".join(f"{int(n):,}: " + ", ".join(f"{k} {v / 2**30:.1f}" for k, v in need.items())
                          for n, need in p["disk_bytes"].items()) + ".", "",
              "Order: " + ", ".join(p["steps"]) + "."]
    return "\n".join(lines) + "\n"


# -- the collection: seeded shards ----------------------------------------------------------------------------------
#: what the generator and the searches read, made by splade-tiny on the machine that made them (fp32 encodings differ
#: in their last bits between CPU kinds, and so would the fitted generator and every shard): committed, so that a
#: lost work/ or another machine draws the same collection and asks the same queries
INPUTS = ("real.json", "queries.json", "grid-queries-q256.json")


def inputs(work: Path, out: Path) -> str | None:
    """Each input in ``work`` made from the committed copy (``out/inputs/<name>.xz``) when missing, the committed copy
    made from ``work`` the first time; None when they agree, else what differs, in one line."""
    (out / "inputs").mkdir(parents=True, exist_ok=True)
    for name in INPUTS:
        here, kept = work / name, out / "inputs" / f"{name}.xz"
        if not kept.is_file():
            if not here.is_file():
                return f"{here}: missing, and no committed copy in {kept.parent}: run D4's grid.py first"
            with lzma.open(kept, "wb", preset=9) as f:
                f.write(here.read_bytes())
        with lzma.open(kept, "rb") as f:
            data = f.read()
        if not here.is_file():
            here.write_bytes(data)
        elif here.read_bytes() != data:
            return (f"{here} differs from the committed {kept} (made on another machine?): move it away to use the "
                    "committed one")
    return None


def shard_count() -> int:
    return -(-SIZE // FILE_DOCS)


def stage_shard(work: Path, j: int, rng_state: dict[str, Any]) -> dict[str, Any]:
    """Shard ``j`` of the 8.8M collection (documents j x 500,000 onwards) drawn from the generator's random state at
    its first document: the same lines ``scale.py``'s generate stage writes into its file j."""
    fitted = fit_state(work)
    rng = np.random.default_rng()
    rng.bit_generator.state = rng_state
    first = j * FILE_DOCS
    count = min(FILE_DOCS, SIZE - first)
    folder = work / f"collection-{SIZE}"
    folder.mkdir(parents=True, exist_ok=True)
    path, part = folder / f"docs-{j:05d}.jsonl", folder / f"docs-{j:05d}.jsonl.part"
    sha, postings = hashlib.sha256(), 0
    with open(part, "w", encoding="utf-8") as f:
        for docid, vector in draw(fitted, count, keep=KEEP, sigma=SIGMA, seed=rng):
            line = json.dumps({"id": f"g{first + int(docid[1:])}", "contents": "", "vector": vector},
                              ensure_ascii=False) + "\n"
            f.write(line)
            sha.update(line.encode("utf-8"))
            postings += len(vector)
    os.replace(part, path)
    return {"shard": j, "first": first, "documents": count, "postings": postings, "bytes": path.stat().st_size,
            "sha256": sha.hexdigest(), "next_state": rng.bit_generator.state}


def file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            sha.update(block)
    return sha.hexdigest()


def link_prefix(work: Path, n: int) -> Path:
    """``collection-{n}`` for n < 8.8M: hard links to the first n / 500,000 shards (a smaller collection is a prefix
    of a larger one)."""
    if n % FILE_DOCS:
        raise SystemExit(f"{n:,} documents is not a whole number of {FILE_DOCS:,}-document shards")
    folder = work / f"collection-{n}"
    folder.mkdir(parents=True, exist_ok=True)
    for j in range(n // FILE_DOCS):
        name = f"docs-{j:05d}.jsonl"
        if not (folder / name).exists():
            os.link(work / f"collection-{SIZE}" / name, folder / name)
    return folder


# -- stages (each in its own process) -------------------------------------------------------------------------------
def hits_file(stage: str) -> str:
    """The file a search stage keeps its hits in: ``search-pisa-exact-4000000`` -> ``hits-pisa-exact-4000000.json.xz``,
    ``searchall-...`` -> ``hits-all-....json.xz``."""
    kind, rest = stage.split("-", 1)
    return f"hits-{'all-' if kind == 'searchall' else ''}{rest}.json.xz"


def stage_search(work: Path, n: int, engine: str, setting: str, everything: bool, tuned: dict[str, Any]) -> dict:
    """One engine setting: the 1,000 measured queries at k = 10 and 1,000 (``everything``: all 6,980 at k = 10),
    the latency, and the hits kept for digests and recall."""
    if everything:
        items = list(json.loads((work / "queries.json").read_text()).items())
        items, ks = items[:WARMUP] + items, (10,)
    else:
        items, ks = queries(work, "q256"), KS
    knobs = tuned if setting == "tuned" else KNOBS[setting]
    out: dict[str, Any] = {"knobs": knobs}
    kept: dict[str, Any] = {}
    with open_searcher(work, n, engine, knobs) as searcher:
        for k in ks:
            hits, ms = timed(searcher, items, k)
            out[f"k{k}"] = {"latency_ms": latency(ms), "queries": len(ms)}
            kept[f"k{k}"] = {"hits": hits, "ms": ms}
    stage = f"{'searchall' if everything else 'search'}-{engine}-{setting}-{n}"
    with lzma.open(work / "full-engines" / hits_file(stage), "wt") as f:
        json.dump(kept, f)
    return out


def child(args: argparse.Namespace) -> int:
    work = Path(args.work)
    load = os.getloadavg()[0]
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    kind, engine, *rest = args.child.split("-")
    if kind == "shard":
        out = stage_shard(work, int(engine), json.loads(Path(args.state).read_text()))
    elif kind == "index":
        n = int(rest[0])
        if n != SIZE:
            link_prefix(work, n)
        out = stage_index(work, n, engine)
    else:
        setting, n = rest[0], int(rest[1])
        tuned = json.loads(Path(args.state).read_text()) if args.state else {}
        out = stage_search(work, n, engine, setting, kind == "searchall", tuned)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    out.update(seconds=time.perf_counter() - t0, cpu_seconds=(r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
               peak_rss_bytes=peak_rss_bytes(), load_at_start=load, load_at_end=os.getloadavg()[0])
    Path(args.result).write_text(json.dumps(out))
    return 0


def run_child(work: Path, stage: str, result: Path, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run ``stage`` in a fresh process (one search thread, two build threads); its result, or why it failed."""
    cmd = [sys.executable, __file__, "child", "--child", stage, "--work", str(work), "--result", str(result)]
    if state is not None:
        state_file = result.with_suffix(".state.json")
        state_file.write_text(json.dumps(state))
        cmd += ["--state", str(state_file)]
    env = {**os.environ, "RAYON_NUM_THREADS": "1" if stage.startswith("search") else "2"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else str(done.returncode)
        return {"status": f"failed: {tail}"}
    return {"status": "ok", **json.loads(result.read_text())}


def collection(work: Path, out: Path, jobs: int = 1) -> int:
    """Draw (or check) every shard: a shard in ``collection.json`` whose file is missing is drawn again from its
    recorded random state (``jobs`` at a time) and must give the recorded digest; a new shard starts from the state
    the previous one ended at. Returns 0 when all shards are there and match."""
    from concurrent.futures import ThreadPoolExecutor

    record = out / "collection.json"
    doc = json.loads(record.read_text()) if record.is_file() else {"size": SIZE, "shards": []}
    real_sha256 = file_sha256(work / "real.json")
    if doc.setdefault("real_sha256", real_sha256) != real_sha256:   # the encodings the generator was fitted on
        print(f"{work / 'real.json'}: not the encodings {record} was drawn from", file=sys.stderr)
        return 1
    shards = doc["shards"]
    folder = work / "full-engines"
    folder.mkdir(parents=True, exist_ok=True)

    def path(j: int) -> Path:
        return work / f"collection-{SIZE}" / f"docs-{j:05d}.jsonl"

    def again(known: dict[str, Any]) -> str | None:
        j = known["shard"]
        got = run_child(work, f"shard-{j}", folder / f"result-shard-{j}.json", known["state"])
        if got["status"] != "ok":
            return f"shard {j}: {got['status']}"
        if got["sha256"] != known["sha256"]:
            return (f"{path(j)}: drawn again it has digest {got['sha256'][:12]}, recorded {known['sha256'][:12]}; "
                    "this machine's numpy draws another collection: use the recorded machine's numpy")
        print(f"shard {j}: drawn again, digest matches", flush=True)
        return None

    missing = [s for s in shards if not (path(s["shard"]).is_file() and path(s["shard"]).stat().st_size == s["bytes"])]
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        failed = [e for e in pool.map(again, missing) if e]
    if failed:
        print("\n".join(failed), file=sys.stderr)
        return 1
    for j in range(len(shards), shard_count()):
        state = shards[j - 1]["next_state"] if j else np.random.default_rng(SEED).bit_generator.state
        got = run_child(work, f"shard-{j}", folder / f"result-shard-{j}.json", state)
        if got["status"] != "ok":
            print(f"shard {j}: {got['status']}", file=sys.stderr)
            return 1
        shards.append({**got, "state": state})
        doc.update(documents=sum(s["documents"] for s in shards), postings=sum(s["postings"] for s in shards))
        out.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(doc, indent=1) + "\n")
        print(json.dumps({k: v for k, v in got.items() if "state" not in k}), flush=True)
    return 0


# -- what ran: rows, recall, digests ------------------------------------------------------------------------------
def committed_outputs(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The committed ``d5.json`` and digests (empty before the first stage): what a lost ``work/`` leaves."""
    if not (out / "d5.json").is_file():
        return {"rows": [], "stages": {}}, {}
    with lzma.open(out / "digests.json.xz", "rt") as f:
        return json.loads((out / "d5.json").read_text()), json.load(f)


def hits_path(work: Path, out: Path, stage: str) -> Path:
    """A search stage's kept hits: in the work folder, or (the reference's, committed) under ``out/hits``."""
    here = work / "full-engines" / hits_file(stage)
    return here if here.is_file() else out / "hits" / here.name


def measure(work: Path, out: Path, stages: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per finished search stage and k (latency, the stage's seconds and memory, its index's build, recall@k
    against PISA's exact top k at the same size), and per-query digests of every top k. A stage whose hits are gone
    with a lost ``work/`` keeps its committed rows and digests."""
    rows, digests, refs = [], {}, {}
    before, before_digests = committed_outputs(out)

    def hits_of(stage: str) -> dict[str, Any] | None:
        path = hits_path(work, out, stage)
        if not path.is_file():
            return None
        with lzma.open(path, "rt") as f:
            return json.load(f)

    for stage, rec in stages.items():
        if not stage.startswith("search") or rec.get("status") != "ok":
            continue
        kind, engine, setting, size = stage.split("-")
        n = int(size)
        qset = "all" if kind == "searchall" else "q256"
        kept = hits_of(stage)
        if kept is None:     # work/ lost after the stage was committed
            rows += [r for r in before["rows"] if (r["size"], r["engine"], r["setting"], r["qset"]) ==
                     (n, engine, setting, qset)]
            digests.update({key: v for key, v in before_digests.items() if key.startswith(f"{n}/{engine}-{setting}/"
                                                                                         f"{qset}/")})
            continue
        ref_name = f"{kind}-{REFERENCE}-exact-{n}"
        if engine != REFERENCE and ref_name not in refs and stages.get(ref_name, {}).get("status") == "ok":
            refs[ref_name] = hits_of(ref_name)
        build = stages.get(f"index-{engine}-{n}", {})
        for key, got in kept.items():
            k = int(key[1:])
            hits = {q: [tuple(h) for h in v] for q, v in got["hits"].items()}
            digests[f"{n}/{engine}-{setting}/{qset}/k{k}"] = {q: digest(h, k) for q, h in hits.items()}
            row = {"size": n, "engine": engine, "setting": setting, "knobs": rec["knobs"], "qset": qset, "k": k,
                   "queries": len(got["ms"]), "latency_ms": latency(got["ms"]), "seconds": rec["seconds"],
                   "cpu_seconds": rec["cpu_seconds"], "peak_rss_bytes": rec["peak_rss_bytes"],
                   "load_at_start": rec["load_at_start"], "index_bytes": build.get("index_bytes"),
                   "index_seconds": build.get("seconds"), "index_peak_rss_bytes": build.get("peak_rss_bytes")}
            if refs.get(ref_name) is not None:
                exact = refs[ref_name][key]["hits"]
                per_query = {q: recall(hits[q], [tuple(h) for h in exact[q]], k) for q in hits}
                row[f"recall_at_{k}"] = float(np.mean([x for x in per_query.values() if x is not None]))
                if qset == "q256":   # D4 tuned Seismic on the first 500 of these queries (at 2M): the other 500
                    held = [per_query[q] for q in list(hits)[TUNE:] if per_query[q] is not None]
                    row[f"held_out_recall_at_{k}"] = float(np.mean(held)) if held else None
            rows.append(row)
    return rows, digests


def summary_md(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = ["# D5: every engine at 8,841,823 documents (real queries, generated documents)", "",
             f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_bytes', 0) / 2**30:.0f} GiB. "
             f"{QUERIES:,} MS MARCO dev queries after {WARMUP} unmeasured (all {ALL_QUERIES:,} for PISA and Anserini "
             "at k = 10), one at a time, one thread, the whole search call; recall@k against PISA's exact top k at the "
             "same size (studies/msmarco_scale/README.md, D5). The plan (predictions and refusals): plan.md.", "",
             "| documents | queries | k | engine | setting | mean / p50 / p99 (ms) | recall@k | search peak RSS (GiB) "
             "| build (s) | build peak RSS (GiB) | index on disk (GiB) | load at start |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def gib(v) -> str:
        return "" if v is None else f"{v / 2**30:.2f}"

    for r in doc["rows"]:
        lat, rec = r["latency_ms"], r.get(f"recall_at_{r['k']}")
        lines.append(f"| {r['size']:,} | {r['queries']:,} | {r['k']:,} | {r['engine']} | {r['setting']} | "
                     f"{lat['mean']:.2f} / {lat['p50']:.2f} / {lat['p99']:.2f} | "
                     f"{'' if rec is None else f'{rec:.3f}'} | {gib(r['peak_rss_bytes'])} | "
                     f"{'' if r['index_seconds'] is None else format(r['index_seconds'], ',.0f')} | "
                     f"{gib(r['index_peak_rss_bytes'])} | {gib(r['index_bytes'])} | {r['load_at_start']:.2f} |")
    refused = [r for r in doc["plan"]["rows"] if r["refused"]]
    lines += ["", "Refused before starting (the plan's rule and predictions):", ""]
    lines += [f"- {r['engine']} {r['stage']} at {r['size']:,}: {r['refused']}" for r in refused]
    lines += ["", "Stages that did not finish or have not run yet: "
              + (", ".join(f"{s} ({v['status']})" for s, v in doc["stages"].items() if v["status"] != "ok")
                 or "none") + "; not reached: " + (", ".join(s for s in doc["plan"]["steps"] if s not in doc["stages"])
                                                    or "none") + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["plan", "collection", "run", "report", "child"])
    p.add_argument("--out", default=str(REPO / "results" / "studies" / "msmarco-scale-8.8m-engines"))
    p.add_argument("--work", default=str(REPO / "work" / "msmarco-scale"),
                   help="D4's work folder (real.json, queries.json, grid-queries-q256.json)")
    p.add_argument("--steps", nargs="+", help="run these of the plan's steps only (default: all, in order)")
    p.add_argument("--jobs", type=int, default=1, help="collection: shards drawn again at once (recorded ones only)")
    p.add_argument("--child")
    p.add_argument("--result")
    p.add_argument("--state")
    args = p.parse_args(argv)
    if args.command == "child":
        return child(args)
    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.command == "plan":
        doc = plan(json.loads(D4.read_text()))
        (out / "plan.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out / "plan.md").write_text(plan_md(doc))
        print((out / "plan.md").read_text())
        return 0
    the_plan = json.loads((out / "plan.json").read_text())
    if args.command in ("collection", "run") and (why := inputs(work, out)):
        print(why, file=sys.stderr)
        return 2
    if args.command == "collection":
        return collection(work, out, args.jobs)
    folder = work / "full-engines"
    folder.mkdir(parents=True, exist_ok=True)
    stages: dict[str, dict[str, Any]] = {}
    unknown = set(args.steps or []) - set(the_plan["steps"])
    if unknown:
        p.error(f"not in the plan's steps: {', '.join(sorted(unknown))} (plan.json lists them)")
    t0 = time.perf_counter()
    before = committed_outputs(out)[0]["stages"]
    for stage in the_plan["steps"]:
        result = folder / f"result-{stage}.json"
        if result.is_file():
            stages[stage] = {"status": "ok", **json.loads(result.read_text())}
            continue
        if before.get(stage, {}).get("status") == "ok":   # committed; its result file went with a lost work/
            stages[stage] = before[stage]
            continue
        if args.command != "run" or (args.steps and stage not in args.steps):
            continue
        if any(s != "ok" for s in (v["status"] for v in stages.values())):
            stages[stage] = {"status": "not run: an earlier stage failed"}
            continue
        if stage.startswith("index") and shutil.disk_usage(work).free < 2 * 2**30:
            stages[stage] = {"status": f"not run: under 2 GiB free in {work}"}
            continue
        tuned = the_plan["seismic_tuned"] if "-tuned-" in stage else None
        stages[stage] = run_child(work, stage, result, tuned)
        print(json.dumps({"stage": stage, **stages[stage]}), flush=True)
        if stage.startswith("search") and f"-{REFERENCE}-" in stage and stages[stage]["status"] == "ok":
            (out / "hits").mkdir(exist_ok=True)   # the reference's hits are committed: recall needs them later
            shutil.copyfile(folder / hits_file(stage), out / "hits" / hits_file(stage))
        write(work, out, the_plan, stages, time.perf_counter() - t0)
    write(work, out, the_plan, stages, time.perf_counter() - t0)
    print((out / "summary.md").read_text())
    return 0


def write(work: Path, out: Path, the_plan: dict[str, Any], stages: dict[str, dict[str, Any]], seconds: float) -> None:
    """The outputs, rewritten after every stage so that a finished part can be committed."""
    from lsr_eval.manifest import machine, write_manifest

    rows, digests = measure(work, out, stages)
    doc = {"machine": machine(), "size": SIZE, "plan": the_plan, "rows": rows, "stages": stages,
           "seconds": round(seconds, 1)}
    (out / "d5.json").write_text(json.dumps(doc, indent=1) + "\n")
    with lzma.open(out / "digests.json.xz", "wt") as f:
        json.dump(digests, f, sort_keys=True)
    (out / "summary.md").write_text(summary_md(doc))
    write_manifest(out, "study", {"study": "msmarco-scale-8.8m-engines", "size": SIZE, "keep": KEEP,
                                  "sigma": SIGMA, "seed": SEED, "queries": QUERIES, "all_queries": ALL_QUERIES,
                                  "k": list(KS), "settings": {e: list(s) for e, s in SETTINGS.items()},
                                  "knobs": KNOBS, "seismic_tuned": the_plan["seismic_tuned"]},
                   outputs=["plan.json", "plan.md", "collection.json", "d5.json", "digests.json.xz", "summary.md",
                            *(f"inputs/{name}.xz" for name in INPUTS),
                            *sorted(f"hits/{p.name}" for p in (out / "hits").glob("*.xz"))],
                   timings={"seconds": round(seconds, 1)})


if __name__ == "__main__":
    sys.exit(main())
