"""``lsr-eval evaluate QRELS RUN...``: measures of one or more TREC runs, as ``trec_eval -c`` computes them."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from lsr_eval.data.types import Qrels
from lsr_eval.errors import ConfigError

NAME = "evaluate"
HELP = "Evaluate TREC runs against qrels (trec_eval -c values, computed with ranx)."

#: Decimals printed in the text table (JSON output keeps full precision).
TABLE_DECIMALS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES, FAMILIES

    parser.add_argument("qrels", metavar="QRELS",
                        help="qrels file (TREC 'qid 0 docid grade' or BEIR TSV with its 'query-id corpus-id score' "
                             "header), or a dataset: registry name, irds:<id>, BEIR folder (with --split)")
    parser.add_argument("runs", metavar="RUN", nargs="+", help="TREC run file(s) 'qid Q0 docid rank score tag'")
    parser.add_argument("--measures", nargs="+", default=None, metavar="MEASURE",
                        help=f"measures, FAMILY[@CUTOFF][(rel=LEVEL)] with FAMILY in {', '.join(FAMILIES)}, "
                             f"e.g. nDCG@10 'R@1000(rel=2)' (default: the dataset's official measures, or "
                             f"{' '.join(DEFAULT_MEASURES)} for a qrels file)")
    parser.add_argument("--split", default=None,
                        help="split of a dataset given as QRELS (not for a qrels file)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--per-query", action="store_true", help="also print the value of each judged query")


def _load_qrels(spec: str, split: str | None) -> tuple[Qrels, tuple[str, ...] | None]:
    """Resolve QRELS: a qrels file (TREC or BEIR TSV), or a dataset (registry name, ``irds:<id>``, BEIR folder);
    returns the qrels and, for a dataset, its official measures."""
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.data.trec_files import read_qrels

    if Path(spec).is_file():
        if split is not None:
            raise ConfigError(f"--split applies to dataset names, but QRELS {spec!r} is read as a qrels file")
        return read_qrels(spec), None
    dataset = load_dataset(spec, split)
    return dataset.qrels(), dataset.measures


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Left-aligned first column, right-aligned others, two spaces between columns."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for r in [header, *rows]:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _run_labels(paths: list[str]) -> list[str]:
    """File names when they tell the runs apart, else the paths as given."""
    names = [Path(p).name for p in paths]
    return names if len(set(names)) == len(names) else list(paths)


def run(args: argparse.Namespace) -> int:
    from lsr_eval.evaluation import count_queries, evaluate, mean_scores, parse_measures
    from lsr_eval.runs.trec import read_run

    from lsr_eval.evaluation.measures import DEFAULT_MEASURES

    if args.measures:
        parse_measures(args.measures)  # fail on a bad name before reading anything
    qrels, official = _load_qrels(args.qrels, args.split)
    measures = parse_measures(args.measures or official or DEFAULT_MEASURES)
    names = [m.name for m in measures]
    results: list[dict[str, Any]] = []
    for path in args.runs:
        run_ = read_run(path)
        per_query = evaluate(qrels, run_, measures, per_query=True)
        results.append({"run": path, "measures": mean_scores(per_query),
                        "counts": dataclasses.asdict(count_queries(qrels, run_)),
                        **({"per_query": per_query} if args.per_query else {})})

    if args.json:
        json.dump({"qrels": args.qrels, "queries_judged": len(qrels), "measures": names, "runs": results},
                  sys.stdout, indent=2)
        print()
        return 0

    print(f"qrels {args.qrels}: {len(qrels)} judged queries; means over all of them, a query without results "
          f"counts 0 (trec_eval -c)")
    header = ["run", *names, "queries", "no results", "not judged"]
    rows = [[label, *(f"{r['measures'][n]:.{TABLE_DECIMALS}f}" for n in names),
             *(str(r["counts"][k]) for k in ("in_run", "judged_without_results", "run_not_judged"))] for label, r in zip(_run_labels(args.runs), results)]
    print(_table(header, rows))
    print("queries: run queries with results; no results: judged queries without results (count 0); "
          "not judged: run queries absent from the qrels (ignored)")
    if args.per_query:
        for r in results:
            print(f"\nper query: {r['run']}")
            print(_table(["qid", *names], [[qid, *(f"{r['per_query'][n][qid]:.{TABLE_DECIMALS}f}" for n in names)]
                                           for qid in qrels]))
    return 0
