"""The generator check at 5,000 MS MARCO passages (studies/msmarco_scale/README.md, pre-registered): real splade-tiny
encodings against generated collections, engine by engine, with the real MS MARCO dev queries.

    python studies/msmarco_scale/check.py --out results/studies/msmarco-scale-generator
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generator import draw, fit  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
KEEP, SIGMA, SEED, N = 0.8, 0.25, 0, 5000
BUCKETS = ((1, 10), (11, 100), (101, 1000), (1001, 10000))
ENGINES = ("pisa", "anserini")
LATENCY_QUERIES, WARMUP, ROUNDS, K = 1000, 20, 2, 1000


def read_tsv_queries(path: Path):
    from lsr_eval.data.types import Query

    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, text = line.partition("\t")
        if qid:
            out.append(Query(qid, text))
    return out


def judged(folder: Path) -> set[str]:
    docs = set()
    for path in (folder / "qrels").glob("*.tsv"):
        for line in path.read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) == 3 and int(parts[2]) > 0:
                docs.add(parts[1])
    return docs


def write_collection(vectors: Mapping[str, Mapping[str, int]], folder: Path) -> Path:
    from lsr_eval.anserini.collections import write_lines

    write_lines(({"id": docid, "contents": "", "vector": dict(vector)} for docid, vector in vectors.items()), folder)
    return folder


def quantiles(values) -> dict[str, float]:
    a = np.asarray(list(values), dtype=np.float64)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99))}


def collection_stats(vectors: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    df: dict[str, int] = {}
    for v in vectors.values():
        for t in v:
            df[t] = df.get(t, 0) + 1
    return {"documents": len(vectors), "distinct_terms": len(df), "postings": sum(df.values()),
            "df_by_rank": sorted(df.values(), reverse=True), "df": df,
            "lengths": quantiles(len(v) for v in vectors.values()),
            "impacts": quantiles(w for v in vectors.values() for w in v.values())}


def rank_errors(real: list[int], gen: list[int]) -> dict[str, Any]:
    out = {}
    for lo, hi in BUCKETS:
        n = min(hi, len(real), len(gen))
        if n < lo:
            out[f"{lo}-{hi}"] = None
            continue
        r = np.log2(np.asarray(gen[lo - 1:n], dtype=np.float64) / np.asarray(real[lo - 1:n], dtype=np.float64))
        out[f"{lo}-{hi}"] = {"median_abs_log2": float(np.median(np.abs(r))), "max_abs_log2": float(np.abs(r).max()),
                             "ranks": n - lo + 1}
    return out


def relative(gen: float, real: float) -> float:
    return (gen - real) / real if real else math.nan


def spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def measure(name: str, vectors, queries: dict[str, dict[str, int]], work: Path) -> dict[str, Any]:
    """Index with each engine, then the per-query postings in lists, top-k thresholds and search latency."""
    from lsr_eval.engines.registry import get_engine

    stats = collection_stats(vectors)
    df = stats.pop("df")
    coll = write_collection(vectors, work / name / "collection")
    in_lists = {q: sum(df.get(t, 0) for t in w) for q, w in queries.items()}
    out: dict[str, Any] = {**stats, "postings_in_lists": in_lists, "engines": {}}
    measured = list(queries.items())[:LATENCY_QUERIES + WARMUP]
    for engine_name in ENGINES:
        engine = get_engine(engine_name)
        index = work / name / f"index-{engine_name}"
        t0 = time.perf_counter()
        built = engine.build(coll, index, threads=1)
        build_s = time.perf_counter() - t0
        with engine.open(index) as searcher:
            run, _ = searcher.batch_search(queries, k=K, threads=2)
            best = [math.inf] * len(measured)
            for _ in range(ROUNDS):
                for i, (qid, w) in enumerate(measured):
                    t = time.perf_counter()
                    searcher.search(w, K, qid=qid)
                    best[i] = min(best[i], (time.perf_counter() - t) * 1e3)
        scores = {q: list(hits.values()) for q, hits in run.items()}
        out["engines"][engine_name] = {
            "documents_indexed": built.documents_indexed, "build_seconds": build_s,
            "search_ms": quantiles(best[WARMUP:]),
            "threshold": {str(k): {q: s[k - 1] for q, s in scores.items() if len(s) >= k} for k in (10, 1000)}}
    return out


def compare(real: dict[str, Any], gen: dict[str, Any]) -> dict[str, Any]:
    qs = sorted(real["postings_in_lists"])
    r_in = np.array([real["postings_in_lists"][q] for q in qs], dtype=np.float64)
    g_in = np.array([gen["postings_in_lists"][q] for q in qs], dtype=np.float64)
    out: dict[str, Any] = {
        "postings_by_rank": rank_errors(real["df_by_rank"], gen["df_by_rank"]),
        "distinct_terms": relative(gen["distinct_terms"], real["distinct_terms"]),
        "postings": relative(gen["postings"], real["postings"]),
        "lengths": {k: relative(gen["lengths"][k], real["lengths"][k]) for k in real["lengths"]},
        "impacts": {k: relative(gen["impacts"][k], real["impacts"][k]) for k in real["impacts"]},
        "postings_in_lists": {"mean": relative(float(g_in.mean()), float(r_in.mean())),
                              "spearman": spearman(r_in, g_in)},
        "engines": {}}
    for e in ENGINES:
        re, ge = real["engines"][e], gen["engines"][e]
        thresholds = {}
        for k in ("10", "1000"):
            common = sorted(set(re["threshold"][k]) & set(ge["threshold"][k]))
            rel = np.array([relative(ge["threshold"][k][q], re["threshold"][k][q]) for q in common])
            thresholds[k] = {"queries": len(common), "median_abs_relative": float(np.median(np.abs(rel))),
                             "mean_relative": float(rel.mean())}
        out["engines"][e] = {"search_mean_ratio": ge["search_ms"]["mean"] / re["search_ms"]["mean"],
                             "search_p50_ratio": ge["search_ms"]["p50"] / re["search_ms"]["p50"],
                             "thresholds": thresholds}
    return out


def summary_md(check: dict[str, Any]) -> str:
    m = check["machine"]
    lines = [f"# Generator check at {N:,} MS MARCO passages (splade-tiny, {check['queries']:,} dev queries)", "",
             f"Machine: {m.get('cpu')}, {m.get('cores')} cores, flags {', '.join(m.get('cpu_flags', []))}. "
             f"Pre-registration: studies/msmarco_scale/README.md (keep {KEEP}, sigma {SIGMA}, seed {SEED}).", "",
             f"Fit sets: all {check['fit']['all']:,} passages; the {check['fit']['distractors']:,} passages no DL19 "
             f"query judges ({check['fit']['judged']:,} are judged relevant).", "",
             "| statistic | generated (fit: all) | generated (fit: distractors) |", "|---|---|---|"]

    def pct(x):
        return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.1f}%"

    rows = []
    for b in (f"{lo}-{hi}" for lo, hi in BUCKETS):
        def cell(c, b=b):
            e = c["postings_by_rank"][b]
            return "n/a" if e is None else f"{e['median_abs_log2']:.2f} / {e['max_abs_log2']:.2f}"
        rows.append((f"postings by rank {b}: median / max abs log2 ratio", cell))
    rows += [("distinct terms", lambda c: pct(c["distinct_terms"])), ("postings", lambda c: pct(c["postings"]))]
    for k in ("mean", "p50", "p99"):
        rows.append((f"document length {k}", lambda c, k=k: pct(c["lengths"][k])))
    for k in ("mean", "p50", "p99"):
        rows.append((f"impact {k}", lambda c, k=k: pct(c["impacts"][k])))
    rows.append(("postings in the query's lists, mean", lambda c: pct(c["postings_in_lists"]["mean"])))
    rows.append(("postings in the query's lists, Spearman over queries",
                 lambda c: f"{c['postings_in_lists']['spearman']:.3f}"))
    for e in ENGINES:
        rows.append((f"{e} search latency, mean generated / real",
                     lambda c, e=e: f"{c['engines'][e]['search_mean_ratio']:.2f}"))
        for k in ("10", "1000"):
            rows.append((f"{e} k-th score, k = {k}: median abs / mean relative error",
                         lambda c, e=e, k=k: f"{100 * c['engines'][e]['thresholds'][k]['median_abs_relative']:.1f}% / "
                                             f"{pct(c['engines'][e]['thresholds'][k]['mean_relative'])}"))
    for label, fn in rows:
        lines.append(f"| {label} | {fn(check['errors']['all'])} | {fn(check['errors']['distractors'])} |")
    real = check["collections"]["real"]
    lines += ["", f"Real collection: {real['documents']:,} documents, {real['distinct_terms']:,} distinct terms, "
              f"{real['postings']:,} postings; search mean "
              + ", ".join(f"{e} {real['engines'][e]['search_ms']['mean']:.3f} ms" for e in ENGINES)
              + f" ({LATENCY_QUERIES} queries, fastest of {ROUNDS} rounds, k = {K}, one thread).",
              "Neither engine counts the postings it scores: 'postings in the query's lists' is their upper bound."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import lsr_eval
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.manifest import machine, write_manifest

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"), help="the shared data folder")
    p.add_argument("--out", required=True)
    p.add_argument("--work", default=str(REPO / "work" / "msmarco-scale"))
    args = p.parse_args(argv)
    data, out, work = Path(args.data), Path(args.out), Path(args.work)
    t0 = time.perf_counter()
    dataset = lsr_eval.load_dataset(str(data / "beir" / "msmarco-dl19-5k"), split="test")
    splade = lsr_eval.Splade("splade-tiny", encode=lsr_eval.EncodeOptions(doc_top_k=1024, query_top_k=256),
                             work=work / "cache")
    real = query_weight_maps(splade.encode(dataset))
    queries = read_tsv_queries(data / "msmarco-passage" / "queries.dev.small.tsv")
    qmaps = {q: w for q, w in query_weight_maps(splade.encode_queries(queries)).items() if w}
    judged_docs = judged(data / "beir" / "msmarco-dl19-5k") & set(real)
    distractors = {d: v for d, v in real.items() if d not in judged_docs}
    collections = {"real": real,
                   "gen-all": dict(draw(fit(list(real.values())), N, keep=KEEP, sigma=SIGMA, seed=SEED)),
                   "gen-distractors": dict(draw(fit(list(distractors.values())), N, keep=KEEP, sigma=SIGMA,
                                                seed=SEED))}
    measured = {name: measure(name, vectors, qmaps, work) for name, vectors in collections.items()}
    check = {"queries": len(qmaps), "queries_read": len(queries), "machine": machine(),
             "fit": {"all": len(real), "distractors": len(distractors), "judged": len(judged_docs)},
             "errors": {"all": compare(measured["real"], measured["gen-all"]),
                        "distractors": compare(measured["real"], measured["gen-distractors"])},
             "collections": {n: {k: v for k, v in m.items() if k not in ("df_by_rank", "postings_in_lists")}
                             | {"engines": {e: {k: v for k, v in x.items() if k != "threshold"}
                                            for e, x in m["engines"].items()}}
                             for n, m in measured.items()},
             "seconds": round(time.perf_counter() - t0, 1)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "check.json").write_text(json.dumps(check, indent=2) + "\n")
    (out / "summary.md").write_text(summary_md(check))
    write_manifest(out, "study", {"study": "msmarco-scale-generator", "keep": KEEP, "sigma": SIGMA, "seed": SEED,
                                  "documents": N, "engines": list(ENGINES), "k": K},
                   outputs=["check.json", "summary.md"], timings={"seconds": check["seconds"]})
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
