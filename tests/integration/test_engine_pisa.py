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

import numpy as np
import pytest
from conftest import shared_path, splade_tiny_dir, write_beir

from lsr_eval.engines import pisa
from lsr_eval.engines.base import read_marker, write_marker
from lsr_eval.engines.pisa import PisaEngine
from lsr_eval.engines.registry import get_engine
from lsr_eval.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[2]
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


def tie(score: float, d: int) -> float:
    """The ``d``-th document of a tied run as Anserini's ScoreTiesAdjusterReranker reports it: ``score - d * 1e-6``
    in float32 (lsr_eval.search.ties)."""
    return float(np.float32(score) - np.float32(1e-6) * np.float32(d))


def differing(run: dict, reference: dict) -> list[str]:
    """Queries whose ranked lists (docids, order and scores, bit for bit) differ between two runs."""
    return [qid for qid in reference.keys() | run.keys()
            if list(run.get(qid, {}).items()) != list(reference.get(qid, {}).items())]


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
        # scores as Anserini's tie adjuster reports them: 4, 4 - 1e-6, 4 - 2e-6, ... in float32
        assert s.search({"t": 1}, k=10) == [("a1", 4.0), ("b2", tie(4, 1)), ("m5", tie(4, 2)), ("z9", tie(4, 3))]
        # PISA alone keeps an arbitrary two of the four tied documents; as Anserini, the smallest docids are kept
        assert s.search({"t": 1}, k=2) == [("a1", 4.0), ("b2", tie(4, 1))]
        assert s.search({"t": 1, "u": 1}, k=1) == [("b2", 5.0)]


@requires_pisa
def test_long_ties_at_the_cut_are_fetched_until_complete(tmp_path, monkeypatch):
    vectors = {f"doc{i:03d}": {"t": 1} for i in range(99, -1, -1)} | {"top": {"t": 2}}
    PisaEngine().build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx")
    monkeypatch.setattr(pisa, "MAX_ROWS", 7)  # retries split into one-query calls
    with PisaEngine().open(tmp_path / "idx") as s:
        assert s.search({"t": 1}, k=4) == [("top", 2.0), ("doc000", 1.0), ("doc001", tie(1, 1)), ("doc002", tie(1, 2))]
        run, counts = s.batch_search({"a": {"t": 3}, "b": {"t": 1}, "c": {"x": 1}}, k=3, threads=2)
    assert list(run["a"].items()) == [("top", 6.0), ("doc000", 3.0), ("doc001", tie(3, 1))]
    assert list(run["b"]) == ["top", "doc000", "doc001"] and run["c"] == {} and counts.hits == 6


@requires_pisa
def test_small_tied_scores_are_anserinis_bit_for_bit(tmp_path):
    """NFCorpus' case by hand: a tied run at score 51 deep in a list. Anserini's tie adjuster leaves 51 - 1e-6 at
    51.0 but 51 - 2e-6 at 50.999996 (float32); PISA reports the same, as does Anserini's own SimpleImpactSearcher
    (the cut at rank 8 falls inside the run)."""
    from lsr_eval.anserini.indexer import build_index
    from lsr_eval.anserini.searcher import ImpactSearcher

    tied = ["m7", "m2", "m9", "m1", "m5", "m3", "m8", "m4"]  # file order unlike docid order
    vectors = {"top": {"x": 60}, **{d: {"x": 51} for d in tied}, "low": {"x": 3}, "big": {"y": 2}, "b1": {"y": 2}}
    write_collection(tmp_path / "coll", vectors)
    PisaEngine().build(tmp_path / "coll", tmp_path / "pisa")
    build_index(tmp_path / "coll", tmp_path / "lucene", "impact", threads=1)
    queries = {"q51": {"x": 1}, "q102": {"x": 2}, "qy": {"y": 40, "x": 1}}
    with PisaEngine().open(tmp_path / "pisa") as p, ImpactSearcher(tmp_path / "lucene") as a:
        prun, _ = p.batch_search(queries, k=8, threads=2)
        arun, _ = a.batch_search(queries, k=8, threads=2)
        anserini = {qid: dict(a.search_per_hit(w, k=8, qid=qid)) for qid, w in queries.items()}
    assert differing(prun, arun) == [] and differing(prun, anserini) == []
    m = sorted(tied)
    assert list(prun["q51"].items()) == [("top", 60.0), *((d, tie(51, i)) for i, d in enumerate(m[:7]))]
    # float32 steps of 3.8e-6 below 64: d * 1e-6 rounds to 0 (d < 2), one step (d = 2..5), two (d = 6)
    assert [tie(51, d) for d in range(7)] == [51.0, 51.0] + [50.999996185302734] * 4 + [50.99999237060547]
    # above 64 a float32 step is 7.6e-6: 102 - 4e-6 rounds down to 101.99999237 (d = 4..11), 102 - 3e-6 back to 102
    assert list(prun["q102"].values()) == [120.0] + [102.0] * 4 + [tie(102, 4)] * 3
    assert list(prun["qy"].items()) == [("b1", 80.0), ("big", tie(80, 1)), ("top", 60.0), *zip(m[:5], [
        51.0, 51.0, tie(51, 2), tie(51, 3), tie(51, 4)])]


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
            "q-ab": [("d3", 5.0), ("d1", 1.0), ("d2", tie(1, 1))]}
        assert counts.queries == 5 and counts.queries_with_hits == 2 and counts.removed_self_hits == 1
        assert counts.queries_without_hits == ["q-empty", "q-unknown", "q-zero"] and counts.hits == 4
        kept, _ = s.batch_search(queries, k=10, threads=1)
        assert list(kept["d1"]) == ["d1", "d2"]
        assert s.describe() | {"index": None} == {
            "engine": "pisa", "package": "pyterrier-pisa", "version": "0.4.9", "index": None,
            "query_algorithm": "maxscore", "index_encoding": "block_simdbp", "scorer": "quantized",
            "block_size": 64, "block_max_data": "quantized.q0.bmw.64", "query_weighted": True, "k": 10,
            "ties": "score desc, docid asc (cut included); scores as Anserini's ScoreTiesAdjusterReranker"}
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
    for qid, weights in queries.items():  # exhaustive reference: every score, by hand, then Anserini's tie rule
        scores = {d: float(sum(w * v.get(t, 0) for t, w in weights.items())) for d, v in vectors.items()}
        ranked = sorted(((d, sc) for d, sc in scores.items() if sc > 0), key=lambda h: (-h[1], h[0]))[:20]
        dup = [0] * len(ranked)
        for i in range(1, len(ranked)):
            dup[i] = dup[i - 1] + 1 if ranked[i][1] == ranked[i - 1][1] else 0
        assert list(run[qid].items()) == [(d, tie(sc, n)) for (d, sc), n in zip(ranked, dup)], qid


