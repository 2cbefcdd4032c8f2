"""A run or qrels file without a result or judgment line is refused with its path (one line from the CLI), not
evaluated as zeros."""

from __future__ import annotations

import pytest
from faults import error_line

from lsr_eval.cli import main
from lsr_eval.errors import InputError
from lsr_eval.runs.trec import read_run, write_run


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    run = tmp_path / "run.trec"
    write_run({"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d2": 1.0}}, run)
    return {"qrels": qrels, "run": run}


@pytest.mark.parametrize("text, why", [("", "empty file"), ("\n# a comment\n\n", "3 blank or # lines")])
def test_an_empty_run_is_refused_by_evaluate_with_its_path(files, tmp_path, capsys, text, why):
    empty = tmp_path / "empty.trec"
    empty.write_text(text)
    assert main(["evaluate", str(files["qrels"]), str(files["run"]), str(empty)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""                     # refused, not printed as a row of zeros
    assert error_line(captured.err, "evaluate") == (
        f"lsr-eval evaluate: error: {empty}: no result line ({why}): a run without results is refused (it would "
        "score 0 on every query); rerun the retrieval that wrote it, or leave it out")


def test_an_empty_run_is_refused_by_fuse_with_its_path(files, tmp_path, capsys):
    empty = tmp_path / "empty.trec"
    empty.write_text("")
    assert main(["fuse", str(files["run"]), str(empty), "--qrels", str(files["qrels"]),
                 "--out", str(tmp_path / "fused")]) == 2
    assert error_line(capsys.readouterr().err, "fuse").startswith(f"lsr-eval fuse: error: {empty}: no result line")
    assert not (tmp_path / "fused").exists()


@pytest.mark.parametrize("text", ["", "# nothing judged\n", "query-id\tcorpus-id\tscore\n"])
@pytest.mark.parametrize("command", ["evaluate", "fuse"])
def test_an_empty_qrels_file_is_refused_with_its_path(files, tmp_path, capsys, text, command):
    empty = tmp_path / "qrels-empty.txt"
    empty.write_text(text)
    argv = ([command, str(empty), str(files["run"])] if command == "evaluate" else
            [command, str(files["run"]), str(files["run"]), "--qrels", str(empty), "--out", str(tmp_path / "f")])
    assert main(argv) == 2
    assert error_line(capsys.readouterr().err, command) == (
        f"lsr-eval {command}: error: {empty}: no judgments (the file is empty, or holds only a header, blank or # "
        "lines): nothing to evaluate against; give a qrels file with 'qid iter docid grade' lines")


def test_read_run_refuses_an_empty_file_and_still_reads_a_run_of_one_line(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("")
    with pytest.raises(InputError, match=f"^{path}: no result line"):
        read_run(path)
    path.write_text("# header\nq1 Q0 d1 1 0.5 tag\n")
    assert read_run(path) == {"q1": {"d1": 0.5}}
