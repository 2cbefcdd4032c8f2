"""TREC run read/write, qrels and topics readers: formats, trec_eval order, and errors naming file and line."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lsr_eval.data.trec_files import read_qrels, read_topics_tsv
from lsr_eval.data.types import Query
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.runs.trec import read_run, trec_order, trec_ranking, write_run


def _write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ---------------------------------------------------------------------------------------------------- ranking order

def test_trec_ranking_breaks_ties_by_docid_descending():
    # trec_eval: score desc, then strcmp(docid) desc: "d9" > "d10" > "d1" (byte order, not numeric), "é" > "z"
    hits = {"d1": 1.0, "d10": 2.0, "d9": 2.0, "x": 0.5, "é": 0.5, "z": 0.5, "top": 3.0}
    assert [d for d, _ in trec_ranking(hits)] == ["top", "d9", "d10", "d1", "é", "z", "x"]


def test_trec_order_matches_a_plain_python_sort_on_many_ties():
    rng = random.Random(3)
    docids = [f"d{rng.randrange(10**6)}" for _ in range(3000)]
    docids = list(dict.fromkeys(docids))
    scores = np.array([float(rng.randrange(20)) for _ in docids])  # ~150 documents per tied score
    expected = sorted(range(len(docids)), key=lambda i: (scores[i], docids[i]), reverse=True)
    assert trec_order(docids, scores).tolist() == expected


def test_trec_ranking_rejects_nan():
    with pytest.raises(InputError, match=r"query 'q7', document 'b': score is NaN"):
        trec_ranking({"a": 1.0, "b": float("nan")}, qid="q7")


# ---------------------------------------------------------------------------------------------------- runs

def test_write_run_format_order_and_depth(tmp_path):
    run = {"q2": {"b": 1.5, "a": 1.5, "c": 3.0, "d": -2.0}, "q1": {"x": 0.1}, "empty": {}}
    p = tmp_path / "sub" / "run.trec"
    assert write_run(run, p, tag="bm25") == 5
    assert p.read_text().splitlines() == [
        "q2 Q0 c 1 3.0 bm25",
        "q2 Q0 b 2 1.5 bm25",  # tie with "a": docid descending
        "q2 Q0 a 3 1.5 bm25",
        "q2 Q0 d 4 -2.0 bm25",
        "q1 Q0 x 1 0.1 bm25",
    ]
    assert write_run(run, p, depth=2) == 3
    assert [line.split()[2] for line in p.read_text().splitlines()] == ["c", "b", "x"]
    assert not list(tmp_path.glob("**/*.tmp"))


def test_run_round_trip_keeps_exact_scores(tmp_path):
    rng = random.Random(5)
    run = {f"q{i}": {f"doc{j}": rng.gauss(0, 10) for j in range(50)} for i in range(5)}
    run["q0"]["float32"] = float(np.float32(0.1))  # not a short decimal
    run["q1"]["tiny"] = 1e-300
    p = tmp_path / "run.trec"
    assert write_run(run, p) == 252
    back = read_run(p)
    assert back == run  # same queries, docs and bit-identical scores
    assert list(back) == list(run)


def test_write_run_rejects_bad_values(tmp_path):
    p = tmp_path / "run.trec"
    with pytest.raises(InputError, match="query 'q': document id 'a b'"):
        write_run({"q": {"a b": 1.0}}, p)
    with pytest.raises(InputError, match="query id 'q 1'"):
        write_run({"q 1": {"a": 1.0}}, p)
    with pytest.raises(InputError, match="run tag"):
        write_run({"q": {"a": 1.0}}, p, tag="my run")
    with pytest.raises(InputError, match="NaN"):
        write_run({"q": {"a": 1.0}, "r": {"b": float("nan")}}, p)
    with pytest.raises(ConfigError, match="depth"):
        write_run({"q": {"a": 1.0}}, p, depth=0)
    assert not p.exists() and not list(tmp_path.iterdir())  # nothing half written


def test_read_run_skips_blank_and_comment_lines(tmp_path):
    p = _write(tmp_path, "r.trec", "# comment\nq1 Q0 a 1 2.5 t\n\n  \nq1 Q0 b 2 -1e3 t\nq2\tQ0\tc\t1\t7\tt\n")
    assert read_run(p) == {"q1": {"a": 2.5, "b": -1000.0}, "q2": {"c": 7.0}}


@pytest.mark.parametrize("line, message", [
    ("q1 Q0 b 2 1.0", r":3: expected 6 fields .* got 5"),
    ("q1 Q0 b 2 1.0 t extra", r":3: expected 6 fields .* got 7"),
    ("q1 Q0 b 2 high t", r":3: score 'high' is not a number"),
    ("q1 Q0 b 2 nan t", r":3: score is NaN"),
    ("q1 Q0 a 9 0.5 t", r":3: duplicate document 'a' for query 'q1'"),
])
def test_read_run_errors_name_file_and_line(tmp_path, line, message):
    p = _write(tmp_path, "bad.trec", f"q1 Q0 a 1 2.0 t\n\n{line}\n")
    with pytest.raises(InputError, match=r"bad\.trec" + message):
        read_run(p)


def test_read_run_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_run(tmp_path / "nope.trec")


# ---------------------------------------------------------------------------------------------------- qrels

def test_read_trec_qrels(tmp_path):
    p = _write(tmp_path, "qrels.txt", "q1 0 a 2\nq1 0 b 0\n# judged later\nq2 Q0 c -1\n\nq1\t0\td\t1\n")
    assert read_qrels(p) == {"q1": {"a": 2, "b": 0, "d": 1}, "q2": {"c": -1}}


def test_read_beir_qrels(tmp_path):
    p = _write(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\n1\t31715818\t1\n1\t999\t2\n7\tabc\t0\n")
    assert read_qrels(p) == {"1": {"31715818": 1, "999": 2}, "7": {"abc": 0}}


@pytest.mark.parametrize("text, message", [
    ("q1 0 a 1\nq1 0 a 2\n", r"qrels\.txt:2: duplicate judgment for query 'q1', document 'a'"),
    ("q1 0 a 1\nq1 0 b\n", r"qrels\.txt:2: expected 4 fields"),
    ("q1 0 a 1\nq1 0 b high\n", r"qrels\.txt:2: relevance grade 'high' is not an integer"),
    ("q1 a 1\n", r"qrels\.txt:1: expected 4 fields .*BEIR TSV file needs the header"),
    ("query-id\tcorpus-id\tscore\n1\t2\t1\n1\t2\t0\n", r"qrels\.txt:3: duplicate judgment"),
    ("query-id\tcorpus-id\tscore\n1\t2\n", r"qrels\.txt:2: expected 3 tab-separated fields"),
    ("query-id\tcorpus-id\tscore\n1\t2\t1.5\n", r"qrels\.txt:2: relevance grade '1.5' is not an integer"),
    ("# nothing\n\n", r"qrels\.txt: no judgments"),
])
def test_read_qrels_errors_name_file_and_line(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        read_qrels(_write(tmp_path, "qrels.txt", text))


def test_read_qrels_real_beir_file():
    from conftest import shared_path

    path = shared_path("beir", "scifact", "qrels", "test.tsv")
    qrels = read_qrels(path)
    assert len(qrels) == 300 and sum(map(len, qrels.values())) == 339  # 340 lines - header
    assert qrels["1"] == {"31715818": 1}


# ---------------------------------------------------------------------------------------------------- topics

def test_read_topics_tsv(tmp_path):
    p = _write(tmp_path, "topics.tsv", "1\twhat is a cat\n\n2\ttabs\tinside text \n")
    assert read_topics_tsv(p) == [Query("1", "what is a cat"), Query("2", "tabs\tinside text ")]


@pytest.mark.parametrize("text, message", [
    ("1\ta\n2 no tab\n", r"topics\.tsv:2: expected 'qid<TAB>text', found no tab"),
    ("1\ta\n\tb\n", r"topics\.tsv:2: empty query id"),
    ("1\ta\n2\t  \n", r"topics\.tsv:2: empty text for query '2'"),
    ("1\ta\n2\tb\n1\tc\n", r"topics\.tsv:3: duplicate query id '1' \(first at line 1\)"),
    ("\n", r"topics\.tsv: no topics"),
])
def test_read_topics_errors_name_file_and_line(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        read_topics_tsv(_write(tmp_path, "topics.tsv", text))