@requires_pisa
def test_block_max_wand_over_fixed_40_blocks_is_exact_and_states_its_block_max_data(tmp_path):
    """naver's latency protocol (efficient_splade_pisa/README.md): block_max_wand over ``fixed-40`` block-max data."""
    rng = random.Random(11)
    vectors = {f"doc{i:03d}": {f"t{j}": rng.randint(1, 9) for j in rng.sample(range(30), rng.randint(1, 8))}
               for i in range(500)}
    queries = {f"q{i}": {f"t{j}": rng.randint(1, 20) for j in rng.sample(range(30), 5)} for i in range(20)}
    engine = PisaEngine(query_algorithm="block_max_wand", block_size=40)
    engine.build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx")
    assert (tmp_path / "idx" / "quantized.q0.bmw.40").is_file()
    assert not (tmp_path / "idx" / "quantized.q0.bmw.64").exists()
    assert read_marker(tmp_path / "idx")["block_size"] == 40
    with engine.open(tmp_path / "idx") as s:
        run, _ = s.batch_search(queries, k=15, threads=1)
        described = s.describe()
    assert described["block_max_data"] == "quantized.q0.bmw.40" and described["query_algorithm"] == "block_max_wand"
    with PisaEngine().open(tmp_path / "idx") as s:  # MaxScore, the same blocks: the same exact run
        reference, _ = s.batch_search(queries, k=15, threads=1)
    assert run == reference
    with engine.open(tmp_path / "idx") as s:  # the call PISA's protocol times: the engine's top k, as many hits
        calls = {qid: s.engine_call(w, 15) for qid, w in queries.items()}
        assert all(call() == call() == len(run[qid]) for qid, call in calls.items())
        assert s.engine_call({}, 15)() == 0 and s.engine_call({"nowhere": 3}, 15)() == 0
    with pytest.raises(InputError, match="closed"):
        s.engine_call(queries["q0"], 15)
    for qid, weights in queries.items():
        scores = {d: sum(w * v.get(t, 0) for t, w in weights.items()) for d, v in vectors.items()}
        best = sorted(((d, sc) for d, sc in scores.items() if sc > 0), key=lambda h: (-h[1], h[0]))[:15]
        assert list(run[qid]) == [d for d, _ in best], qid


