"""Vectors from anywhere, at the door of every engine: each defect of a hand-written JsonVectorCollection or query
file, fed to every engine's build and search through the command line and the API, is one line naming the file and
the line (or the query id), exit code 2, no Python or Java stack trace, and no index folder; a clean collection
indexes on all four engines with the same counts (docs/collections.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.api.files import index_folder, search_folder
from lsr_eval.cli import main
from lsr_eval.engines.registry import ENGINES
from lsr_eval.errors import InputError

PACKAGES = {"anserini": None, "pisa": "pyterrier_pisa", "seismic": "seismic", "bmp": "bmp", "qdrant": "qdrant_client"}
ENGINE_PARAMS = [pytest.param(name, marks=pytest.mark.skipif(
    module is not None and importlib.util.find_spec(module) is None and not os.environ.get("CI"),
    reason=f"{module} is not installed")) for name, module in PACKAGES.items()]
INTEGER_ENGINES = ("anserini", "pisa", "bmp", "qdrant")

CLEAN = [{"id": "a", "vector": {"x": 3, "y": 1}}, {"id": "b", "vector": {"x": 1, "z": 5}},
         {"id": "c", "vector": {}}, {"id": "d", "vector": {"y": 2, "z": 0}}]
#: name -> (second line of the collection, what its one-line refusal says, engines refusing it; None: every engine)
DEFECTS: dict[str, tuple[str, str, tuple[str, ...] | None]] = {
    "negative": ('{"id": "b", "vector": {"x": -3}}', "document 'b': weight of 'x' is -3, negative", None),
    "fraction": ('{"id": "b", "vector": {"x": 5.7}}', "document 'b': weight of 'x' is 5.7, not an integer",
                 INTEGER_ENGINES),
    "string": ('{"id": "b", "vector": {"x": "5"}}', "document 'b': weight of 'x' is \"5\", a string", None),
    "repeated id": ('{"id": "a", "vector": {"x": 1}}', "document 'a' repeats the id of ", None),
    "nan": ('{"id": "b", "vector": {"x": NaN}}', "document 'b': weight of 'x' is NaN, not a finite number", None),
    "10^12": ('{"id": "b", "vector": {"x": 1000000000000}}', "document 'b': weight of 'x' is 1000000000000, above",
              None),
    "no vector": ('{"id": "b", "contents": "x"}', "document 'b': the line has no \"vector\"", None),
    "not an object": ('[1, 2]', "not a JSON object but an array", None),
    "inf": ('{"id": "b", "vector": {"x": Infinity}}', "weight of 'x' is Infinity, not a finite number", None),
    "2^24": ('{"id": "b", "vector": {"x": 16777216}}', "weight of 'x' is 16777216, above", ("seismic", "qdrant")),
    "2^31": ('{"id": "b", "vector": {"x": 2147483648}}', "weight of 'x' is 2147483648, above",
             ("anserini", "seismic", "qdrant")),
    "2^32": ('{"id": "b", "vector": {"x": 4294967296}}', "weight of 'x' is 4294967296, above", None),
    "numeric id": ('{"id": 5, "vector": {"x": 1}}', "its id 5 is a number, not a string", None),
    "bom": ("\ufeff" + '{"id": "b", "vector": {"x": 1}}', "starts with a UTF-8 byte-order mark", None),
}
#: name -> (second line of queries.jsonl, its refusal, engines refusing it)
QUERY_DEFECTS: dict[str, tuple[str, str, tuple[str, ...] | None]] = {
    "negative": ('{"id": "q2", "vector": {"x": -2}}', "query 'q2': weight of 'x' is -2, negative", None),
    "nan": ('{"id": "q2", "vector": {"x": NaN}}', "query 'q2': weight of 'x' is NaN, not a finite number", None),
    "string": ('{"id": "q2", "vector": {"x": "2"}}', "query 'q2': weight of 'x' is \"2\", a string", None),
    "fraction": ('{"id": "q2", "vector": {"x": 2.5}}', "query 'q2': weight of 'x' is 2.5, not an integer",
                 INTEGER_ENGINES),
    "numeric id": ('{"id": 2, "vector": {"x": 1}}', "its id 2 is a number", None),
    "not an object": ('"q2"', "not a JSON object but a string", None),
}
#: what a Python or Java stack trace leaves on the console
TRACES = ("Traceback", "Exception", "\tat ", "at io.anserini", "at java.", "Caused by")


def write_lines(folder: Path, lines: list[str], name: str = "docs-00000.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return folder


def clean_lines() -> list[str]:
    return [json.dumps(d) for d in CLEAN]


def one_error_line(err: str, out: str, where: str, message: str) -> None:
    """The console holds one error line, naming ``where`` and saying ``message``, and no stack trace."""
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err
    assert where in errors[0] and message in errors[0] and "docs/collections.md" in errors[0], errors[0]
    assert not any(t in err + out for t in TRACES), err + out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The clean collection indexed by every engine installed (``lsr-eval index``), by engine."""
    root = tmp_path_factory.mktemp("clean")
    coll = write_lines(root / "coll", clean_lines())
    out = {}
    for name, module in PACKAGES.items():
        if module is None or importlib.util.find_spec(module) is not None:
            assert main(["index", str(coll), "--out", str(root / name), "--engine", name, "--threads", "1"]) == 0
            out[name] = root / name
    return out


