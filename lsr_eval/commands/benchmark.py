"""``lsr-eval benchmark CONFIG``: systems × datasets, fusion, significance, efficiency -> one results table."""

from __future__ import annotations

import argparse
import sys

from lsr_eval.api.runs import run_benchmark
from lsr_eval.benchmark.config import load_config
from lsr_eval.benchmark.status import Status, kind_of
from lsr_eval.commands.options import add_device
from lsr_eval.models.options import DEVICE_CHOICES

NAME = "benchmark"
HELP = "run (or resume) a benchmark YAML from pipelines/: BM25 and SPLADE runs, fusion, significance, efficiency"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", metavar="CONFIG", help="benchmark YAML (see pipelines/)")
    p.add_argument("--work-dir", help="cache for indexes, encodings, collections (default ./work)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out",
                   help="results folder (default: the YAML's 'out'), e.g. to keep a quickstart out of results/")
    add_device(p, default=None, help=f"run every SPLADE system on this device ({DEVICE_CHOICES}; default: each "
                                      "system's 'device:', else auto = CUDA when available)")
    p.add_argument("--map", action="append", default=[], metavar="ID=PATH",
                   help="run a hub id (model, query_model) or a dataset name (msmarco-dev, dl19, a BEIR-13 member) "
                        "on a local folder instead: a hub mirror, a dataset copy, a test stand-in (repeatable; "
                        "recorded in the manifest)")
    p.add_argument("--map-file", metavar="YAML", help="stand-ins as a YAML mapping ID: PATH (paths relative to the "
                                                      "file's folder; ids the config does not use are ignored); "
                                                      "--map entries win")


def run(args: argparse.Namespace) -> int:
    """Parse the options into :func:`lsr_eval.api.runs.run_benchmark`'s arguments, and print its tables."""
    table = run_benchmark(args.config, args.out, args.work_dir, threads=args.threads, device=args.device,
                          stand_ins=args.map, map_file=args.map_file)
    cfg = load_config(args.config)
    out = args.out or cfg.out
    print(console_tables(out, cfg.name))
    print(f"full table: {out}/table.csv")
    problems = failed_rows(table)
    if problems:
        print(f"lsr-eval benchmark: {len(problems)} of {len(table)} rows did not complete:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


def console_tables(folder, name: str) -> str:
    """The benchmark's results in ``folder`` as the report shows them: systems x the benchmark's measures, with
    significance marks and why a cell is empty (the full table, every column, is the CSV)."""
    from lsr_eval.report.loading import load_benchmark
    from lsr_eval.report.settings import table_settings_notes
    from lsr_eval.report.tables import BEST_NOTE, benchmark_tables

    bench = load_benchmark(folder, name)
    tables = benchmark_tables(bench.table, name=name)
    ran = bench.table[bench.table["status"].map(kind_of) == Status.OK]
    notes = table_settings_notes(folder, list(zip(ran["dataset"], ran["system"])))
    return "\n".join([*(t.to_text().replace(BEST_NOTE, "*: the best number of its column") for t in tables),
                      *notes])


def failed_rows(table) -> list[str]:
    """One line per row whose run failed or was not run, or whose efficiency measurement failed:
    ``dataset / system: status``."""
    lines = []
    for row in table.to_dict("records"):
        where = f"{row.get('dataset')} / {row.get('system')}"
        status = str(row.get("status") or "")
        if kind_of(status) is not Status.OK:
            lines.append(f"{where}: {status or 'no status'}")
        efficiency = row.get("efficiency_status")
        if kind_of(efficiency) is Status.FAILED:
            lines.append(f"{where}: efficiency {efficiency}")
    return lines