@requires_pisa
def test_bm25_scorer_over_term_frequencies_is_pisas_formula_by_hand(tmp_path):
    """PISA's BM25 (include/pisa/scorer/bm25.hpp): ``max(1e-6, ln((N - df + 0.5) / (df + 0.5))) * (k1 + 1)`` times
    ``tf / (tf + k1 (1 - b + b |d| / avgdl))``, summed over the query's terms, each times its count in the query;
    |d| is the sum of the document's term frequencies."""
    tfs = {"d1": {"cat": 2, "dog": 1}, "d2": {"cat": 1}, "d3": {"fish": 3, "dog": 1, "bird": 2}, "d4": {"bird": 1},
           "d5": {"eel": 4}}
    k1, b = 1.2, 0.75
    engine = PisaEngine(scorer="bm25", bm25_k1=k1, bm25_b=b)
    engine.build(write_collection(tmp_path / "coll", tfs), tmp_path / "idx")
    n = len(tfs)
    avgdl = sum(sum(v.values()) for v in tfs.values()) / n   # 17 / 5

    def by_hand(query: dict[str, int]) -> dict[str, float]:
        out = {}
        for d, v in tfs.items():
            score = 0.0
            for t, c in query.items():
                if t in v:
                    df = sum(t in u for u in tfs.values())
                    idf = max(1e-6, np.log((n - df + 0.5) / (df + 0.5))) * (k1 + 1)
                    score += c * idf * v[t] / (v[t] + k1 * (1 - b + b * sum(v.values()) / avgdl))
            if score:
                out[d] = score
        return out

    with engine.open(tmp_path / "idx") as s:
        assert s.describe()["scorer"] == "bm25" and s.describe()["block_max_data"] == "bm25.k1-1.2.b-0.75.q0.bmw.64"
        for query in ({"cat": 1}, {"dog": 1, "bird": 2}, {"fish": 1, "cat": 1, "eel": 1}):
            hits = s.search(query, k=10)
            expected = by_hand(query)
            assert [d for d, _ in hits] == sorted(expected, key=lambda d: (-expected[d], d))
            # Anserini's tie contract rounds scores to 4 decimals and steps ties down by 1e-6 (lsr_eval.search.ties)
            assert [sc for _, sc in hits] == pytest.approx([expected[d] for d, _ in hits], abs=1e-4)
    with pytest.raises(ConfigError, match="bm25_k1 only apply with scorer: bm25"):
        PisaEngine(bm25_k1=0.9)
    with pytest.raises(ConfigError, match="^pisa: scorer must be one of quantized, bm25, got 'tfidf'$"):
        PisaEngine(scorer="tfidf")
    with pytest.raises(ConfigError, match=r"^pisa: bm25_b must be in \[0, 1\], got 2$"):
        PisaEngine(scorer="bm25", bm25_b=2)
    with pytest.raises(ConfigError, match="^pisa: block_size must be >= 1, got 0$"):
        PisaEngine(block_size=0)


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
    checked = get_engine("pisa")   # the checked engine: it refuses a full folder and clears a failed build
    with pytest.raises(InputError, match="already exists and is not empty"):
        checked.build(tmp_path / "coll", index)
    bad = write_collection(tmp_path / "bad", {"ok": {"a": 1}})
    with open(bad / "docs-00000.jsonl", "a") as f:
        f.write('{"id": "x", "vector": {"a": 1.5}}\n')
    with pytest.raises(InputError, match=r"docs-00000.jsonl:2: document 'x': weight of 'a' is 1.5, not an integer"):
        checked.build(bad, tmp_path / "bad-idx")
    assert not (tmp_path / "bad-idx").exists()  # nothing half-built left behind
    (tmp_path / "empty-idx").mkdir()
    with pytest.raises(InputError, match="none of its 2 documents has a term"):
        checked.build(write_collection(tmp_path / "blank", {"e1": {}, "e2": {"a": 0}}), tmp_path / "empty-idx")
    assert list((tmp_path / "empty-idx").iterdir()) == []
    with pytest.raises(InputError, match=r"term 'a\\nb' is empty or holds whitespace"):  # PISA's lexicons: lines
        checked.build(write_collection(tmp_path / "nl", {"d": {"a\nb": 1}}), tmp_path / "nl-idx")


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
    assert differing(result["pisa"], result["anserini"]) == [] and len(result["anserini"]) == 15


@requires_pisa
def test_exact_against_anserini_on_scifact(scifact_impact, tmp_path):
    """The key check: a PISA index of the SciFact splade-tiny collection returns Anserini's run, bit for bit: the
    same documents in the same order with the same (tie-adjusted) scores, for every query's top 1000."""
    from lsr_eval.anserini.searcher import ImpactSearcher

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
    assert differing(run, reference) == []
    ties = sum(1 for hits in reference.values() for a, b in zip(hits.values(), list(hits.values())[1:])
               if round(a) == round(b))
    assert ties > 100  # tied scores were met (on SciFact none leaves a float32 residue: see the NFCorpus test)


