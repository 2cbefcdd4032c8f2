"""The Qdrant engine: in local mode, hand-computed scores, exactness against numpy's dot products with ties and
zero-score documents, the 2^24 limit, the collection's layout, resumed builds, NFCorpus' tied runs against Anserini;
through a server URL (a stand-in answering with Qdrant's Rust engine, qdrant_stand_in.py), the same exactness, resume,
key handling and SciFact against Anserini; a port where nothing answers; the exactness check on qdrant-edge itself.
SciFact in local mode against Anserini and PISA: results/benchmarks/scifact-splade-tiny-qdrant (committed)."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from test_engine_pisa import VECTORS, differing, tie, write_collection

from lsr_eval.cli import main
from lsr_eval.engines import qdrant
from lsr_eval.engines.base import read_marker
from lsr_eval.engines.registry import get_engine
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.search import ties
from lsr_eval.search.ties import adjusted_hits, complete_top_k

#: qdrant-client is the extra lsr-eval[qdrant]: its tests skip without it, except in CI (the missing-package test
#: always runs)
requires_qdrant = pytest.mark.skipif(importlib.util.find_spec("qdrant_client") is None and not os.environ.get("CI"),
                                     reason="qdrant-client is not installed")
#: qdrant-edge-py (test extra): the Rust engine in process, behind the stand-in server too
requires_edge = pytest.mark.skipif(importlib.util.find_spec("qdrant_edge") is None and not os.environ.get("CI"),
                                   reason="qdrant-edge-py is not installed")

@pytest.fixture
def tiny(tmp_path):
    counts = get_engine("qdrant").build(write_collection(tmp_path / "coll", VECTORS), tmp_path / "idx")
    return tmp_path / "idx", counts


def random_collection(seed: int, documents: int = 300, terms: int = 40) -> tuple[dict, dict]:
    """Documents and queries with weights 0-3 over few terms (many tied scores, zero weights, documents that share
    no term with a query), docids in random order."""
    rng = random.Random(seed)
    docids = rng.sample([f"doc{i:04d}" for i in range(documents * 2)], documents)
    vocab = [f"t{i}" for i in range(terms)]
    docs = {d: {t: rng.randint(0, 3) for t in rng.sample(vocab, rng.randint(0, 8))} for d in docids}
    queries = {f"q{i}": {t: rng.randint(0, 3) for t in rng.sample(vocab, rng.randint(1, 5))} for i in range(40)}
    queries["unknown"] = {"never-indexed": 3}
    queries["zero"] = {"t1": 0, "t2": 0}
    return docs, queries


def numpy_run(docs: dict, queries: dict, k: int) -> dict:
    """The exact run by numpy: int64 dot products, documents scoring > 0, score desc then docid, cut at k, Anserini's
    adjusted scores."""
    vocab = sorted({t for v in [*docs.values(), *queries.values()] for t in v})
    col = {t: i for i, t in enumerate(vocab)}
    docids = list(docs)
    matrix = np.zeros((len(docids), len(vocab)), dtype=np.int64)
    for r, d in enumerate(docids):
        for t, w in docs[d].items():
            matrix[r, col[t]] = w
    run = {}
    for qid, weights in queries.items():
        q = np.zeros(len(vocab), dtype=np.int64)
        for t, w in weights.items():
            q[col[t]] = w
        scores = matrix @ q
        ranked = sorted((-int(s), d) for s, d in zip(scores, docids) if s > 0)[:k]
        run[qid] = dict(adjusted_hits([d for _, d in ranked], [float(-s) for s, _ in ranked]))
    return run


@requires_qdrant
def test_scores_are_hand_computed_integer_dot_products_and_empty_documents_count(tiny):
    index, counts = tiny
    assert counts.documents_read == counts.documents_indexed == len(VECTORS)  # e0 (empty vector) included
    assert counts.details["terms"] == 5 and counts.details["documents_without_terms"] == 1
    marker = read_marker(index)
    assert marker["engine"] == "qdrant" and marker["location"] == "qdrant" and marker["url"] is None
    assert marker["version"] == qdrant.installed_version("qdrant-client") and marker["server_version"] is None
    assert marker["collection"] == "idx" and marker["documents"] == len(VECTORS)
    with get_engine("qdrant").open(index) as s:
        # d3 = 2*2 + 1*3 = 7; d1 = 2*1 + 3*5 = 17; d2 = 1*1 + 3*1 = 4
        assert s.search({"a": 2, "b": 1, "c": 3}, k=10) == [("d1", 17.0), ("d3", 7.0), ("d2", 4.0)]
        assert s.search({"a": 2, "b": 1, "c": 3}, k=2) == [("d1", 17.0), ("d3", 7.0)]
        assert s.search({"u": 300, "t": 1}, k=10)[0] == ("b2", 304.0)
        assert s.describe()["mode"] == "local" and s.describe()["k"] == 10


@requires_qdrant
def test_ties_come_out_by_docid_and_the_cut_is_made_by_docid_too(tiny, monkeypatch):
    index, _ = tiny
    with get_engine("qdrant").open(index) as s:
        limits = []
        ask = s.conn.client.query_batch_points
        monkeypatch.setattr(s.conn.client, "query_batch_points",
                            lambda name, requests: limits.extend(r.limit for r in requests) or ask(name, requests))
        # four documents score 4 (z9, a1, m5 and b2, stored in that order): ranked a1, b2, m5, z9
        assert s.search({"t": 1}, k=10) == [("a1", 4.0), ("b2", tie(4, 1)), ("m5", tie(4, 2)), ("z9", tie(4, 3))]
        limits.clear()
        # k = 2 cuts inside the run: k + 1 = 3 hits all tie, so the run is fetched again with 6
        assert s.search({"t": 1}, k=2) == [("a1", 4.0), ("b2", tie(4, 1))]
        assert limits == [3, 6]


@requires_qdrant
def test_batch_search_counts_every_query_and_removes_self_hits(tiny):
    index, _ = tiny
    with get_engine("qdrant").open(index) as s:
        run, counts = s.batch_search({"q1": {"t": 1}, "q2": {}, "q3": {"x": 1}, "d1": {"a": 1}, "q5": {"a": 0}}, k=3,
                                     remove_query=True)
    assert run == {"q1": {"a1": 4.0, "b2": tie(4, 1), "m5": tie(4, 2)}, "q2": {}, "q3": {}, "d1": {"d3": 2.0},
                   "q5": {}}
    assert counts.queries == 5 and counts.queries_without_hits == ["q2", "q3", "q5"] and counts.removed_self_hits == 1


@requires_qdrant
@pytest.mark.parametrize("seed", [0, 1])
def test_runs_equal_numpy_dot_products_with_ties_and_zero_scores(tmp_path, seed):
    docs, queries = random_collection(seed)
    index = tmp_path / "idx"
    get_engine("qdrant", batch_size=64).build(write_collection(tmp_path / "coll", docs), index)
    with get_engine("qdrant").open(index) as s:
        for k in (10, 1000):
            run, counts = s.batch_search(queries, k=k)
            assert not differing(run, numpy_run(docs, queries, k))
            assert counts.queries == len(queries) and {"unknown", "zero"} <= set(counts.queries_without_hits)
            assert run["q0"] == dict(s.search(queries["q0"], k=k, qid="q0"))
    tied = sum(len({round(v) for v in hits.values()}) < len(hits) for hits in numpy_run(docs, queries, 1000).values())
    assert tied > 30  # the check holds many tied runs (the adjusted scores differ only on ties)


@requires_qdrant
def test_the_exactness_check_fails_without_the_re_sort(tmp_path, monkeypatch):
    """Negative case: with Qdrant's own order of tied hits (no re-sort by docid), the comparison finds differences."""
    docs, queries = random_collection(0)
    index = tmp_path / "idx"
    get_engine("qdrant").build(write_collection(tmp_path / "coll", docs), index)

    def as_qdrant_ranks(scores, docids, k):
        return adjusted_hits(docids[:k], np.asarray(scores[:k], dtype=np.float32))

    monkeypatch.setattr(ties, "ranked_hits", as_qdrant_ranks)   # the re-sort every exact engine's top k goes through
    with get_engine("qdrant").open(index) as s:
        run, _ = s.batch_search(queries, k=10)
    assert len(differing(run, numpy_run(docs, queries, 10))) > 5