def test_a_clean_collection_indexes_on_every_engine_with_the_same_counts(built, capsys):
    counts = {}
    for name, folder in built.items():
        manifest = json.loads((folder / "manifest.json").read_text())["counts"]
        counts[name] = (manifest["documents_read"], manifest["documents_indexed"], manifest["collection"]["documents"],
                        manifest["collection"]["documents_without_terms"], manifest["collection"]["postings"])
    assert set(counts.values()) == {(4, 4, 4, 1, 5)}, counts  # d's zero weight is no posting; c has no terms
    assert len(counts) == len(ENGINES) or not os.environ.get("CI")


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
@pytest.mark.parametrize("defect", list(DEFECTS))
def test_each_collection_defect_is_refused_at_every_engines_door(tmp_path, capfd, engine, defect):
    line, message, refusers = DEFECTS[defect]
    coll = write_lines(tmp_path / "coll", [clean_lines()[0], line])
    if refusers is not None and engine not in refusers:  # within what this engine stores: indexed as it is
        assert main(["index", str(coll), "--out", str(tmp_path / "ok"), "--engine", engine, "--threads", "1"]) == 0
        manifest = json.loads((tmp_path / "ok" / "manifest.json").read_text())["counts"]
        assert manifest["documents_indexed"] == manifest["collection"]["documents"] == 2
        return
    where = f"{coll / 'docs-00000.jsonl'}:2: "
    out = tmp_path / "out"
    assert main(["index", str(coll), "--out", str(out), "--engine", engine, "--threads", "1"]) == 2
    captured = capfd.readouterr()
    one_error_line(captured.err, captured.out, where, message)
    assert not out.exists()  # no folder at all, let alone one that looks like an index
    with pytest.raises(InputError, match="docs/collections.md") as e:
        index_folder(coll, tmp_path / "api", engine=engine, threads=1)
    assert str(e.value).startswith(where) and message in str(e.value)
    assert not (tmp_path / "api" / "index").exists()


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
def test_a_failed_build_leaves_no_index_and_a_full_folder_is_left_alone(tmp_path, monkeypatch, engine):
    from lsr_eval.engines.registry import get_engine

    coll = write_lines(tmp_path / "coll", clean_lines())
    checked = get_engine(engine)
    real = type(checked.engine).build

    def failing(self, collection, index, threads=2):  # the engine fails after writing part of its index
        real(self, collection, index, threads=threads)
        raise InputError("the engine failed at the end")

    monkeypatch.setattr(type(checked.engine), "build", failing)
    with pytest.raises(InputError, match="failed at the end"):
        checked.build(coll, tmp_path / "new" / "index", threads=1)
    assert not (tmp_path / "new" / "index").exists()
    (tmp_path / "given").mkdir()
    with pytest.raises(InputError, match="failed at the end"):
        checked.build(coll, tmp_path / "given", threads=1)
    assert list((tmp_path / "given").iterdir()) == []  # given empty, left empty
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("someone's file")
    with pytest.raises(InputError, match="already exists and is not empty"):
        checked.build(coll, tmp_path / "full", threads=1)
    assert (tmp_path / "full" / "mine.txt").read_text() == "someone's file"


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
@pytest.mark.parametrize("defect", list(QUERY_DEFECTS))
def test_each_query_defect_is_refused_by_every_engines_search(built, tmp_path, capfd, engine, defect):
    line, message, refusers = QUERY_DEFECTS[defect]
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "vector": {"x": 2}}\n' + line + "\n", encoding="utf-8")
    index = built[engine] / "index"
    if refusers is not None and engine not in refusers:
        assert main(["search", str(index), str(queries), "--out", str(tmp_path / "ok"), "--engine", engine]) == 0
        return
    out = tmp_path / "out"
    assert main(["search", str(index), str(queries), "--out", str(out), "--engine", engine]) == 2
    captured = capfd.readouterr()
    one_error_line(captured.err, captured.out, f"{queries}:2: ", message)
    assert not out.exists()
    with pytest.raises(InputError, match=message):
        search_folder(index, queries, tmp_path / "api", engine=engine)
    assert not (tmp_path / "api").exists()


