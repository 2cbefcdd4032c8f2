"""The PISA engine: hand-computed scores on tiny collections, bad input, and exactness against Anserini on SciFact."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lsr_eval.engines import pisa
from lsr_eval.engines.base import read_marker, write_marker
from lsr_eval.engines.pisa import PisaEngine
from lsr_eval.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[1]
#: pyterrier-pisa is optional: its tests skip without it, except in CI (and the missing-package test always runs).
requires_pisa = pytest.mark.skipif(importlib.util.find_spec("pyterrier_pisa") is None and not os.environ.get("CI"),
                                   reason="pyterrier-pisa is not installed")

#: file order differs from docid order on purpose (ties must come out by docid, not by position)
VECTORS = {"d3": {"a": 2, "b": 3}, "d1": {"a": 1, "c": 5}, "d2": {"b": 1, "c": 1}, "e0": {},
           "z9": {"t": 4}, "a1": {"t": 4}, "m5": {"t": 4}, "b2": {"t": 4, "u": 1}}


def write_collection(folder: Path, vectors: dict[str, dict[str, int]], name: str = "docs-00000.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w", encoding="utf-8") as f:
        for docid, vector in vectors.items():
            f.write(json.dumps({"id": docid, "contents": "", "vector": vector}) + "\n")
    return folder


@pytest.fixture
def tiny(tmp_path):
    counts = PisaEngine().build(write_collection(tmp_path / "coll", VECTORS), tmp_path / "idx", threads=1)
    return tmp_path / "idx", counts


def compare_runs(run: dict, reference: dict, k: int) -> tuple[int, int, list[str]]:
    """(identical queries, queries differing only among documents tied with the score at the cut, other qids).

    The reference's scores are rounded to integers first: true impact scores are integers, and Anserini's
    ScoreTiesAdjusterReranker subtracts 1e-6 per tied document (visible on small scores only)."""
    identical, ties, bad = 0, 0, []
    for qid, ref in reference.items():
        got = list(run[qid].items())
        want = [(d, float(round(s))) for d, s in ref.items()]
        if got == want:
            identical += 1
            continue
        cut = want[-1][1] if len(want) == k else None
        same_scores = [s for _, s in got] == [s for _, s in want]
        above = [h for h in got if h[1] != cut] == [h for h in want if h[1] != cut]
        if cut is not None and same_scores and above:
            ties += 1
        else:
            bad.append(qid)
    return identical, ties, bad


@requires_pisa
def test_scores_are_hand_computed_integer_dot_products_and_empty_documents_count(tiny):
    index, counts = tiny
    assert counts.documents_read == counts.documents_indexed == len(VECTORS)  # e0 (empty vector) included
    assert counts.details["terms"] == 5
    marker = read_marker(index)
    assert marker["engine"] == "pisa" and marker["scale"] == 1.0 and marker["index_encoding"] == "block_simdbp"
    with PisaEngine().open(index) as s:
        # d3 = 2*2 + 1*3 = 7; d1 = 2*1 + 3*5 = 17; d2 = 1*1 + 3*1 = 4
        hits = s.search({"a": 2, "b": 1, "c": 3}, k=10)
        assert hits == [("d1", 17.0), ("d3", 7.0), ("d2", 4.0)]
        assert all(type(score) is float for _, score in hits)
        assert s.search({"a": 2, "b": 1, "c": 3}, k=2) == [("d1", 17.0), ("d3", 7.0)]
        assert s.search({"u": 300, "t": 1}, k=10)[0] == ("b2", 304.0)


@requires_pisa
def test_ties_come_out_by_docid_and_the_cut_is_made_by_docid_too(tiny):
    index, _ = tiny
    with PisaEngine().open(index) as s:
        assert s.search({"t": 1}, k=10) == [("a1", 4.0), ("b2", 4.0), ("m5", 4.0), ("z9", 4.0)]
        # PISA alone keeps an arbitrary two of the four tied documents; as Anserini, the smallest docids are kept
        assert s.search({"t": 1}, k=2) == [("a1", 4.0), ("b2", 4.0)]
        assert s.search({"t": 1, "u": 1}, k=1) == [("b2", 5.0)]


@requires_pisa
def test_long_ties_at_the_cut_are_fetched_until_complete(tmp_path, monkeypatch):
    vectors = {f"doc{i:03d}": {"t": 1} for i in range(99, -1, -1)} | {"top": {"t": 2}}
    PisaEngine().build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx")
    monkeypatch.setattr(pisa, "MAX_ROWS", 7)  # retries split into one-query calls
    with PisaEngine().open(tmp_path / "idx") as s:
        assert s.search({"t": 1}, k=4) == [("top", 2.0), ("doc000", 1.0), ("doc001", 1.0), ("doc002", 1.0)]
        run, counts = s.batch_search({"a": {"t": 3}, "b": {"t": 1}, "c": {"x": 1}}, k=3, threads=2)
    assert list(run["a"].items()) == [("top", 6.0), ("doc000", 3.0), ("doc001", 3.0)]
    assert list(run["b"]) == ["top", "doc000", "doc001"] and run["c"] == {} and counts.hits == 6


@requires_pisa
def test_batch_search_counts_every_query_and_removes_self_hits(tiny, monkeypatch):
    index, _ = tiny
    monkeypatch.setattr(pisa, "CHUNK", 2)  # several chunks with 5 queries
    queries = {"d1": {"c": 1}, "q-empty": {}, "q-unknown": {"nowhere": 3}, "q-zero": {"a": 0},
               "q-ab": {"a": 1, "b": 1}}
    with PisaEngine().open(index) as s:
        run, counts = s.batch_search(queries, k=10, threads=2, remove_query=True)
        assert {qid: list(hits.items()) for qid, hits in run.items()} == {
            "d1": [("d2", 1.0)], "q-empty": [], "q-unknown": [], "q-zero": [],
            "q-ab": [("d3", 5.0), ("d1", 1.0), ("d2", 1.0)]}
        assert counts.queries == 5 and counts.queries_with_hits == 2 and counts.removed_self_hits == 1
        assert counts.queries_without_hits == ["q-empty", "q-unknown", "q-zero"] and counts.hits == 4
        kept, _ = s.batch_search(queries, k=10, threads=1)
        assert list(kept["d1"]) == ["d1", "d2"]
        assert s.describe() | {"index": None} == {
            "engine": "pisa", "package": "pyterrier-pisa", "version": "0.4.9", "index": None,
            "query_algorithm": "maxscore", "index_encoding": "block_simdbp", "scorer": "quantized",
            "query_weighted": True, "ties": "score, then docid (cut included)", "k": 10}
    with pytest.raises(InputError, match="closed"):
        s.search({"a": 1})


@requires_pisa
def test_upper_case_terms_are_not_folded_by_pisa(tmp_path):
    vectors = {"x1": {"Apple": 2}, "x2": {"apple": 3}, "x3": {"^a": 5}, "x4": {"A": 7}, "x5": {"ĠThe": 1}}
    PisaEngine().build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx")
    with PisaEngine().open(tmp_path / "idx") as s:
        for docid, vector in vectors.items():
            ((term, weight),) = vector.items()
            assert s.search({term: 1}) == [(docid, float(weight))], term


@requires_pisa
@pytest.mark.parametrize("algorithm", ["maxscore", "block_max_maxscore", "block_max_wand", "wand", "ranked_or"])
def test_query_algorithms_agree_on_random_impacts(tmp_path, algorithm):
    rng = random.Random(7)
    vectors = {f"doc{i}": {f"t{j}": rng.randint(1, 9) for j in rng.sample(range(40), rng.randint(0, 8))}
               for i in range(400)}
    queries = {f"q{i}": {f"t{j}": rng.randint(1, 20) for j in rng.sample(range(45), 4)} for i in range(30)}
    PisaEngine().build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx")
    with PisaEngine(query_algorithm=algorithm).open(tmp_path / "idx") as s:
        run, counts = s.batch_search(queries, k=20, threads=2)
    assert counts.queries == 30
    for qid, weights in queries.items():  # exhaustive reference: every score, by hand
        scores = {d: float(sum(w * v.get(t, 0) for t, w in weights.items())) for d, v in vectors.items()}
        ranked = sorted(((d, sc) for d, sc in scores.items() if sc > 0), key=lambda h: (-h[1], h[0]))
        assert list(run[qid].items()) == ranked[:20], qid


@requires_pisa
def test_settings_are_checked_and_name_allowed_values(tmp_path):
    with pytest.raises(ConfigError, match="index_encoding 'zip'.*allowed values: ef, .*pefopt.*block_simdbp"):
        PisaEngine(index_encoding="zip")
    with pytest.raises(ConfigError, match="'ranked_and' is not allowed .conjunctive.*: wand, block_max_wand, .*score$"):
        PisaEngine(query_algorithm="ranked_and")
    with pytest.raises(ConfigError, match="batch_size"):
        PisaEngine(batch_size=0)
    with pytest.raises(ConfigError, match="unknown pisa setting.*stemmer.*allowed: index_encoding"):
        PisaEngine(stemmer="porter2")
    from lsr_eval.engines.registry import get_engine

    assert get_engine("pisa", query_algorithm="wand").settings["query_algorithm"] == "wand"
    described = PisaEngine(batch_size=10).describe()
    assert described["engine"] == "pisa" and described["version"] == "0.4.9"
    assert described["settings"] == {"index_encoding": "block_simdbp", "query_algorithm": "maxscore",
                                     "batch_size": 10}


@requires_pisa
def test_small_batches_give_the_same_index(tmp_path, tiny):
    index, _ = tiny
    counts = PisaEngine(batch_size=3).build(tmp_path / "coll", tmp_path / "idx3")
    assert counts.documents_indexed == len(VECTORS)
    with PisaEngine().open(index) as one, PisaEngine().open(tmp_path / "idx3", query_algorithm="ranked_or") as three:
        for q in ({"a": 2, "b": 1, "c": 3}, {"t": 2, "u": 9}, {"b": 4}):
            assert one.search(q) == three.search(q)
    # pyterrier-pisa 0.4.9's PisaToksIndexer corrupts this one: batches 2 and 3 bring the new terms t and u
    for name in ("inv.docs", "inv.freqs", "inv.sizes", "fwd.terms", "fwd.documents"):
        assert (index / name).read_bytes() == (tmp_path / "idx3" / name).read_bytes(), name


@requires_pisa
def test_indexes_of_other_engines_and_unmarked_folders_are_refused(tmp_path, tiny):
    index, _ = tiny
    other = tmp_path / "lucene"
    other.mkdir()
    write_marker(other, "anserini")
    with pytest.raises(InputError, match="built by engine 'anserini'.*engine 'pisa'"):
        PisaEngine().open(other)
    with pytest.raises(InputError, match="not an index lsr-eval built"):
        PisaEngine().open(tmp_path / "coll")
    with pytest.raises(InputError, match="does not exist"):
        PisaEngine().open(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="unknown pisa setting.*threads"):
        PisaEngine().open(index, threads=3)
    (index / "lsr_eval_engine.json").unlink()  # a pyterrier-pisa index (pt_meta.json) is detected as PISA
    with PisaEngine().open(index) as s:
        assert s.search({"c": 1}) == [("d1", 5.0), ("d2", 1.0)]
    (index / "pt_meta.json").write_text(json.dumps({"format": "pisa", "stemmer": "porter2"}))
    with pytest.raises(InputError, match="stemmer 'porter2'"):
        PisaEngine().open(index)


@requires_pisa
def test_an_unmarked_pyterrier_pisa_index_is_searched(tmp_path, tiny):
    import pyterrier_pisa

    index, _ = tiny
    docs = ({"docno": d, "toks": v} for d, v in VECTORS.items())
    pyterrier_pisa.PisaToksIndexer(tmp_path / "pt", "toks", scale=1.0).index(docs)  # one batch: not corrupted
    with PisaEngine().open(index) as ours, PisaEngine().open(tmp_path / "pt") as theirs:
        assert theirs.describe()["index_encoding"] == "block_simdbp"
        for q in ({"a": 2, "b": 1, "c": 3}, {"t": 2, "u": 9}, {"t": 1}):
            assert theirs.search(q, k=3) == ours.search(q, k=3)


@requires_pisa
def test_build_refuses_existing_index_and_bad_collections(tmp_path, tiny):
    index, _ = tiny
    with pytest.raises(InputError, match="already exists and is not empty"):
        PisaEngine().build(tmp_path / "coll", index)
    bad = write_collection(tmp_path / "bad", {"ok": {"a": 1}})
    with open(bad / "docs-00000.jsonl", "a") as f:
        f.write('{"id": "x", "vector": {"a": 1.5}}\n')
    with pytest.raises(InputError, match=r"docs-00000.jsonl:2: not a JsonVectorCollection line"):
        PisaEngine().build(bad, tmp_path / "bad-idx")
    assert not (tmp_path / "bad-idx").exists()  # nothing half-built left behind
    (tmp_path / "empty-idx").mkdir()
    with pytest.raises(InputError, match="none of its 2 documents has a term"):
        PisaEngine().build(write_collection(tmp_path / "blank", {"e1": {}, "e2": {"a": 0}}), tmp_path / "empty-idx")
    assert list((tmp_path / "empty-idx").iterdir()) == []
    with pytest.raises(InputError, match="line break"):
        PisaEngine().build(write_collection(tmp_path / "nl", {"d": {"a\nb": 1}}), tmp_path / "nl-idx")


def test_missing_package_names_the_pip_requirement(monkeypatch):
    from lsr_eval.engines.registry import get_engine

    monkeypatch.setitem(sys.modules, "pyterrier_pisa", None)
    with pytest.raises(ConfigError, match=r"pip install pyterrier-pisa==0\.4\.9"):
        PisaEngine()
    with pytest.raises(ConfigError, match=r"pyterrier-pisa==0\.4\.9"):
        get_engine("pisa")


JVM_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import pyterrier_pisa, pyterrier as pt  # first: it must neither start nor configure a JVM
    assert not any(m.startswith("jnius") for m in sys.modules), "pyterrier imported jnius"
    from lsr_eval.engines.pisa import PisaEngine
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.anserini.searcher import ImpactSearcher
    tmp, queries = Path(sys.argv[1]), json.loads(sys.argv[2])
    PisaEngine().build(tmp / "coll", tmp / "pisa")
    build_index(tmp / "coll", tmp / "lucene", "impact", threads=1)
    with PisaEngine().open(tmp / "pisa") as p:
        prun, _ = p.batch_search(queries, k=5, threads=2)
        with ImpactSearcher(str(tmp / "lucene")) as a:  # both engines open at once
            arun, _ = a.batch_search(queries, k=5, threads=2)
        prun_after = {qid: dict(p.search(w, k=5)) for qid, w in queries.items()}
    print(json.dumps({"pisa": prun, "pisa_after": prun_after, "anserini": arun, "pt_java": pt.java.started()}))
""")