@requires_qdrant
def test_the_collection_is_float32_sparse_without_idf_and_another_layout_is_refused(tiny, tmp_path):
    """The layout is lsr-eval's (a float32 sparse field, no modifier), read back from Qdrant; a collection made
    otherwise is refused at build and search, in one line."""
    from qdrant_client import QdrantClient, models

    index, _ = tiny
    client = QdrantClient(path=str(index / "qdrant"))
    try:
        params = client.get_collection("idx").config.params
        sparse = params.sparse_vectors[qdrant.VECTOR]
        assert sparse.index.datatype == models.Datatype.FLOAT32 and sparse.modifier == models.Modifier.NONE
        assert not params.vectors
        layouts = {"idf": models.SparseVectorParams(modifier=models.Modifier.IDF),
                   "f16": models.SparseVectorParams(index=models.SparseIndexParams(datatype=models.Datatype.FLOAT16)),
                   "other": models.SparseVectorParams()}
        for name, layout in layouts.items():
            client.create_collection(name, vectors_config={}, sparse_vectors_config={
                "other" if name == "other" else qdrant.VECTOR: layout})
    finally:
        client.close()
    expected = {"idf": "has the modifier idf", "f16": "has float16 values (not exact)",
                "other": "has no sparse vector field 'splade'"}
    for name, message in expected.items():
        pattern = f"collection '{name}' at local mode at .*{re.escape(message)}, not lsr-eval's"
        with pytest.raises(InputError, match=pattern):
            get_engine("qdrant", location=str(index / "qdrant"), collection=name).build(
                write_collection(tmp_path / "coll", VECTORS), tmp_path / f"idx-{name}")
        assert not (tmp_path / f"idx-{name}").exists()   # nothing half-written is left as an index
    marker = read_marker(index)
    (index / "lsr_eval_engine.json").write_text(json.dumps({**marker, "collection": "idf"}))
    with pytest.raises(InputError, match="has the modifier idf"):
        get_engine("qdrant").open(index)