@pytest.mark.parametrize("engine", ENGINE_PARAMS)
def test_an_empty_query_is_searched_and_counted_as_no_terms(built, tmp_path, capsys, engine):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "vector": {"x": 2}}\n{"id": "q2", "vector": {}}\n')
    assert main(["search", str(built[engine] / "index"), str(queries), "--out", str(tmp_path / "s"), "--engine",
                 engine]) == 0
    assert "2 queries searched (1 without terms, 1 without hits)" in capsys.readouterr().out
    counts = json.loads((tmp_path / "s" / "manifest.json").read_text())["counts"]
    assert counts["queries_file"] == {"queries": 2, "queries_without_terms": 1}
    run = (tmp_path / "s" / "run.trec").read_text().split()
    assert run[0] == "q1" and run[2] == "a" and "q2" not in run  # a: 3 x 2 beats b: 1 x 2


@pytest.mark.parametrize("engine", ["anserini", "pisa"])
def test_round_weights_rounds_half_to_even_and_reports_it(tmp_path, capsys, engine):
    coll = write_lines(tmp_path / "coll", ['{"id": "a", "vector": {"x": 5.7, "y": 2.5}}',
                                           '{"id": "b", "vector": {"x": 6}}'])
    assert main(["index", str(coll), "--out", str(tmp_path / "i"), "--engine", engine, "--round-weights"]) == 0
    assert "2 of 2 documents indexed" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "i" / "manifest.json").read_text())
    assert manifest["counts"]["collection"]["weights_rounded"] == 2 and manifest["experiment"]["round_weights"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # the rounded copy is gone
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q", "vector": {"x": 1, "y": 1}}\n')
    search_folder(tmp_path / "i" / "index", queries, tmp_path / "s", engine=engine)
    scores = [line.split()[2:5] for line in (tmp_path / "s" / "run.trec").read_text().splitlines()]
    assert [(d, float(s)) for d, _, s in scores] == [("a", 8.0), ("b", 6.0)]  # 5.7 -> 6, 2.5 -> 2 (half to even)


def test_the_api_refuses_bad_vectors_naming_the_document_or_query(tmp_path):
    from lsr_eval.api import Index
    from lsr_eval.encode import SparseVectors

    good = SparseVectors(["d1", "d2"], sp.csr_matrix(np.array([[1.0, 0.5], [0.0, 2.0]], dtype=np.float32)),
                         ["x", "y"])
    bad = SparseVectors(["q1"], sp.csr_matrix(np.array([[-1.0, 0.5]], dtype=np.float32)), ["x", "y"])
    with pytest.raises(InputError, match="document 'q1': weight -1.0 of token 'x'.*is negative"):
        Index.build(bad, "pisa", out=tmp_path / "bad")
    with Index.build(good, "pisa", out=tmp_path / "i") as index:
        with pytest.raises(InputError, match="query 'q1': weight -1.0 of token 'x'.*is negative"):
            index.search(bad)
        assert index.counts["index"]["collection"]["documents"] == 2


def test_the_real_console_shows_one_line_and_no_java_trace(tmp_path):
    """A NaN weight through Anserini as a user runs it: before this check, ~25 lines of Java stack trace and a
    count mismatch."""
    coll = write_lines(tmp_path / "coll", [clean_lines()[0], '{"id": "b", "vector": {"x": NaN}}',
                                           clean_lines()[2]])
    done = subprocess.run([sys.executable, "-m", "lsr_eval.cli", "index", str(coll), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    one_error_line(done.stderr, done.stdout, f"{coll / 'docs-00000.jsonl'}:2: ", "NaN, not a finite number")
    assert not (tmp_path / "o").exists()
