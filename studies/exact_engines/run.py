"""The same run from every exact engine: PISA and BMP (at its safe setting) against Anserini, top 1000 of every query,
bit for bit.

    python studies/exact_engines/run.py --out results/exact-engines        # NFCorpus and SciFact test, splade-tiny

For each dataset the SPLADE chain of ``lsr-eval splade`` (splade-tiny, fp32, documents top-1,024 terms, queries
top-256, scale 100; encoding, collection and both indexes cached in the work folder) is searched three ways:

* ``anserini``: lsr-eval's :class:`~lsr_eval.anserini.searcher.ImpactSearcher` (bulk hits, Anserini's tie rule),
* ``anserini_java``: Anserini's own ``SimpleImpactSearcher.search(Map, k)``, one query at a time (its hits read
  field by field: the reference lsr-eval's Anserini path must equal),
* ``pisa``: :class:`~lsr_eval.engines.pisa.PisaSearcher`, as a batch and one query at a time (the latency path),
* ``bmp``: :class:`~lsr_eval.engines.bmp.BmpSearcher` at ``alpha = beta = 1``, the same two ways (``--engines``
  chooses among the two).

A query counts as identical when its ranked lists are equal as ``(docid, score)`` sequences, scores compared as
the Python floats of their float32 values. The contract (lsr_eval.search.ties): score descending, docid ascending,
the cut at rank k in that order, scores through Anserini's ``ScoreTiesAdjusterReranker``. ``before_fix`` counts the
queries where PISA's lists, as the engine returned them before this contract (its exact dot products, i.e. the
adjusted scores rounded to integers), differ from Anserini's: the queries where a tied run deep in the list leaves a
float32 residue (NFCorpus: ``50.999996`` beside ``51.0``).

Outputs in ``--out``: ``engines.json`` (per dataset: counts, differing and residue query ids, an example) and
``summary.md``, with ``manifest.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import sys as _sys
import time
from pathlib import Path
from pathlib import Path as _Path
from typing import Any, Mapping

_sys.path.insert(0, str(_Path(__file__).resolve().parents[2]))  # the checkout: lsr_eval and studies importable

from studies.exact_engines.measure import integer_scores, residue, residue_runs
from studies.exact_engines.summary import ENGINES, summary_text
from studies.harness.agreement import differing_queries

REPO = Path(__file__).resolve().parents[2]

STAGE = "check-exact-engines"
SHARED = REPO.parent / "shared" / "data" / "beir"

log = logging.getLogger("check_exact_engines")

Run = Mapping[str, Mapping[str, float]]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", nargs="+", default=[str(SHARED / "nfcorpus"), str(SHARED / "scifact")],
                   help="BEIR folders or registry names")
    p.add_argument("--split", default="test")
    p.add_argument("--model", default="splade-tiny", help="model folder, hub id or offline alias")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "auto"])
    p.add_argument("--doc-top-k", type=int, default=1024)
    p.add_argument("--query-top-k", type=int, default=256)
    p.add_argument("--max-length-d", type=int, default=None, help="document max length (default: the model's)")
    p.add_argument("--max-length-q", type=int, default=None, help="query max length (default: the model's)")
    p.add_argument("--k", type=int, default=1000, help="hits per query")
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES,
                   help="the engines checked against Anserini (default: all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work-dir", type=Path, default=None, help="work folder (default: LSR_EVAL_WORK or work/)")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true")
    return p.parse_args(argv)


def check_dataset(spec: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.models.offline import resolve_model
    from lsr_eval.pipeline.settings import SpladeSettings
    from lsr_eval.pipeline.splade import ensure_impact_index, load_model, open_searcher

    dataset = load_dataset(spec, args.split)
    anserini = SpladeSettings.from_flat(model=str(resolve_model(args.model)), doc_top_k=args.doc_top_k,
                                        query_top_k=args.query_top_k, precision=args.precision, hits=args.k,
                                        max_length_d=args.max_length_d, max_length_q=args.max_length_q)
    settings = [anserini, *(anserini.replace(engine=e) for e in args.engines)]
    model = load_model(anserini)
    t0 = time.perf_counter()
    stages = {s.search.engine: ensure_impact_index(dataset, model, s, work, args.threads) for s in settings}
    prepare_s = time.perf_counter() - t0
    encoded = encode_queries(dataset.queries(), SpladeTextEncoder(model.query), batch_size=anserini.encode.batch_size)
    maps = query_weight_maps(encoded.vectors, anserini.export.scale)
    remove = dataset.remove_query
    runs: dict[str, dict] = {}
    seconds: dict[str, float] = {}
    counts: dict[str, dict] = {}
    with open_searcher(anserini, stages["anserini"]["index_dir"]) as a:
        t = time.perf_counter()
        runs["anserini"], c = a.batch_search(maps, k=args.k, threads=args.threads, remove_query=remove)
        seconds["anserini"], counts["anserini"] = time.perf_counter() - t, c.to_dict()
        if not isinstance(a, ImpactSearcher):
            raise TypeError(f"the anserini engine opened a {type(a).__name__}, not an ImpactSearcher")
        t = time.perf_counter()
        runs["anserini_java"] = {q: _without(q, a.search_per_hit(w, k=args.k, qid=q) if w else [], remove)
                                 for q, w in maps.items()}
        seconds["anserini_java"] = time.perf_counter() - t
    for s in settings[1:]:
        e = s.search.engine
        with open_searcher(s, stages[e]["index_dir"]) as p:
            t = time.perf_counter()
            runs[e], c = p.batch_search(maps, k=args.k, threads=args.threads, remove_query=remove)
            seconds[e], counts[e] = time.perf_counter() - t, c.to_dict()
            t = time.perf_counter()
            runs[f"{e}_one_by_one"] = {q: _without(q, p.search(w, k=args.k, qid=q), remove) for q, w in maps.items()}
            seconds[f"{e}_one_by_one"] = time.perf_counter() - t
    reference = runs["anserini"]
    off = residue(reference)
    before = differing_queries(integer_scores(runs["pisa"]), reference) if "pisa" in runs else []
    first = next(iter(sorted(off.items())), None)
    return {
        "dataset": dataset.describe(),
        "documents": stages["anserini"]["export"]["counts"]["documents_out"],
        "queries": len(maps), "k": args.k, "remove_query": remove,
        "hits": {name: sum(map(len, run.values())) for name, run in runs.items()},
        "differing_from_anserini": {name: differing_queries(run, reference) for name, run in runs.items()
                                    if name != "anserini"},
        "before_fix": {"differing": len(before), "qids": before},
        "residue": {"queries": len(off), "hits": sum(map(len, off.values())), "qids": sorted(off),
                    "runs": residue_runs(reference),
                    "example": None if first is None else
                    {"qid": first[0], "rank": first[1][0][0], "docid": first[1][0][1], "score": first[1][0][2]}},
        "tied_neighbours": sum(1 for hits in reference.values()
                               for x, y in zip(hits.values(), list(hits.values())[1:]) if round(x) == round(y)),
        "counts": counts,
        "seconds": {"prepare": round(prepare_s, 1), **{n: round(s, 2) for n, s in seconds.items()}},
        "indexes": {e: s["index_dir"] for e, s in stages.items()},
    }


def _without(qid: str, hits: list[tuple[str, float]], remove: bool) -> dict[str, float]:
    """One query's hits as a run entry, its self-hit dropped when ``remove`` (as ``batch_search`` does)."""
    return {d: s for d, s in hits if not (remove and d == qid)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from lsr_eval.manifest import prepare_output, write_manifest
    from lsr_eval.workdir import work_dir

    experiment = {"check": STAGE, "datasets": args.datasets, "split": args.split, "model": args.model,
                  "precision": args.precision, "doc_top_k": args.doc_top_k, "query_top_k": args.query_top_k,
                  "max_length_d": args.max_length_d, "max_length_q": args.max_length_q, "k": args.k,
                  "engines": args.engines}
    out = prepare_output(args.out, experiment, overwrite=args.overwrite)
    work = work_dir(args.work_dir)
    results = {}
    for spec in args.datasets:
        r = check_dataset(spec, args, work)
        results[r["dataset"]["name"]] = r
        log.info("%s: %s", r["dataset"]["name"], {n: len(d) for n, d in r["differing_from_anserini"].items()})
    (out / "engines.json").write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(summary_text(results, args), encoding="utf-8")
    failed = {name: {n: len(d) for n, d in r["differing_from_anserini"].items() if d} for name, r in results.items()}
    failed = {name: f for name, f in failed.items() if f}
    write_manifest(out, STAGE, experiment, outputs=["engines.json", "summary.md"], failed=failed,
                   counts={name: {"queries": r["queries"], "hits": r["hits"]["anserini"]}
                           for name, r in results.items()})
    print((out / "summary.md").read_text(encoding="utf-8"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