@requires_qdrant
def test_scores_below_2_24_are_exact_and_above_are_refused(tmp_path):
    big = {"a": 2**24 - 1, "b": 2**23, "c": 2**23 + 1, "d": 1}
    index = tmp_path / "idx"
    get_engine("qdrant").build(write_collection(tmp_path / "coll", {"x": big, "y": {"d": 2}}), index)
    with get_engine("qdrant").open(index) as s:
        assert s.search({"a": 1}, k=5) == [("x", 16777215.0)]
        assert s.search({"d": 3}, k=5) == [("y", 6.0), ("x", 3.0)]
        with pytest.raises(InputError, match=r"query big: Qdrant scored 16777216 >= 2\^24, .* smaller scale"):
            s.search({"b": 1, "c": 1}, k=5, qid="big")   # 2^24 + 1, rounded by float32
        with pytest.raises(InputError, match=r"query q2: Qdrant scored"):
            s.batch_search({"q1": {"d": 1}, "q2": {"a": 2}}, k=5)
    with pytest.raises(InputError, match=r"document 'z': weight of 'a' is 16777216, above 16777215 \(the largest "
                                         r"integer below 2\^24: Qdrant stores and scores float32\)"):
        get_engine("qdrant").build(write_collection(tmp_path / "c2", {"z": {"a": 2**24}}), tmp_path / "i2")


@requires_qdrant
def test_a_build_resumes_into_the_same_collection_and_refuses_another_corpus(tmp_path):
    store = tmp_path / "store"
    coll = write_collection(tmp_path / "coll", VECTORS)
    first = get_engine("qdrant", location=str(store), collection="c").build(coll, tmp_path / "i1")
    again = get_engine("qdrant", location=str(store), collection="c", batch_size=3).build(coll, tmp_path / "i2")
    assert first.details["points_skipped"] == 0 and again.details["points_skipped"] == len(VECTORS)
    assert read_marker(tmp_path / "i2")["location"] == str(store.resolve())
    with get_engine("qdrant").open(tmp_path / "i1") as s:
        assert s.search({"t": 1}, k=2) == [("a1", 4.0), ("b2", tie(4, 1))]
    changed = write_collection(tmp_path / "c2", {**VECTORS, "d2": {"b": 2}})
    with pytest.raises(InputError, match=r"collection 'c' at local mode at .* already holds document 'd2' with another "
                                         r"vector than .*c2 gives it; choose another collection name"):
        get_engine("qdrant", location=str(store), collection="c").build(changed, tmp_path / "i3")
    fewer = write_collection(tmp_path / "c3", {"d3": VECTORS["d3"]})
    with pytest.raises(InputError, match=r"holds 8 points for the 1 documents of .*c3: it holds other points too"):
        get_engine("qdrant", location=str(store), collection="c").build(fewer, tmp_path / "i4")
    assert not (tmp_path / "i3").exists() and not (tmp_path / "i4").exists()


