"""Anserini indexing and search in process, on tiny collections with hand-checked scores."""

from __future__ import annotations

import json

import pytest

from lsr_eval.anserini.collections import write_json_collection
from lsr_eval.anserini.indexer import build_index
from lsr_eval.anserini.searcher import Bm25Searcher, ImpactSearcher
from lsr_eval.data.types import Document, Query
from lsr_eval.errors import ConfigError, InputError

DOCS = [Document("a", "the cat sat on the mat"), Document("b", "dogs chase cats", title="Dogs"),
        Document("c", "a bird in the hand"), Document("d", "cat cat cat")]


def _bm25_index(tmp_path, docs, name):
    coll = write_json_collection(docs, tmp_path / f"{name}-coll")
    assert coll.documents == len(docs)
    return build_index(tmp_path / f"{name}-coll", tmp_path / name, "bm25-flat", threads=1)


def test_bm25_index_counts_and_empty_documents_are_indexed_without_changing_scores(tmp_path):
    plain = _bm25_index(tmp_path, DOCS, "plain")
    assert plain.total_indexed == 4 and plain.empty == 0
    with_empty = _bm25_index(tmp_path, DOCS + [Document("e", ""), Document("f", "  ", title="")], "empty")
    assert with_empty.empty == 2 and with_empty.empty_appended == 2 and with_empty.total_indexed == 6
    q = [Query("q1", "cat"), Query("q2", "dogs")]
    with Bm25Searcher(str(tmp_path / "plain")) as s1, Bm25Searcher(str(tmp_path / "empty")) as s2:
        assert s1.num_docs == 4 and s2.num_docs == 6
        run1, _ = s1.batch_search(q, k=10, threads=1)
        run2, c2 = s2.batch_search(q, k=10, threads=1)
    assert run1 == run2  # the empty documents change no statistic
    # "cat" (Porter: cats -> cat) is in a, b and d; d repeats it three times in a short document
    assert set(run1["q1"]) == {"a", "b", "d"} and max(run1["q1"], key=run1["q1"].get) == "d"
    assert c2.queries == 2 and c2.queries_with_hits == 2


def test_bm25_remove_query_and_queries_without_hits(tmp_path):
    _bm25_index(tmp_path, DOCS + [Document("q1", "cat food")], "idx")
    with Bm25Searcher(str(tmp_path / "idx")) as s:
        run, counts = s.batch_search([Query("q1", "cat"), Query("q9", "zebra")], k=10, threads=2, remove_query=True)
    assert "q1" not in run["q1"] and counts.removed_self_hits == 1
    assert run["q9"] == {} and counts.queries_without_hits == ["q9"]


def test_bm25_parameters_are_validated(tmp_path):
    with pytest.raises(ConfigError, match="k1"):
        Bm25Searcher(str(tmp_path), k1=-1)


def _impact_index(tmp_path, vectors):
    coll = tmp_path / "vcoll"
    coll.mkdir()
    with open(coll / "docs-00000.jsonl", "w") as f:
        for doc_id, vec in vectors.items():
            f.write(json.dumps({"id": doc_id, "contents": "", "vector": vec}) + "\n")
    return build_index(coll, tmp_path / "vidx", "impact", threads=1)


def test_impact_scores_are_integer_dot_products_and_empty_vectors_are_indexed(tmp_path):
    vectors = {"d1": {"hello": 100, "world": 50}, "d2": {}, "d3": {"hello": 3, "##s": 7}, "d4": {"world": 2},
               "d5": {"hello": 0}}
    counts = _impact_index(tmp_path, vectors)
    assert counts.indexed == 3 and counts.empty == 2 and counts.empty_appended == 2 and counts.total_indexed == 5
    with ImpactSearcher(str(tmp_path / "vidx")) as s:
        assert s.num_docs == 5
        assert s.search({".": 1, "hello": 0}, k=10) == []  # the placeholder left no posting
        hits = s.search({"hello": 2, "world": 1, "##s": 5}, k=10)
        # hand-computed: d1 = 2*100 + 1*50 = 250; d3 = 2*3 + 5*7 = 41; d4 = 1*2 = 2; d2 has no posting
        assert hits == [("d1", 250.0), ("d3", 41.0), ("d4", 2.0)]
        run, counts = s.batch_search({"q1": {"world": 3}, "q2": {"nothing": 1}}, k=10, threads=2)
    assert run == {"q1": {"d1": 150.0, "d4": 6.0}, "q2": {}} and counts.queries_without_hits == ["q2"]


def test_impact_query_over_clause_limit_names_the_query(tmp_path):
    _impact_index(tmp_path, {"d1": {"t0": 1}})
    with ImpactSearcher(str(tmp_path / "vidx"), max_clauses=1024) as s:
        big = {f"t{i}": 1 for i in range(1025)}
        with pytest.raises(InputError, match="query q7 has 1025 terms"):
            s.batch_search({"q7": big}, k=5)
    with ImpactSearcher(str(tmp_path / "vidx"), max_clauses=40000) as s:
        assert s.search({f"t{i}": 1 for i in range(30000)}, k=5) == [("d1", 1.0)]
