"""``lsr-eval evaluate QRELS RUN...``: measures of one or more TREC runs, as ``trec_eval -c`` computes them; with
``--baseline`` paired significance of each run against the baseline (the benchmark's code,
:func:`lsr_eval.significance.compare`), with ``--format trec_eval`` trec_eval's own three-column lines."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from lsr_eval.api.evaluation import run_evaluation
from lsr_eval.errors import ConfigError
from lsr_eval.evaluation.measures import DEFAULT_MEASURES, FAMILIES
from lsr_eval.significance.correction import CORRECTIONS

NAME = "evaluate"
HELP = "Evaluate TREC runs against qrels (trec_eval -c values, computed with ranx)."

#: Decimals printed in the text table (JSON output keeps full precision).
TABLE_DECIMALS = 4
#: Output formats.
FORMATS = ("table", "json", "trec_eval")


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Left-aligned first column, right-aligned others, two spaces between columns."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for r in [header, *rows]:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.api.evaluation.run_evaluation`'s arguments, and print what it
    measured."""
    fmt = "json" if args.json else args.format
    if args.json and args.format not in ("table", "json"):
        raise ConfigError(f"--json and --format {args.format}: choose one")
    if args.baseline is not None and fmt == "trec_eval":
        raise ConfigError("--format trec_eval prints trec_eval's measures only; significance (--baseline) is "
                          "printed by --format table or json")
    if args.split is not None and Path(args.qrels).is_file():
        raise ConfigError(f"--split applies to dataset names, but QRELS {args.qrels!r} is read as a qrels file")
    paths = list(args.runs)
    if args.baseline is not None and args.baseline not in paths:
        paths.insert(0, args.baseline)
    ev = run_evaluation(args.qrels, paths, args.measures, baseline=args.baseline,
                        test=args.test, alpha=args.alpha, correction=args.correction, split=args.split)
    significance = ev.significance()
    if fmt == "trec_eval":
        _print_trec_eval(ev, args.per_query)
        return 0
    if fmt == "json":
        out = {"qrels": args.qrels, "queries_judged": len(ev.qrels), "measures": ev.names,
               "runs": [{"run": r.source, "measures": r.means, "counts": dataclasses.asdict(r.counts),
                         **({"per_query": r.per_query} if args.per_query else {})} for r in ev.runs]}
        if significance is not None:
            out["significance"] = significance
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0

    print(f"qrels {args.qrels}: {len(ev.qrels)} judged queries; means over all of them, a query without results "
          f"counts 0 (trec_eval -c)")
    header = ["run"]
    for n in ev.names:
        header += [n, f"p({n})"] if significance else [n]
    header += ["queries", "no results", "not judged"]
    rows = []
    for r in ev.runs:
        cells = [r.name]
        for n in ev.names:
            cells.append(f"{r.means[n]:.{TABLE_DECIMALS}f}")
            if significance:
                cell = significance["cells"].get(r.name, {}).get(n)
                cells[-1] += cell["marker"] if cell else ""
                cells.append("baseline" if cell is None else _p_value(cell["p_corrected"]))
        counts = dataclasses.asdict(r.counts)
        cells += [str(counts[k]) for k in ("in_run", "judged_without_results", "run_not_judged")]
        rows.append(cells)
    print(_table(header, rows))
    print("queries: run queries with results; no results: judged queries without results (count 0); "
          "not judged: run queries absent from the qrels (ignored)")
    if significance:
        for line in significance["settings"]:
            print(line)
        print(f"{significance['legend']}")
    if args.per_query:
        for r in ev.runs:
            print(f"\nper query: {r.source}")
            print(_table(["qid", *ev.names], [[qid, *(f"{r.per_query[n][qid]:.{TABLE_DECIMALS}f}" for n in ev.names)]
                                              for qid in ev.qrels]))
    return 0


def _p_value(p: float) -> str:
    """A p-value with four decimals, or in scientific notation below 0.0001 (never printed as 0)."""
    return f"{p:.{TABLE_DECIMALS}f}" if p >= 1e-4 or p == 0 else f"{p:.1e}"


#: trec_eval's line format (``te_print_single_meas_s_float``): name left-aligned in 22 characters, tab, query id or
#: ``all``, tab, value with 4 decimals.
TREC_EVAL_LINE = "{name:<22}\t{qid}\t{value:6.4f}"


def _print_trec_eval(ev, per_query: bool) -> None:
    """trec_eval's output for each run: with ``per_query`` (``-q``) first each answered judged query's lines (query
    ids in trec_eval's ``strcmp`` order), then the ``all`` lines over every judged query (``-c``)."""
    printed: dict[str, str] = {}
    for m in ev.measures:  # two measures trec_eval spells alike (R@1000 and R@1000(rel=2)) keep our names
        printed[m.name] = m.trec_eval_name if m.trec_eval_name not in printed.values() else m.name
    for r in ev.runs:
        print(f"{'runid':<22}\t{'all'}\t{r.name}")
        if per_query:
            for qid in r.answered:
                for m in ev.measures:
                    print(TREC_EVAL_LINE.format(name=printed[m.name], qid=qid, value=r.per_query[m.name][qid]))
        for m in ev.measures:
            print(TREC_EVAL_LINE.format(name=printed[m.name], qid="all", value=r.means[m.name]))