@requires_qdrant
def test_an_index_whose_collection_changed_or_went_is_refused(tiny):
    index, _ = tiny
    with get_engine("qdrant").open(index):   # local mode's file lock: one client at a time
        with pytest.raises(ConfigError, match=r"local storage .*idx/qdrant is open in another client .*; close that "
                                              r"one first, or use a Qdrant server \(url=\)"):
            get_engine("qdrant").open(index)
    marker = read_marker(index)
    (index / "lsr_eval_engine.json").write_text(json.dumps({**marker, "documents": 9}))
    with pytest.raises(InputError, match=r"holds 8 points, the index .*idx recorded 9: rebuild it"):
        get_engine("qdrant").open(index)
    with pytest.raises(InputError, match=r"Qdrant at local mode at .*qdrant holds no collection 'gone': rebuild"):
        get_engine("qdrant", collection="gone").open(index)


@requires_qdrant
def test_a_collection_rebuilt_with_other_vectors_is_refused_by_an_older_index(tmp_path):
    """Same collection, same number of points, other vectors: the index built first refuses to search it (the
    digests of its first documents, recorded in its marker, no longer match)."""
    from qdrant_client import QdrantClient

    store, settings = tmp_path / "store", {"collection": "c"}
    get_engine("qdrant", location=str(store), **settings).build(write_collection(tmp_path / "c1", VECTORS),
                                                                tmp_path / "i1")
    assert [d for d, _ in read_marker(tmp_path / "i1")["probe"]] == list(VECTORS)
    client = QdrantClient(path=str(store))
    client.delete_collection("c")
    client.close()
    changed = write_collection(tmp_path / "c2", {**VECTORS, "d3": {"a": 9}})
    get_engine("qdrant", location=str(store), **settings).build(changed, tmp_path / "i2")
    with pytest.raises(InputError, match=r"collection 'c' at local mode at .*store no longer holds the vectors the "
                                         r"index .*i1 was built with \(document 'd3'\): rebuild it"):
        get_engine("qdrant").open(tmp_path / "i1")
    with get_engine("qdrant").open(tmp_path / "i2") as s:
        assert s.search({"a": 1}, k=1) == [("d3", 9.0)]


@requires_qdrant
def test_settings_are_declared_and_checked():
    with pytest.raises(ConfigError, match="url .* or location .*, not both"):
        get_engine("qdrant", url="http://localhost:6333", location="/tmp/x")
    with pytest.raises(ConfigError, match="qdrant: batch_size must be >= 1, got 0"):
        get_engine("qdrant", batch_size=0)
    with pytest.raises(ConfigError, match="qdrant: url must be .*http://host:port"):
        get_engine("qdrant", url="localhost:6333")
    with pytest.raises(ConfigError, match="qdrant: collection must be"):
        get_engine("qdrant", collection="a/b")
    with pytest.raises(ConfigError, match="qdrant has no search option query_cut"):
        get_engine("qdrant").check_search(query_cut=3)


@requires_qdrant
def test_a_server_that_does_not_answer_is_one_line_naming_the_url(tmp_path, capfd):
    coll = write_collection(tmp_path / "coll", VECTORS)
    rc = main(["index", str(coll), "--out", str(tmp_path / "out"), "--engine", "qdrant",
               "--engine-option", "url=http://127.0.0.1:9"])
    err = capfd.readouterr().err
    assert rc != 0 and "Traceback" not in err
    line = next(x for x in err.splitlines() if "error:" in x)
    assert "Qdrant at http://127.0.0.1:9 does not answer while connecting" in line and "url=http://host:6333" in line
    assert not (tmp_path / "out").exists()


@pytest.fixture
def server(monkeypatch):
    """The stand-in server (tests/integration/qdrant_stand_in.py: Qdrant's Rust engine behind the REST calls the
    engine makes), asking for the key in $MY_QDRANT_KEY; yields (url, state)."""
    from qdrant_stand_in import StandIn

    stand_in = StandIn(api_key="s3cret")
    url, http_server = stand_in.serve()
    monkeypatch.setenv("MY_QDRANT_KEY", "s3cret")
    yield url, stand_in
    http_server.shutdown()


