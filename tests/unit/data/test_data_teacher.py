"""The teacher-score stage: a pickle in Sentence-Transformers' MarginMSE layout (``ce_scores[qid][pid]``) becomes
``qid docid score`` lines, with counts; anything but dicts, strings and numbers is refused; the lock file pins it."""

from __future__ import annotations

import gzip
import json
import os
import pickle

import numpy as np
import pytest

from lsr_eval.cli import main
from lsr_eval.data.teacher import check_expected, convert, load_scores
from lsr_eval.errors import InputError
from lsr_eval.train.files import read_teacher_scores

#: the layout Sentence-Transformers' MarginMSE example indexes as ce_scores[qid][pid]: int ids, float scores
SCORES = {1185869: {1: 9.5, 59219: -3.25, 6: np.float32(0.5)}, 17: {42: 1.0}}


def write(path, obj) -> str:
    with gzip.open(path, "wb") as f:
        pickle.dump(obj, f)
    return str(path)


def test_the_st_layout_converts_to_the_lines_training_reads(tmp_path):
    src = write(tmp_path / "scores.pkl.gz", SCORES)
    counts = convert(src, tmp_path / "t.tsv")
    assert (counts.queries, counts.pairs, counts.lines) == (2, 4, 4) and len(counts.sha256) == 64
    assert read_teacher_scores(tmp_path / "t.tsv") == {"1185869": {"1": 9.5, "59219": -3.25, "6": 0.5},
                                                       "17": {"42": 1.0}}
    assert not (tmp_path / "t.tsv.partial").exists()


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


@pytest.mark.parametrize("obj, match", [
    ({1: {2: Evil()}}, "names (posix|nt).system; a teacher-score file holds dicts, strings and numbers only"),
    ({1: {2: np.int64(3)}}, "numpy int64 values, not floats"),
    ([1, 2], r"bad.pkl.gz: the teacher scores must be a mapping, got \[1, 2\]"),
    ({1: [2, 3]}, r"bad.pkl.gz: query 1 must be a mapping, got \[2, 3\]"),
    ({1: {2: float("nan")}}, r"score of \(1, 2\) is nan, not finite"),
])
def test_anything_else_is_refused_in_one_line(tmp_path, monkeypatch, obj, match):
    monkeypatch.chdir(tmp_path)
    src = write(tmp_path / "bad.pkl.gz", obj)
    with pytest.raises(InputError, match=match):
        convert(src, tmp_path / "t.tsv")
    assert not (tmp_path / "pwned.txt").exists() and not (tmp_path / "t.tsv").exists()


def test_the_lock_file_records_then_checks(tmp_path):
    src = write(tmp_path / "scores.pkl.gz", SCORES)
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps({"sha256": None, "queries": None, "pairs": None}))
    counts = convert(src, tmp_path / "t.tsv")
    assert check_expected(counts, lock).startswith("recorded sha256, queries, pairs into")
    assert json.loads(lock.read_text()) == {"sha256": counts.sha256, "queries": 2, "pairs": 4}
    assert check_expected(counts, lock).startswith("matches")
    other = convert(write(tmp_path / "other.pkl.gz", {1: {2: 3.0}}), tmp_path / "o.tsv")
    with pytest.raises(InputError, match="differs from the one recorded: sha256 .* queries 2 expected, 1 found; "
                                         "pairs 4 expected, 1 found"):
        check_expected(other, lock)


def test_command_converts_once_and_errors_in_one_line(tmp_path, capsys):
    src = write(tmp_path / "scores.pkl.gz", SCORES)
    out = tmp_path / "data" / "t.tsv"
    assert main(["teacher-scores", "--pickle", src, "--out", str(out)]) == 0
    assert "2 queries, 4 (query, passage) pairs in -> 4 lines out" in capsys.readouterr().out
    assert main(["teacher-scores", "--pickle", src, "--out", str(out)]) == 0
    assert "exists" in capsys.readouterr().out
    assert main(["teacher-scores", "--pickle", str(tmp_path / "none.pkl.gz"), "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.pkl.gz does not exist" in err[0]
    (tmp_path / "junk.pkl.gz").write_bytes(b"not a pickle")
    assert main(["teacher-scores", "--pickle", str(tmp_path / "junk.pkl.gz"), "--out", str(out), "--overwrite"]) == 2
    assert "not a readable teacher-score pickle" in capsys.readouterr().err


def test_load_scores_reads_plain_pickles_too(tmp_path):
    (tmp_path / "s.pkl").write_bytes(pickle.dumps({"q": {"d": 1}}))
    assert load_scores(tmp_path / "s.pkl") == {"q": {"d": 1}}


def test_a_damaged_record_converts_again(tmp_path):
    from lsr_eval.data.teacher import teacher_lines

    src = write(tmp_path / "scores.pkl.gz", SCORES)
    out = tmp_path / "t.tsv"
    first = teacher_lines(out, src)
    assert first.counts is not None and teacher_lines(out, src).counts is None   # kept once finished
    out.with_name("t.tsv.counts.json").write_text('{"source": ')                  # cut short
    again = teacher_lines(out, src)
    assert again.counts == first.counts and again.record["lines"] == 4
