"""``lsr-eval report RESULTS_DIR --out DIR``: the papers' tables, trade-off and training figures and an HTML page
of a results folder."""

from __future__ import annotations

import argparse

NAME = "report"
HELP = "Tables (md, tex, csv), figures (png, pdf) and index.html of a results folder."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS_DIR",
                        help="results folder: <benchmark>/table.json|table.csv (+ manifest.json) folders and "
                             "train/<run>/log.jsonl (+ manifest.json)")
    parser.add_argument("--out", required=True, help="output folder (tables/, plots/, index.html, manifest.json)")
    parser.add_argument("--percent", action="store_true",
                        help="effectiveness x100 to 1 decimal, as the papers (default: fractions to 4 decimals)")
    parser.add_argument("--smooth", type=int, default=None, metavar="N",
                        help="moving average over N logged steps in the training curves (default: about 50 "
                             "points per curve; 1: raw)")
    parser.add_argument("--best-k-by", default=None, metavar="COLUMN",
                        help="rescaling-table column that chooses each backbone's best k (default: the first of "
                             "'MS MARCO RR@10', 'DL19 nDCG@10', 'BEIR-13 mean nDCG@10' with a value)")
    parser.add_argument("--measures", nargs="+", metavar="MEASURE",
                        help="measures the benchmark and efficiency tables show (e.g. nDCG@10 R@100), the first one "
                             "in the figures (default: every measure the results hold for each dataset)")
    parser.add_argument("--no-figures", action="store_true",
                        help="tables and index.html only (drawing the figures takes most of a report's time)")
    parser.add_argument("--overwrite", action="store_true", help="replace an output folder holding another report")


def run(args: argparse.Namespace) -> int:
    from lsr_eval.report.build import write_report
    from lsr_eval.report.formatting import NumberFormat

    fmt = NumberFormat(scale="percent" if args.percent else "fraction")
    files = write_report(args.results, args.out, fmt=fmt, smooth=args.smooth, best_k_by=args.best_k_by,
                         measures=_canonical(args.measures), overwrite=args.overwrite, figures=not args.no_figures)
    paths = files.all()
    print(f"wrote {len(paths)} files into {files.out}: {len(files.tables)} tables (md, tex, csv), "
          f"{len(files.figures) // 2} figures (png, pdf), index.html, manifest.json")
    for p in paths:
        print(f"  {p}")
    return 0


def _canonical(measures: list[str] | None) -> list[str] | None:
    """Measure names as the results' columns spell them (``ndcg@10`` -> ``nDCG@10``); names the parser does not
    know are kept, for the report to refuse with the measures it has."""
    from lsr_eval.evaluation.measures import find_measure

    if measures is None:
        return None
    out = []
    for m in measures:
        measure = find_measure(m)
        out.append(m if measure is None else measure.name)
    return out
