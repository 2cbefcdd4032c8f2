"""Anserini search with bulk hits (lsr_eval.anserini.hits): the same runs, scores and tie order as Anserini's own
``SimpleSearcher``/``SimpleImpactSearcher`` (the reference), ties at the rank-k cut included, and the engine seam."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lsr_eval.anserini.collections import write_json_collection
from lsr_eval.anserini.hits import parse_hits
from lsr_eval.anserini.indexer import build_index
from lsr_eval.anserini.searcher import Bm25Searcher, ImpactSearcher
from lsr_eval.engines.base import MARKER, check_index_engine
from lsr_eval.engines.registry import ENGINES, get_engine, parse_option, split_options
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export.collection import iter_collection


def _reference(searcher, java_result, qids) -> dict:
    """A run read the slow way from Anserini's ``Map<String, ScoredDoc[]>`` (one JNI call per field per hit)."""
    return {q: {h.docid: float(h.score) for h in (java_result.get(q) or [])} for q in qids}


def _java_list(items):
    from lsr_eval.anserini.jvm import autoclass

    lst = autoclass("java.util.ArrayList")()
    for x in items:
        lst.add(x)
    return lst


def test_parse_hits_reads_lucene_text():
    docs, scores = parse_hits("[doc=12 score=3.5 shardIndex=-1, doc=3 score=1.0E-4 shardIndex=-1 fields=[x]]")
    assert docs.tolist() == [12, 3] and scores.tolist() == [np.float32(3.5), np.float32(1e-4)]
    assert parse_hits("[]")[0].size == 0


def _impact_collection(tmp_path, vectors: dict) -> object:
    coll = tmp_path / "coll"
    coll.mkdir()
    with open(coll / "docs-00000.jsonl", "w") as f:
        for doc_id, vec in vectors.items():
            f.write(json.dumps({"id": doc_id, "contents": "", "vector": vec}) + "\n")
    return coll


def test_ties_across_the_cut_follow_anserini(tmp_path):
    """Twelve documents with one score, indexed in an order unlike their docids: the top 5 must be the five smallest
    docids (Anserini's sort), found through the sorted fallback, not Lucene's index order."""
    ids = ["d09", "d03", "d11", "d01", "d07", "d05", "d10", "d02", "d12", "d04", "d08", "d06"]
    vectors = {d: {"x": 2} for d in ids} | {"top": {"x": 3}, "low": {"x": 1}}
    build_index(_impact_collection(tmp_path, vectors), tmp_path / "idx", "impact", threads=1)
    with ImpactSearcher(tmp_path / "idx") as s:
        hits = s.search({"x": 5}, k=6)
        ref = _reference(s, s._s.batch_search(_java_list([_weights({"x": 5})]),
                                              _java_list(["q"]), 6, 1), ["q"])["q"]
    assert [d for d, _ in hits] == ["top", "d01", "d02", "d03", "d04", "d05"]
    assert dict(hits) == ref and list(dict(hits)) == list(ref)
    assert hits[0][1] == 15.0 and hits[1][1] == 10.0 and hits[2][1] == np.float32(10) - np.float32(1e-6)


def _weights(m: dict):
    from lsr_eval.anserini.jvm import autoclass

    jm = autoclass("java.util.HashMap")()
    for t, w in m.items():
        jm.put(t, autoclass("java.lang.Integer")(int(w)))
    return jm


def test_bm25_scifact_equals_anserini_simple_searcher(tmp_path, scifact_dir):
    from lsr_eval.data.datasets import load_dataset

    ds = load_dataset(str(scifact_dir), "test")
    write_json_collection(ds.docs(), tmp_path / "coll")
    build_index(tmp_path / "coll", tmp_path / "idx", "bm25-flat", threads=2)
    queries = ds.queries()
    with Bm25Searcher(tmp_path / "idx") as s:
        ours, counts = s.batch_search(queries, k=1000, threads=2)
        qids = [q.id for q in queries]
        ref = _reference(s, s._s.batch_search(_java_list(q.text for q in queries), _java_list(qids), 1000, 2), qids)
    assert counts.queries == len(queries) == 300 and counts.hits == sum(map(len, ours.values()))
    same = [q for q in qids if ours[q] == ref[q] and list(ours[q]) == list(ref[q])]
    assert len(same) == 300, [q for q in qids if q not in same][:5]