@requires_qdrant
@requires_edge
def test_the_server_path_builds_resumes_and_searches_exactly(tmp_path, server):
    """Through qdrant-client's HTTP client against Qdrant's own scoring code: the run is numpy's (ties and zero
    scores included), a second build into the same collection skips every point, and the key is sent, never
    recorded."""
    url, stand_in = server
    docs, queries = random_collection(1)
    coll = write_collection(tmp_path / "coll", docs)
    first = get_engine("qdrant", url=url, api_key_env="MY_QDRANT_KEY", collection="scifact").build(coll,
                                                                                                  tmp_path / "i1")
    again = get_engine("qdrant", url=url, api_key_env="MY_QDRANT_KEY", collection="scifact").build(coll,
                                                                                                  tmp_path / "i2")
    assert (first.details["mode"], first.details["points_skipped"], again.details["points_skipped"]) == (
        "server", 0, len(docs))
    marker = read_marker(tmp_path / "i1")
    assert marker["url"] == url and marker["server_version"] == "1.17.0-stand-in" and marker["location"] is None
    assert "s3cret" not in (tmp_path / "i1" / "lsr_eval_engine.json").read_text()
    with get_engine("qdrant").open(tmp_path / "i1") as s:
        for k in (10, 1000):
            run, _ = s.batch_search(queries, k=k)
            assert not differing(run, numpy_run(docs, queries, k))
        assert s.describe()["server_version"] == "1.17.0-stand-in" and s.describe()["url"] == url
    assert ("POST", "/collections/scifact/points/query/batch") in stand_in.requests
    # without collection=, each index folder gets its own collection on the server, even when both are named index
    for parent, corpus in (("a", docs), ("b", VECTORS)):
        get_engine("qdrant", url=url, api_key_env="MY_QDRANT_KEY").build(
            write_collection(tmp_path / f"c-{parent}", corpus), tmp_path / parent / "index")
    names = [read_marker(tmp_path / p / "index")["collection"] for p in "ab"]
    assert names[0].startswith("lsr-eval-a-index-") and names[1].startswith("lsr-eval-b-index-")


@requires_qdrant
@requires_edge
def test_a_server_collection_with_another_layout_or_a_wrong_key_is_one_line_naming_the_url(tmp_path, server,
                                                                                            monkeypatch):
    from qdrant_client import QdrantClient, models

    url, _ = server
    client = QdrantClient(url=url, api_key="s3cret", check_compatibility=False)
    client.create_collection("idf", vectors_config={}, sparse_vectors_config={
        qdrant.VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)})
    coll = write_collection(tmp_path / "coll", VECTORS)
    with pytest.raises(InputError) as e:
        get_engine("qdrant", url=url, api_key_env="MY_QDRANT_KEY", collection="idf").build(coll, tmp_path / "i1")
    assert str(e.value).startswith(f"Qdrant collection 'idf' at {url} has the modifier idf, not lsr-eval's layout")
    monkeypatch.setenv("MY_QDRANT_KEY", "wrong")
    with pytest.raises(ConfigError) as e:
        get_engine("qdrant", url=url, api_key_env="MY_QDRANT_KEY").build(coll, tmp_path / "i2")
    assert str(e.value) == (f"Qdrant at {url} refused the API key while connecting (HTTP 403): set $MY_QDRANT_KEY to "
                            "the server's key")
    assert not (tmp_path / "i1").exists() and not (tmp_path / "i2").exists()
    assert "wrong" not in json.dumps(get_engine("qdrant", url=url, api_key_env="MY_QDRANT_KEY").describe())


