"""PISA timing side by side (studies/pisa_timing/README.md): our old harness, PISA's queries-tool protocol through the
binding, the same protocol over the whole search call, an empty query, and PISA's own ``queries`` tool if built, on
SciFact and on the scale study's 1M generated collection.

    python studies/pisa_timing/timing.py --out results/studies/pisa-timing [--pisa-bin DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval importable

from lsr_eval.efficiency.latency import LatencySummary  # noqa: E402
from lsr_eval.efficiency.passes import engine_calls, timed_passes  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
#: The paper's index settings (pipelines/benchmarks/paper-efficient-splade.yaml) and protocol.
ENGINE = {"index_encoding": "block_simdbp", "query_algorithm": "block_max_wand", "block_size": 40}
K, PASSES, ROUNDS = 1000, 2, 2
SCALE_DOCS, SCALE_QUERIES = 1_000_000, 1000
METHODS = ("old", "protocol", "protocol_whole_call", "empty_query", "pisa_tool")
#: The PISA commit the tool was built from (its HEAD in the mirror; issue 56: naver used the weight-queries branch,
#: whose queries tool times the same way: an untimed pass, then pooled timed passes).
PISA_COMMIT = "69f2a83b"


# -- the collections ------------------------------------------------------------------------------------------------
def scifact(data: Path, work: Path) -> tuple[Path, dict[str, dict[str, int]]]:
    """SciFact's splade-tiny PISA index (cached in ``work``) and its test queries' weight maps."""
    import lsr_eval
    from lsr_eval.export.queries import query_weight_maps

    splade = lsr_eval.Splade("splade-tiny", encode=lsr_eval.EncodeOptions(doc_top_k=1024, query_top_k=256),
                             work=work / "cache")
    dataset = lsr_eval.load_dataset(str(data / "beir" / "scifact"), split="test")
    out = work / "scifact-index"
    if not (out / "index" / "lsr_eval_engine.json").is_file():
        lsr_eval.Index.build(splade.encode(dataset), engine="pisa", out=out, **ENGINE).close()
    queries = {q: w for q, w in query_weight_maps(splade.encode_queries(dataset.queries())).items() if w}
    return out / "index", queries


def generated(scale_work: Path) -> tuple[Path, dict[str, dict[str, int]]]:
    """The scale study's 1M PISA index and the first 1,000 dev queries (its ``queries.json``): both made by
    ``studies/msmarco_scale/scale.py``'s stages in ``scale_work``."""
    index = scale_work / f"index-pisa-{SCALE_DOCS}"
    if not (index / "lsr_eval_engine.json").is_file():
        raise SystemExit(f"{index} is missing: run scale.py's generate and index stages (--size {SCALE_DOCS}, "
                         "--engine pisa) with --work {scale_work} first")
    queries = json.loads((scale_work / "queries.json").read_text())
    return index, dict(list(queries.items())[:SCALE_QUERIES])


# -- the methods ----------------------------------------------------------------------------------------------------
def old(searcher, maps: Sequence[dict[str, int]]) -> tuple[list[float], list[int]]:
    """The harness before: each query's whole search call, ``ROUNDS`` rounds, the first cold, its faster time."""
    best: list[float] = []
    hits: list[int] = []
    for _ in range(ROUNDS):
        ms = []
        hits = []
        for w in maps:
            t0 = time.perf_counter()
            found = searcher.search(w, K)
            ms.append((time.perf_counter() - t0) * 1e3)
            hits.append(len(found))
        best = ms if not best else [min(a, b) for a, b in zip(best, ms)]
    return best, hits


def tied_at_cut(searcher, maps: Sequence[dict[str, int]]) -> int:
    """Queries whose top k + 1 ties at the cut (ranks k and k + 1 equal): those the search call re-queries at 2k."""
    n = 0
    for w in maps:
        scores, docids = searcher._retrieve([searcher._query(w)], K + 1, 1)[0]
        n += int(len(docids) > K and scores[K] == scores[K - 1])
    return n


def summary(ms: Sequence[float]) -> dict[str, Any]:
    return LatencySummary.from_ms(ms).to_dict()