#: NFCorpus test queries whose top-1000 lists differed between PISA and Anserini before the tie contract, and the
#: documents of every tied run that holds a float32 residue in those lists (splade-tiny, fp32, documents top-1,024
#: terms, queries top-256: ``residue.runs`` of studies/exact_engines/run.py's engines.json).
#: A run's adjusted scores depend only on its own members, so these 55 documents alone meet every such case.
NFCORPUS_QUERIES = ("PLAIN-1130", "PLAIN-1183", "PLAIN-1441", "PLAIN-1496", "PLAIN-1794")
NFCORPUS_TIED = (
    "MED-748", "MED-907", "MED-930", "MED-1054", "MED-1250", "MED-1285", "MED-1331", "MED-1621", "MED-1812",
    "MED-1879", "MED-2137", "MED-2201", "MED-2324", "MED-2395", "MED-2498", "MED-2502", "MED-2510", "MED-2519",
    "MED-2584", "MED-2717", "MED-2760", "MED-2817", "MED-2921", "MED-2976", "MED-3019", "MED-3092", "MED-3093",
    "MED-3142", "MED-3432", "MED-3435", "MED-3443", "MED-3475", "MED-3492", "MED-3538", "MED-3550", "MED-3628",
    "MED-3778", "MED-3812", "MED-3942", "MED-4058", "MED-4153", "MED-4179", "MED-4193", "MED-4253", "MED-4360",
    "MED-4589", "MED-4619", "MED-4724", "MED-4747", "MED-4811", "MED-5002", "MED-5042", "MED-5141", "MED-5145",
    "MED-5292")


def nfcorpus_subset(folder: Path, docids: set[str], qids: set[str]) -> Path:
    """A BEIR folder of the NFCorpus test split holding only ``docids`` and the queries ``qids`` (with their
    judgments; the published qrels have CRLF line ends)."""
    src = shared_path("beir", "nfcorpus")
    with open(src / "corpus.jsonl", encoding="utf-8") as f:
        docs = [d for d in map(json.loads, f) if d["_id"] in docids]
    with open(src / "queries.jsonl", encoding="utf-8") as f:
        queries = [q for q in map(json.loads, f) if q["_id"] in qids]
    rows = [line.strip().split("\t") for line in (src / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    assert len(docs) == len(docids) and len(queries) == len(qids)
    return write_beir(folder, docs, queries, [(q, d, int(r)) for q, d, r in rows if q in qids])


def nfcorpus_tied_indexes(tmp_path: Path, engine: str) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """NFCorpus' tied-run documents and queries (:data:`NFCORPUS_TIED`, :data:`NFCORPUS_QUERIES`) encoded by
    splade-tiny (fp32, 1,024 / 256 terms) and indexed by Anserini and ``engine``: (index folder by engine, the
    queries' integer weight maps)."""
    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.encode.queries import encode_queries
    from lsr_eval.encode.splade import SpladeTextEncoder
    from lsr_eval.export.queries import query_weight_maps
    from lsr_eval.pipeline.splade import SpladeSettings, ensure_impact_index, load_model

    dataset = load_dataset(str(nfcorpus_subset(tmp_path / "nf", set(NFCORPUS_TIED), set(NFCORPUS_QUERIES))), "test")
    settings = SpladeSettings.from_flat(model=str(splade_tiny_dir()), doc_top_k=1024, query_top_k=256, precision="fp32")
    model = load_model(settings)
    index = {name: ensure_impact_index(dataset, model, settings.replace(engine=name), tmp_path / "work",
                                       threads=2)["index_dir"] for name in ("anserini", engine)}
    maps = query_weight_maps(encode_queries(dataset.queries(), SpladeTextEncoder(model.query)).vectors,
                             settings.export.scale)
    assert sorted(maps) == sorted(NFCORPUS_QUERIES)
    return index, maps


@requires_pisa
def test_nfcorpus_tied_runs_are_anserinis_bit_for_bit(tmp_path):
    """The case that broke on NFCorpus, on real vectors: PISA returns Anserini's lists (order and float32 scores,
    ``50.999996`` beside ``51.0`` included), which are Anserini's own SimpleImpactSearcher's. The whole of NFCorpus
    and SciFact is checked by studies/exact_engines/run.py (results/exact-engines)."""

    from lsr_eval.anserini.searcher import ImpactSearcher

    index, maps = nfcorpus_tied_indexes(tmp_path, "pisa")
    with PisaEngine().open(index["pisa"]) as p, ImpactSearcher(index["anserini"]) as a:
        prun, counts = p.batch_search(maps, k=1000, threads=2)
        arun, _ = a.batch_search(maps, k=1000, threads=2)
        java = {qid: dict(a.search_per_hit(w, k=1000, qid=qid)) for qid, w in maps.items()}
    assert differing(prun, arun) == [] and differing(prun, java) == [] and counts.hits > 5 * 20
    residue = {qid for qid, hits in arun.items() for score in hits.values() if score != round(score)}
    assert residue == set(NFCORPUS_QUERIES), "these documents no longer meet a tied run with a float32 residue " \
        "in every query (vectors changed?): pick them again from studies/exact_engines/run.py's engines.json"