@requires_qdrant
def test_local_mode_past_its_size_warns_once(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(qdrant, "LOCAL_POINTS", 3)
    with caplog.at_level(logging.WARNING, logger="lsr_eval.engines.qdrant"):
        get_engine("qdrant", batch_size=2).build(write_collection(tmp_path / "coll", VECTORS), tmp_path / "idx")
    assert [r.getMessage() for r in caplog.records if "scans every point" in r.getMessage()] == [
        "qdrant local mode scans every point in Python (meant for up to 3 points): use a Qdrant server "
        "(--engine-option url=...) for larger collections"]


def test_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(ConfigError, match=r"engine 'qdrant' needs the package qdrant-client "
                                          r"\(`pip install 'lsr-eval\[qdrant\]'`\)"):
        get_engine("qdrant")


@requires_qdrant
def test_index_and_search_commands_equal_anserini_on_the_random_collection(tmp_path):
    docs, queries = random_collection(2)
    coll = write_collection(tmp_path / "coll", docs)
    with open(tmp_path / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid, vector in queries.items():
            f.write(json.dumps({"id": qid, "vector": vector}) + "\n")
    runs = {}
    for engine in ("anserini", "qdrant"):
        assert main(["index", str(coll), "--out", str(tmp_path / f"i-{engine}"), "--engine", engine]) == 0
        assert main(["search", str(tmp_path / f"i-{engine}"), str(tmp_path / "queries.jsonl"), "--engine", engine,
                     "--out", str(tmp_path / f"s-{engine}"), "--hits", "100"]) == 0
        runs[engine] = (tmp_path / f"s-{engine}" / "run.trec").read_text().replace(" Anserini", " impact")
    assert runs["qdrant"] == runs["anserini"] and runs["qdrant"].count("\n") > 1000
    manifest = json.loads((tmp_path / "i-qdrant" / "manifest.json").read_text())
    assert manifest["engine"]["package"] == "qdrant-client" and manifest["counts"]["documents_indexed"] == len(docs)


@requires_qdrant
@requires_edge
def test_qdrant_edge_passes_the_same_exactness_check_after_the_same_re_sort(tmp_path):
    """qdrant-edge-py (Qdrant's Rust segment engine in process, beta) over the same points: its float32 scores are
    exact, it drops zero scores as local mode does, and it too returns tied points in no docid order, so the same
    over-fetch and re-sort (:func:`lsr_eval.search.ties.complete_top_k`) make its run numpy's."""
    import qdrant_edge as qe

    docs, queries = random_collection(0)
    vocab: dict[str, int] = {}
    shard = qe.EdgeShard.create(str(tmp_path / "shard"), qe.EdgeConfig(
        sparse_vectors={qdrant.VECTOR: qe.EdgeSparseVectorParams()}))
    points = []
    for docid, vector in docs.items():
        pairs = sorted((vocab.setdefault(t, len(vocab)), float(w)) for t, w in vector.items() if w > 0)
        sparse = {qdrant.VECTOR: qe.SparseVector([i for i, _ in pairs], [w for _, w in pairs])} if pairs else {}
        points.append(qe.Point(qdrant.point_id(docid), sparse, {"docid": docid}))
    shard.update(qe.UpdateOperation.upsert_points(points))
    shard.optimize()
    k, qids, unordered = 10, list(queries), 0
    vectors = [sorted((vocab[t], float(w)) for t, w in queries[q].items() if w > 0 and t in vocab) for q in qids]

    def fetch(positions: list[int], limit: int) -> list[tuple[np.ndarray, list[str]]]:
        nonlocal unordered
        out = []
        for i in positions:
            answer = shard.query(qe.QueryRequest(limit=limit, with_payload=True, query=qe.Query.Nearest(
                qe.SparseVector([t for t, _ in vectors[i]], [w for _, w in vectors[i]]), using=qdrant.VECTOR)))
            scores = np.asarray([p.score for p in answer], dtype=np.float32)
            docids = [p.payload["docid"] for p in answer]
            if limit == k + 1:   # Qdrant's own order of its first answer
                unordered += docids[:k] != [d for _, d in sorted(zip(-scores[:k], docids[:k]))]
            out.append((scores, docids))
        return out

    top = complete_top_k(fetch, [i for i, v in enumerate(vectors) if v], k)
    run = {q: dict(top.get(i, [])) for i, q in enumerate(qids)}
    shard.close()
    assert not differing(run, numpy_run(docs, queries, k))
    assert unordered > 5   # without the re-sort its runs would differ too


BENCH = Path(__file__).resolve().parents[2] / "results" / "benchmarks" / "scifact-splade-tiny-qdrant"


def _committed_run(system: str) -> dict[str, list[tuple[str, float]]]:
    import lzma

    run: dict[str, list[tuple[str, float]]] = {}
    with lzma.open(BENCH / "runs" / system / "scifact" / "run.trec.xz", "rt", encoding="utf-8") as f:
        for line in f:
            qid, _, docid, _, score, _ = line.split()
            run.setdefault(qid, []).append((docid, float(score)))
    return run


def test_the_committed_scifact_benchmark_has_anserinis_run_on_pisa_and_qdrant():
    """results/benchmarks/scifact-splade-tiny-qdrant: in each query's top 1,000 the same documents with the same
    integer scores (and, ties re-sorted, the same list bit for bit), nDCG@10 equal to 4 decimals, and local mode's
    seconds in the manifest only, not in a latency column."""
    import pandas as pd

    table = pd.read_csv(BENCH / "table.csv").set_index("system")
    assert list(table["engine"]) == ["anserini", "pisa", "qdrant"]
    reference = _committed_run("splade-tiny")
    assert len(reference) == 300 and sum(map(len, reference.values())) == 300_000
    for system in ("splade-tiny-pisa", "splade-tiny-qdrant"):
        run = _committed_run(system)
        assert {q: {(d, round(s)) for d, s in hits} for q, hits in run.items()} == \
            {q: {(d, round(s)) for d, s in hits} for q, hits in reference.items()}, system
        assert run == reference, system
        assert round(table.loc[system, "nDCG@10"], 4) == round(table.loc["splade-tiny", "nDCG@10"], 4)
    assert not any(c.startswith("latency") for c in table.columns)
    manifest = json.loads((BENCH / "runs" / "splade-tiny-qdrant" / "scifact" / "manifest.json").read_text())
    assert manifest["search"]["engine"] == "qdrant" and manifest["search"]["mode"] == "local"
    assert manifest["counts"]["index"]["seconds"] > 0 and manifest["throughput"]["search_seconds"] > 0


@requires_qdrant
def test_the_python_api_builds_and_searches_a_qdrant_index(tmp_path):
    import scipy.sparse as sp

    import lsr_eval
    from lsr_eval.encode.protocol import SparseVectors

    vocab = ["a", "b", "c", "t", "u"]
    docs = SparseVectors(list(VECTORS), sp.csr_matrix(np.array(
        [[VECTORS[d].get(t, 0) for t in vocab] for d in VECTORS], dtype=np.float32)), vocab)
    queries = SparseVectors(["q1", "q2"], sp.csr_matrix(np.array([[2, 1, 3, 0, 0], [0, 0, 0, 1, 0]],
                                                                  dtype=np.float32)), vocab)
    with lsr_eval.Index.build(docs, engine="qdrant", scale=1, work=tmp_path / "work") as index:
        run = index.search(queries, k=2)
    assert run == {"q1": {"d1": 17.0, "d3": 7.0}, "q2": {"a1": 4.0, "b2": tie(4, 1)}}


@requires_qdrant
@requires_edge
def test_scifact_through_the_server_path_is_anserinis_run_bit_for_bit(scifact_impact, tmp_path, server):
    """The SciFact splade-tiny collection upserted over HTTP and searched with Qdrant's Rust scoring (the stand-in)
    returns Anserini's run for every query's top 1,000: the same documents, order and tie-adjusted scores."""
    from lsr_eval.anserini.searcher import ImpactSearcher

    url, _ = server
    counts = get_engine("qdrant", url=url, api_key_env="MY_QDRANT_KEY", collection="scifact").build(
        scifact_impact.collection, tmp_path / "qdrant")
    assert counts.documents_read == counts.documents_indexed == scifact_impact.documents
    queries = scifact_impact.queries
    with get_engine("qdrant").open(tmp_path / "qdrant") as s:
        run, qcounts = s.batch_search(queries, k=1000)
    with ImpactSearcher(str(scifact_impact.anserini_index)) as a:
        reference, acounts = a.batch_search(queries, k=1000, threads=2)
    assert qcounts.to_dict() == acounts.to_dict() and qcounts.queries == len(queries) == 300
    assert differing(run, reference) == []


@requires_qdrant
def test_nfcorpus_tied_runs_with_float32_residues_are_anserinis_in_local_mode(tmp_path):
    """The tied runs whose adjusted scores keep a float32 residue (``50.999996`` beside ``51.0``), on real vectors:
    local mode returns Anserini's lists (test_engine_pisa's documents and queries)."""
    from test_engine_pisa import NFCORPUS_QUERIES, nfcorpus_tied_indexes

    from lsr_eval.anserini.searcher import ImpactSearcher

    index, maps = nfcorpus_tied_indexes(tmp_path, "qdrant")
    with get_engine("qdrant").open(Path(index["qdrant"])) as q, ImpactSearcher(index["anserini"]) as a:
        qrun, counts = q.batch_search(maps, k=1000)
        arun, _ = a.batch_search(maps, k=1000, threads=2)
    assert differing(qrun, arun) == [] and counts.hits > 5 * 20
    assert {qid for qid, hits in qrun.items() for score in hits.values() if score != round(score)} == \
        set(NFCORPUS_QUERIES)