@requires_pisa
def test_pyterrier_and_lsr_eval_jvm_share_a_process(tmp_path):
    rng = random.Random(3)
    vectors = {f"doc{i:03d}": {f"t{j}": rng.randint(1, 4) for j in rng.sample(range(12), rng.randint(0, 3))}
               for i in range(120)}
    queries = {f"q{i}": {f"t{j}": rng.randint(1, 3) for j in rng.sample(range(14), 2)} for i in range(15)}
    write_collection(tmp_path / "coll", vectors)
    out = subprocess.run([sys.executable, "-c", JVM_SCRIPT, str(tmp_path), json.dumps(queries)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["pt_java"] is False and result["pisa"] == result["pisa_after"]
    identical, ties, bad = compare_runs(result["pisa"], result["anserini"], k=5)
    assert bad == [] and identical == 15 and ties == 0


@requires_pisa
def test_exact_against_anserini_on_scifact(scifact_impact, tmp_path):
    """The key check: a PISA index of the SciFact splade-tiny collection returns Anserini's scores at every rank,
    and Anserini's documents except among those tied with the score at the cut; nDCG@10 is the same."""
    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.evaluation import evaluate

    counts = PisaEngine().build(scifact_impact.collection, tmp_path / "pisa", threads=2)
    assert counts.documents_read == counts.documents_indexed == scifact_impact.documents
    queries = scifact_impact.queries
    with PisaEngine().open(tmp_path / "pisa") as s:
        run, pcounts = s.batch_search(queries, k=1000, threads=2)
        first = next(iter(queries))
        assert s.search(queries[first], k=1000) == list(run[first].items())
    with ImpactSearcher(str(scifact_impact.anserini_index)) as a:
        reference, acounts = a.batch_search(queries, k=1000, threads=2)
    assert pcounts.to_dict() == acounts.to_dict() and pcounts.queries == len(queries) == 300
    identical, ties, bad = compare_runs(run, reference, k=1000)
    assert bad == [] and identical + ties == 300  # the criterion: same scores at each rank, same documents but ties
    assert identical == 300  # and even the tied documents at the cut, as the cut is made by docid
    assert run == reference  # SciFact's scores are large: Anserini's tie adjustment leaves them unchanged
    measures = ["nDCG@10"]
    assert evaluate(scifact_impact.qrels, run, measures) == evaluate(scifact_impact.qrels, reference, measures)
