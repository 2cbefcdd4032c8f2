"""``lsr-eval search``: integer-weighted queries over an impact index -> a TREC run (and metrics with --dataset)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from lsr_eval.api.runs import judgments
from lsr_eval.commands._common import stage_folder
from lsr_eval.commands._engine_args import add_engine_arguments, engine_options
from lsr_eval.defaults import LUCENE_MAX_CLAUSES
from lsr_eval.engines.registry import get_engine, split_options
from lsr_eval.manifest import prepare_output, write_manifest

NAME = "search"
HELP = "search an impact index with exported query vectors (queries.jsonl); evaluate with --dataset"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", metavar="INDEX", help="impact index folder (or an lsr-eval index folder) of --engine")
    p.add_argument("queries", metavar="QUERIES", help="queries.jsonl written by lsr-eval (id + integer vector)")
    p.add_argument("--out", required=True)
    p.add_argument("--hits", type=int, default=1000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-clauses", type=int, default=LUCENE_MAX_CLAUSES, help="Anserini: terms allowed per query")
    p.add_argument("--remove-query", action="store_true", help="drop hits whose docid equals the query id")
    p.add_argument("--dataset", help="dataset or qrels file to evaluate against")
    p.add_argument("--split")
    p.add_argument("--overwrite", action="store_true")
    add_engine_arguments(p)


def run(args: argparse.Namespace) -> int:
    from lsr_eval.evaluation import count_queries, evaluate, write_metrics
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES
    from lsr_eval.export.queries import read_query_jsonl
    from lsr_eval.runs.trec import write_run

    index = stage_folder(args.index, "index")
    experiment = {"stage": "search", "index": str(index.resolve()), "queries": str(Path(args.queries).resolve()),
                  "hits": args.hits, "remove_query": args.remove_query}
    options = engine_options(args)
    build, knobs = split_options(args.engine, options)
    if args.engine == "anserini":
        knobs.setdefault("max_clauses", args.max_clauses)
    else:
        experiment.update(engine=args.engine, engine_options=options)
    out = prepare_output(args.out, experiment, args.overwrite)
    maps = read_query_jsonl(args.queries)
    with get_engine(args.engine, **build).open(index, **knobs) as searcher:
        run_, counts = searcher.batch_search(maps, k=args.hits, threads=args.threads, remove_query=args.remove_query)
        engine_record = searcher.describe()
    write_run(run_, out / "run.trec", tag="impact")
    sections = {"counts": {"search": counts.to_dict()}, "search": engine_record}
    if args.dataset:
        qrels, _, official = judgments(args.dataset, args.split)
        metrics = evaluate(qrels, run_, official or DEFAULT_MEASURES)
        write_metrics(out, metrics)
        sections = {"counts": {"search": counts.to_dict(), "evaluation": asdict(count_queries(qrels, run_))},
                    "metrics": metrics, "search": engine_record}
        print("  ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    write_manifest(out, "search", experiment, **sections)
    print(f"{counts.queries} queries searched ({len(counts.queries_without_hits)} without hits) -> {out / 'run.trec'}")
    return 0
