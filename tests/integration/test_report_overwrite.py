"""A report rewritten into its folder holds only what the results give now: the tables and figures of a benchmark
that is gone do not stay behind (``report --overwrite`` once left the retired benchmarks' tables in
``results/report``)."""

from __future__ import annotations

import shutil

from test_report_content import write_benchmark

from lsr_eval.cli import main


def test_rewritten_report_drops_the_tables_of_a_removed_benchmark(tmp_path):
    results = tmp_path / "results"
    write_benchmark(results / "kept")
    write_benchmark(results / "gone")
    out = tmp_path / "report"
    assert main(["report", str(results), "--out", str(out)]) == 0
    assert list((out / "tables").glob("benchmark-gone*"))
    shutil.rmtree(results / "gone")
    assert main(["report", str(results), "--out", str(out), "--overwrite"]) == 0
    assert not list((out / "tables").glob("benchmark-gone*")) and not list((out / "plots").glob("*gone*"))
    assert list((out / "tables").glob("benchmark-kept*"))