# -- PISA's own tool ------------------------------------------------------------------------------------------------
def tool(pisa_bin: Path | None, index: Path, searcher, maps: Sequence[dict[str, int]], work: Path) -> dict[str, Any]:
    """PISA's ``queries`` over the same postings and queries (README, method 5), or why it could not run: the
    binding's own compressed index and block-max data (the tool reads them as they are), each query a line of term
    ids, a term repeated its weight times as the binding passes it (``--weighted`` merges the repeats into the
    weight), ``--runs 2``; its pooled statistics (aggregation ``none``) and ours over its per-run times."""
    if pisa_bin is None:
        return {"status": "not built", "why": "no --pisa-bin given"}
    binary = pisa_bin / "queries"
    if not binary.is_file():
        return {"status": "not built", "why": f"{binary} does not exist"}
    names = subprocess.run([str(pisa_bin / "lexicon"), "print", str(index / "fwd.termlex")], check=True,
                           capture_output=True, text=True).stdout.split("\n")
    ids = {t: i for i, t in enumerate(names)}
    lines = []
    for i, w in enumerate(maps):   # q<i>: a query id without the ':' that ends PISA's id
        terms = [str(ids[t]) for t, v in searcher._query(w).items() if t in ids for _ in range(int(v))]
        lines.append(f"q{i}:{' '.join(terms)}")
    work.mkdir(parents=True, exist_ok=True)
    queries, per_run = work / f"{index.parent.name}-queries.txt", work / f"{index.parent.name}-times.tsv"
    queries.write_text("\n".join(lines) + "\n")
    block = searcher.scoring["block_size"]
    cmd = [str(binary), "-e", ENGINE["index_encoding"], "-i", str(index / f"quantized.q0.bmw.{block}.block_simdbp"),
           "-w", str(index / f"quantized.q0.bmw.{block}"), "-s", "quantized", "-k", str(K), "-a",
           ENGINE["query_algorithm"], "-q", str(queries), "--weighted", "--runs", str(PASSES), "-o", str(per_run)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return {"status": "failed", "why": done.stderr.strip().splitlines()[-1:], "command": cmd}
    printed, _ = json.JSONDecoder().raw_decode(done.stdout.strip())   # one JSON object per algorithm
    pooled = next(t for t in printed["times"] if t["query_aggregation"] == "none")
    us = [float(row.split("\t")[3]) for row in per_run.read_text().splitlines() if row.strip()
          and re.fullmatch(r"\d+(\.\d+)?", row.split("\t")[-1])]
    ours = summary([u / 1e3 for u in us])
    return {"status": "ok", "pisa_commit": PISA_COMMIT, "command": [Path(c).name if "/" in c else c for c in cmd],
            "printed_us": pooled, "runs": printed.get("runs"), "samples": len(us),
            # our statistics over its per-run times, to compare with the other methods' (ms)
            **{k: v for k, v in ours.items()}}


# -- one collection -------------------------------------------------------------------------------------------------
def measure(name: str, index: Path, queries: dict[str, dict[str, int]], pisa_bin: Path | None,
            work: Path) -> dict[str, Any]:
    from lsr_eval.engines.registry import get_engine

    maps = list(queries.values())
    out: dict[str, Any] = {"collection": name, "index": str(index), "queries": len(maps),
                           "mean_query_terms": sum(map(len, maps)) / len(maps), "methods": {}}
    with get_engine("pisa").open(index, **{k: ENGINE[k] for k in ("query_algorithm", "block_size")}) as s:
        out["engine"] = {k: v for k, v in s.describe().items() if k != "index"}
        ms, hits = old(s, maps)
        out["methods"]["old"] = summary(ms)
        out["methods"]["protocol"] = summary(timed_passes(engine_calls(s, maps, K), PASSES))
        out["methods"]["protocol_whole_call"] = summary(timed_passes([partial(s.search, w, K) for w in maps], PASSES))
        out["methods"]["empty_query"] = summary(timed_passes([s.engine_call({}, K)] * len(maps), PASSES))
        out["hits_equal"] = hits == [s.engine_call(w, K)() for w in maps]
        out["mean_hits"] = sum(hits) / len(hits)
        out["tied_at_cut"] = tied_at_cut(s, maps)
        out["pisa_tool"] = tool(pisa_bin, index, s, maps, work)
    m = out["methods"]
    ratios = {"old / protocol": m["old"]["mean_ms"] / m["protocol"]["mean_ms"],
              "protocol_whole_call / protocol": m["protocol_whole_call"]["mean_ms"] / m["protocol"]["mean_ms"]}
    if out["pisa_tool"].get("status") == "ok":
        t = out["pisa_tool"]["mean_ms"]
        ratios.update({"protocol / pisa_tool": m["protocol"]["mean_ms"] / t,
                       "old / pisa_tool": m["old"]["mean_ms"] / t})
    out["ratios_of_means"] = ratios
    return out


def summary_md(doc: dict[str, Any]) -> str:
    lines = ["# PISA timing: our harness, PISA's protocol, the binding and PISA's own tool", "",
             f"Machine: {doc['machine'].get('cpu', '?')}, {doc['machine'].get('cores', '?')} cores. Index: PISA "
             "block_simdbp, block_max_wand over fixed-40 block-max data, quantized scorer, weighted queries, "
             f"k = {K}, one thread (studies/pisa_timing/README.md).", "",
             "| collection | queries | method | mean (ms) | p50 (ms) | p99 (ms) |", "|---|---|---|---|---|---|"]
    for c in doc["collections"]:
        rows = [(m, c["methods"][m]) for m in METHODS[:4]]
        if c["pisa_tool"].get("status") == "ok":
            rows.append(("pisa_tool", c["pisa_tool"]))
        for m, s in rows:
            lines.append(f"| {c['collection']} | {c['queries']:,} | {m} | {s['mean_ms']:.3f} | {s['p50_ms']:.3f} | "
                         f"{s['p99_ms']:.3f} |")
    lines += ["", "| collection | ratio of means | value |", "|---|---|---|"]
    for c in doc["collections"]:
        for name, value in c["ratios_of_means"].items():
            lines.append(f"| {c['collection']} | {name} | {value:.3f} |")
    lines.append("")
    for c in doc["collections"]:
        tool_note = c["pisa_tool"] if c["pisa_tool"].get("status") != "ok" else {"status": "ok"}
        lines.append(f"- {c['collection']}: hits equal across the methods: {c['hits_equal']}; mean hits "
                     f"{c['mean_hits']:.1f}; queries tied at the cut (re-queried by the search call): "
                     f"{c['tied_at_cut']}; PISA's tool: {tool_note}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--work", default=str(REPO / "work" / "pisa-timing"))
    p.add_argument("--scale-work", default=str(REPO / "work" / "msmarco-scale"),
                   help="scale.py's work folder holding the 1M PISA index and queries.json")
    p.add_argument("--pisa-bin", help="folder of PISA's built tools (queries, compress_inverted_index, "
                                      "create_wand_data)")
    args = p.parse_args(argv)
    from lsr_eval.manifest import machine, write_manifest

    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    pisa_bin = Path(args.pisa_bin) if args.pisa_bin else None
    t0 = time.perf_counter()
    collections = []
    for name, (index, queries) in (("scifact", scifact(Path(args.data), work)),
                                   ("generated-1M", generated(Path(args.scale_work)))):
        collections.append(measure(name, index, queries, pisa_bin, work))
        print(json.dumps(collections[-1]["methods"]), flush=True)
    doc = {"machine": machine(), "k": K, "passes": PASSES, "rounds_old": ROUNDS, "engine_settings": ENGINE,
           "collections": collections, "seconds": round(time.perf_counter() - t0, 1)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "timing.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "summary.md").write_text(summary_md(doc))
    write_manifest(out, "study", {"study": "pisa-timing", "k": K, "passes": PASSES, "rounds_old": ROUNDS,
                                  "engine": ENGINE, "scale_documents": SCALE_DOCS, "scale_queries": SCALE_QUERIES},
                   outputs=["timing.json", "summary.md"], timings={"seconds": doc["seconds"]})
    print((out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
