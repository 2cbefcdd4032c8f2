"""``lsr-eval evaluate QRELS RUN...``: measures of one or more TREC runs, as ``trec_eval -c`` computes them; with
``--baseline`` paired significance of each run against the baseline (the benchmark's code,
:func:`lsr_eval.significance.compare`), with ``--format trec_eval`` trec_eval's own three-column lines."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from lsr_eval.data.types import Qrels
from lsr_eval.errors import ConfigError
from lsr_eval.significance.correction import CONTROLS, CORRECTIONS, NAMES

NAME = "evaluate"
HELP = "Evaluate TREC runs against qrels (trec_eval -c values, computed with ranx)."

#: Decimals printed in the text table (JSON output keeps full precision).
TABLE_DECIMALS = 4
#: Output formats.
FORMATS = ("table", "json", "trec_eval")


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
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default), json, or trec_eval's 'measure<TAB>qid|all<TAB>value' lines (one "
                             "'runid' line before each run's)")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    parser.add_argument("--per-query", "-q", action="store_true",
                        help="also print the value of each judged query (trec_eval -q)")
    parser.add_argument("--baseline", metavar="RUN",
                        help="paired significance of every RUN against this run (added first when not among the "
                             "RUNs): the test of `lsr-eval benchmark`, corrected over the compared runs x measures")
    parser.add_argument("--test", default="t-test", help="significance test with --baseline: t-test (default) or "
                                                         "randomisation")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level with --baseline (0.05)")
    parser.add_argument("--correction", choices=CORRECTIONS, default="bonferroni",
                        help="for multiple comparisons with --baseline: bonferroni (default) or holm (family-wise "
                             "error rate), bh (Benjamini-Hochberg: false discovery rate)")


def _load_qrels(spec: str, split: str | None) -> tuple[Qrels, tuple[str, ...] | None]:
    """Resolve QRELS: a qrels file (TREC or BEIR TSV), or a dataset (registry name, ``irds:<id>``, BEIR folder);
    returns the qrels and, for a dataset, its official measures."""
    from lsr_eval.api.runs import read_qrels_spec

    if split is not None and Path(spec).is_file():
        raise ConfigError(f"--split applies to dataset names, but QRELS {spec!r} is read as a qrels file")
    qrels, measures, _ = read_qrels_spec(spec, split)
    return qrels, measures


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
    from lsr_eval.evaluation.measures import DEFAULT_MEASURES
    from lsr_eval.runs.trec import read_run

    fmt = "json" if args.json else args.format
    if args.json and args.format not in ("table", "json"):
        raise ConfigError(f"--json and --format {args.format}: choose one")
    if args.baseline is not None:
        from lsr_eval.significance.compare import check_settings

        check_settings(args.test, args.alpha)
        if fmt == "trec_eval":
            raise ConfigError("--format trec_eval prints trec_eval's measures only; significance (--baseline) is "
                              "printed by --format table or json")
    if args.measures:
        parse_measures(args.measures)  # fail on a bad name before reading anything
    qrels, official = _load_qrels(args.qrels, args.split)
    measures = parse_measures(args.measures or official or DEFAULT_MEASURES)
    names = [m.name for m in measures]
    paths = list(args.runs)
    if args.baseline is not None and args.baseline not in paths:
        paths.insert(0, args.baseline)
    results: list[dict[str, Any]] = []
    per_query_all: dict[str, dict[str, dict[str, float]]] = {}
    for path, label in zip(paths, _run_labels(paths)):
        run_ = read_run(path)
        per_query = evaluate(qrels, run_, measures, per_query=True)
        per_query_all[label] = per_query
        results.append({"run": path, "label": label, "measures": mean_scores(per_query),
                        "counts": dataclasses.asdict(count_queries(qrels, run_)),
                        "answered": sorted(q for q, hits in run_.items() if hits and q in qrels),
                        **({"per_query": per_query} if args.per_query else {})})
    significance = None
    if args.baseline is not None:
        significance = _significance(per_query_all, results[paths.index(args.baseline)]["label"], args)
        from lsr_eval.report.settings import row_settings, run_manifest, settings_notes

        significance["settings"] = settings_notes({r["label"]: row_settings(run_manifest(r["run"]))
                                                   for r in results})

    if fmt == "trec_eval":
        _print_trec_eval(results, measures, args.per_query)
        return 0
    if fmt == "json":
        out = {"qrels": args.qrels, "queries_judged": len(qrels), "measures": names,
               "runs": [{k: v for k, v in r.items() if k not in ("label", "answered")} for r in results]}
        if significance is not None:
            out["significance"] = significance
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0

    print(f"qrels {args.qrels}: {len(qrels)} judged queries; means over all of them, a query without results "
          f"counts 0 (trec_eval -c)")
    header = ["run"]
    for n in names:
        header += [n, f"p({n})"] if significance else [n]
    header += ["queries", "no results", "not judged"]
    rows = []
    for r in results:
        cells = [r["label"]]
        for n in names:
            cells.append(f"{r['measures'][n]:.{TABLE_DECIMALS}f}")
            if significance:
                cell = significance["cells"].get(r["label"], {}).get(n)
                cells[-1] += cell["marker"] if cell else ""
                cells.append("baseline" if cell is None else _p_value(cell["p_corrected"]))
        cells += [str(r["counts"][k]) for k in ("in_run", "judged_without_results", "run_not_judged")]
        rows.append(cells)
    print(_table(header, rows))
    print("queries: run queries with results; no results: judged queries without results (count 0); "
          "not judged: run queries absent from the qrels (ignored)")
    if significance:
        for line in significance["settings"]:
            print(line)
        print(f"{significance['legend']}")
    if args.per_query:
        for r in results:
            print(f"\nper query: {r['run']}")
            print(_table(["qid", *names], [[qid, *(f"{r['per_query'][n][qid]:.{TABLE_DECIMALS}f}" for n in names)]
                                           for qid in qrels]))
    return 0


def _plain(value: Any) -> Any:
    """A table cell as a JSON value (numpy scalars as Python ones, NaN as None), at full precision."""
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and value != value else value


def _p_value(p: float) -> str:
    """A p-value with four decimals, or in scientific notation below 0.0001 (never printed as 0)."""
    return f"{p:.{TABLE_DECIMALS}f}" if p >= 1e-4 or p == 0 else f"{p:.1e}"


def _significance(per_query: dict[str, Any], baseline: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every run against ``baseline`` (:func:`lsr_eval.significance.compare`, as the benchmark): the test's
    records, and per run and measure the corrected p-value and marker (``†`` better, ``↓`` worse)."""
    from lsr_eval.significance.compare import compare, direction_marker

    if len(per_query) < 2:
        raise ConfigError("--baseline needs at least one other run to compare with it")
    df = compare(per_query, baseline, test=args.test, alpha=args.alpha, correction=args.correction)
    records = [{k: _plain(v) for k, v in rec.items()} for rec in df.to_dict("records")]
    cells: dict[str, dict[str, Any]] = {}
    for rec in records:
        if rec["system"] != baseline:
            cells.setdefault(rec["system"], {})[rec["measure"]] = {
                "p_corrected": rec["p_corrected"], "marker": direction_marker(rec["significant"], rec["difference"])}
    legend = (f"†/↓: significantly better/worse than {baseline} ({df.attrs['test']}, paired over "
              f"{records[0]['queries']} judged queries, {NAMES[df.attrs['correction']]} over "
              f"{df.attrs['comparisons']} comparisons ({CONTROLS[df.attrs['correction']]}), "
              f"alpha {df.attrs['alpha']}); p(...): corrected p-values")
    return {"baseline": baseline, "test": df.attrs["test"], "alpha": df.attrs["alpha"],
            "correction": df.attrs["correction"], "comparisons": df.attrs["comparisons"], "rows": records,
            "cells": cells, "legend": legend}


#: trec_eval's line format (``te_print_single_meas_s_float``): name left-aligned in 22 characters, tab, query id or
#: ``all``, tab, value with 4 decimals.
TREC_EVAL_LINE = "{name:<22}\t{qid}\t{value:6.4f}"


def _print_trec_eval(results: list[dict[str, Any]], measures, per_query: bool) -> None:
    """trec_eval's output for each run: with ``per_query`` (``-q``) first each answered judged query's lines (query
    ids in trec_eval's ``strcmp`` order), then the ``all`` lines over every judged query (``-c``)."""
    printed: dict[str, str] = {}
    for m in measures:  # two measures trec_eval spells alike (R@1000 and R@1000(rel=2)) keep our names
        printed[m.name] = m.trec_eval_name if m.trec_eval_name not in printed.values() else m.name
    for r in results:
        print(f"{'runid':<22}\t{'all'}\t{r['label']}")
        if per_query:
            for qid in r["answered"]:
                for m in measures:
                    print(TREC_EVAL_LINE.format(name=printed[m.name], qid=qid, value=r["per_query"][m.name][qid]))
        for m in measures:
            print(TREC_EVAL_LINE.format(name=printed[m.name], qid="all", value=r["measures"][m.name]))
