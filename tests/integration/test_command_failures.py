"""Failing early and loudly: a benchmark with a failed row exits non-zero and names it; a failed command leaves no
empty output folder behind."""

from __future__ import annotations

import pandas as pd
import yaml
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir

from lsr_eval.cli import main
from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import prepare_output, remove_empty_outputs


def test_failed_command_leaves_no_empty_output_folder(tiny_beir, tmp_path, monkeypatch, capsys):
    import lsr_eval.pipeline.bm25 as bm25

    def broken_index(*args, **kwargs):
        raise LsrEvalError("the index could not be built")

    monkeypatch.setattr(bm25, "ensure_bm25_index", broken_index)   # fails after the output folder was made
    out = tmp_path / "new" / "deeper" / "run"
    assert main(["bm25", str(tiny_beir), "--out", str(out), "--work-dir", str(tmp_path / "work")]) == 2
    assert "the index could not be built" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()        # the folder and the parents made for it are gone


def test_only_folders_this_process_made_empty_are_removed(tmp_path):
    kept_existing = tmp_path / "existing"
    kept_existing.mkdir()
    prepare_output(kept_existing, {"a": 1})                 # existed before: never removed
    written = prepare_output(tmp_path / "written" / "out", {"a": 1})
    (written / "run.trec").write_text("q 0 d 1 1.0 x\n")
    empty = prepare_output(tmp_path / "empty" / "out", {"a": 1})
    (empty / "queries").mkdir()                                # only empty sub-folders: nothing written
    assert remove_empty_outputs() == [empty, tmp_path / "empty"]
    assert kept_existing.is_dir() and (written / "run.trec").is_file() and not (tmp_path / "empty").exists()
    assert remove_empty_outputs() == []


def test_benchmark_with_a_failed_row_exits_non_zero_with_a_summary(tmp_path, monkeypatch, capsys):
    import lsr_eval.benchmark.run as bench_run

    data = write_beir(tmp_path / "data", TINY_DOCS, TINY_QUERIES, TINY_QRELS)
    cfg = {"name": "tiny", "out": str(tmp_path / "results"),
           "datasets": [{"spec": str(data), "split": "test", "label": "tiny"}],
           "systems": [{"name": "bm25", "kind": "bm25"}, {"name": "broken", "kind": "bm25", "k1": 1.2}],
           "fusion": [{"name": "rrf", "method": "rrf", "runs": ["bm25", "broken"]}]}
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    real = bench_run.run_system

    def run_system(system, dataset, out, work, threads):
        if system.name == "broken":
            prepare_output(out, {"broken": True})
            raise LsrEvalError("this run broke")
        return real(system, dataset, out, work, threads)

    monkeypatch.setattr(bench_run, "run_system", run_system)
    code = main(["benchmark", str(path), "--work-dir", str(tmp_path / "work"), "--threads", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert "2 of 3 rows did not complete" in err
    assert "tiny / broken: failed: this run broke" in err and "tiny / rrf: not run: inputs failed (broken)" in err
    table = pd.read_csv(tmp_path / "results" / "table.csv")
    assert table.set_index("system").loc["bm25", "status"] == "ok"      # the rest of the table is written
    assert not (tmp_path / "work" / "benchmarks" / "tiny" / "runs" / "broken").exists()