def test_impact_scifact_equals_anserini_simple_impact_searcher(scifact_impact):
    queries = scifact_impact.queries
    with ImpactSearcher(scifact_impact.anserini_index) as s:
        for k in (10, 1000):
            ours, counts = s.batch_search(queries, k=k, threads=2)
            maps = _java_list(_weights(w) for w in queries.values())
            ref = _reference(s, s._s.batch_search(maps, _java_list(list(queries)), k, 2), list(queries))
            differ = [q for q in queries if ours[q] != ref[q] or list(ours[q]) != list(ref[q])]
            assert not differ, (k, differ[:5])
            assert counts.queries == len(queries) and counts.queries_with_hits + len(counts.queries_without_hits) \
                == len(queries)
        one = s.search(next(iter(queries.values())), k=1000)
    first = next(iter(queries))
    assert dict(one) == ours[first]


def test_impact_query_validation(tmp_path):
    build_index(_impact_collection(tmp_path, {"a": {"x": 1}}), tmp_path / "idx", "impact", threads=1)
    with ImpactSearcher(tmp_path / "idx", max_clauses=2) as s:
        with pytest.raises(InputError, match="query q has 3 terms"):
            s.search({"x": 1, "y": 1, "z": 1}, qid="q")
        with pytest.raises(InputError, match="whitespace"):
            s.search({"a b": 1}, qid="q")
        run, counts = s.batch_search({"q1": {}, "q2": {"x": 0}, "q3": {"x": 4}}, k=10, threads=2)
    assert run == {"q1": {}, "q2": {}, "q3": {"a": 4.0}} and counts.queries_without_hits == ["q1", "q2"]


def test_engine_registry_and_markers(tmp_path):
    with pytest.raises(ConfigError,
                       match="unknown engine 'lucene'; known engines: anserini, pisa, seismic, bmp, qdrant"):
        get_engine("lucene")
    assert set(ENGINES) == {"anserini", "pisa", "seismic", "bmp", "qdrant"}
    with pytest.raises(ConfigError, match="no option 'query_cut'.*search options: max_clauses"):
        split_options("anserini", {"query_cut": 3})
    assert split_options("anserini", {"max_clauses": 4096}) == ({}, {"max_clauses": 4096})
    assert parse_option("heap_factor=0.9") == ("heap_factor", 0.9) and parse_option("query_cut=10") == ("query_cut", 10)
    with pytest.raises(ConfigError, match="not key=value"):
        parse_option("query_cut")
    coll = _impact_collection(tmp_path, {"a": {"x": 1}, "b": {}})
    engine = get_engine("anserini")
    counts = engine.build(coll, tmp_path / "idx")
    assert counts.documents_read == counts.documents_indexed == 2  # the empty document is kept
    assert json.loads((tmp_path / "idx" / MARKER).read_text())["engine"] == "anserini"
    with pytest.raises(InputError, match="built by engine 'anserini'; it cannot be searched with engine 'pisa'"):
        check_index_engine(tmp_path / "idx", "pisa")
    with engine.open(tmp_path / "idx") as s:
        assert s.search({"x": 2}, k=5) == [("a", 2.0)] and s.describe()["engine"] == "anserini"
    with pytest.raises(ConfigError, match="not empty"):
        engine.build(coll, tmp_path / "idx")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "d.jsonl").write_text('{"id": "a", "vector": {"x": 1}}\n{"id": "b", "vector": {"x": 1.5}}\n')
    with pytest.raises(InputError, match=r"d.jsonl:2: .*'x' is 1.5"):
        list(iter_collection(tmp_path / "bad"))


def test_missing_engine_package_names_pip(monkeypatch):
    import sys

    from lsr_eval.engines.registry import require

    monkeypatch.setitem(sys.modules, "seismic", None)
    with pytest.raises(ConfigError, match=r"pip install pyseismic-lsr==0\.5\.4"):
        require("seismic", "seismic")
