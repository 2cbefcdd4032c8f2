"""The BMP engine: hand-computed scores and ties on tiny collections, the package's limits it works around, bad
input, and exactness against Anserini on SciFact and NFCorpus at its safe setting."""

from __future__ import annotations

import importlib.util
import os
import random
import sys

import pytest
from test_engine_pisa import NFCORPUS_QUERIES, VECTORS, differing, nfcorpus_tied_indexes, tie, write_collection

from lsr_eval.engines.base import read_marker, write_marker
from lsr_eval.engines.registry import get_engine
from lsr_eval.errors import ConfigError, InputError

needs_bmp = pytest.mark.skipif(importlib.util.find_spec("bmp") is None and not os.environ.get("CI"),
                               reason="bmp is not installed")


def brute_force(vectors: dict[str, dict[str, int]], query: dict[str, int], k: int) -> list[tuple[str, float]]:
    """The exact top ``k`` by hand: integer dot products, score desc then docid, Anserini's tie-adjusted scores."""
    from lsr_eval.search.ties import adjusted_hits

    scores = {d: sum(w * v.get(t, 0) for t, w in query.items()) for d, v in vectors.items()}
    ranked = sorted(((-s, d) for d, s in scores.items() if s > 0))[:k]
    return adjusted_hits([d for _, d in ranked], [float(-s) for s, _ in ranked])


@pytest.fixture
def tiny(tmp_path):
    from lsr_eval.engines.bmp import BmpEngine

    counts = BmpEngine(bsize=2).build(write_collection(tmp_path / "coll", VECTORS), tmp_path / "idx", threads=1)
    return tmp_path / "idx", counts


@needs_bmp
def test_scores_are_hand_computed_and_empty_documents_count(tiny):
    from lsr_eval.engines.bmp import BmpEngine

    index, counts = tiny
    assert counts.documents_read == counts.documents_indexed == len(VECTORS)  # e0 (empty vector) included
    assert counts.details["terms"] == 5 and counts.details["documents_without_terms"] == 1
    marker = read_marker(index)
    assert marker["engine"] == "bmp" and marker["documents"] == 8 and marker["impact_scale"] == [1, 1]
    with BmpEngine().open(index) as s:
        # d3 = 2*2 + 1*3 = 7; d1 = 2*1 + 3*5 = 17; d2 = 1*1 + 3*1 = 4
        assert s.search({"a": 2, "b": 1, "c": 3}, k=10) == [("d1", 17.0), ("d3", 7.0), ("d2", 4.0)]
        assert s.search({"a": 2, "b": 1, "c": 3}, k=2) == [("d1", 17.0), ("d3", 7.0)]
        # 300 is above BMP's largest query weight (32): quantized for the candidates, scored exactly
        assert s.search({"u": 300, "t": 1}, k=2) == [("b2", 304.0), ("a1", 4.0)]
        assert s.search({"nowhere": 3}, k=10) == [] and s.search({}, k=10) == [] and s.search({"a": 0}) == []


@needs_bmp
def test_ties_come_out_by_docid_and_the_cut_is_made_by_docid_too(tiny):
    from lsr_eval.engines.bmp import BmpEngine

    index, _ = tiny
    with BmpEngine().open(index) as s:
        assert s.search({"t": 1}, k=10) == [("a1", 4.0), ("b2", tie(4, 1)), ("m5", tie(4, 2)), ("z9", tie(4, 3))]
        assert s.search({"t": 1}, k=2) == [("a1", 4.0), ("b2", tie(4, 1))]
        assert s.search({"t": 1, "u": 1}, k=1) == [("b2", 5.0)]


@needs_bmp
def test_the_block_bmp_leaves_unscored_is_the_sentinel(tmp_path):
    """BMP 0.2.8 never scores the last block it visits (here the one of e, lowest bound for x): the engine's
    sentinel block takes that place, so e is found."""
    import bmp

    from lsr_eval.engines.bmp import BmpEngine

    vectors = {"a": {"x": 3}, "b": {"x": 1, "y": 2}, "c": {"x": 5}, "d": {"y": 7}, "e": {"x": 2}}
    raw = bmp.Indexer(str(tmp_path / "raw.bmp"), 2, False)
    for docid, vector in vectors.items():
        raw.add_document(docid, vector)
    raw.finish()
    assert bmp.Searcher(str(tmp_path / "raw.bmp")).search({"x": 1.0}, 10, 1.0, 1.0)[0] == ["c", "a", "b"]
    BmpEngine(bsize=2).build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx")
    with BmpEngine().open(tmp_path / "idx") as s:
        assert s.search({"x": 1}, k=10) == [("c", 5.0), ("a", 3.0), ("e", 2.0), ("b", 1.0)]
        assert s.search({"y": 1}, k=10) == [("d", 7.0), ("b", 2.0)]


@needs_bmp
def test_large_impacts_and_weights_are_exact_against_brute_force(tmp_path):
    """Impacts up to 5000 (stored by BMP as ceil(w * 255 / 5000)), query weights up to 900 and 40-term queries:
    BMP's quantized candidates, scored exactly and certified, give the exact top k, ties included."""
    from lsr_eval.engines.bmp import BmpEngine

    rng = random.Random(7)
    vectors = {f"d{i:04d}": {f"t{j}": rng.choice([1, 2, 3, 50, 255, 256, 700, 5000])
                             for j in rng.sample(range(60), rng.randint(0, 12))} for i in range(700)}
    BmpEngine(bsize=8).build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx", threads=1)
    assert read_marker(tmp_path / "idx")["impact_scale"] == [255, 5000]
    queries = {f"q{i}": {f"t{j}": rng.choice([1, 2, 7, 40, 900]) for j in rng.sample(range(65), rng.randint(1, 40))}
               for i in range(40)}
    with BmpEngine().open(tmp_path / "idx") as s:
        for k in (1, 10, 100, 1000):
            run, counts = s.batch_search(queries, k=k, threads=1)
            assert {q: list(h.items()) for q, h in run.items()} == {q: brute_force(vectors, w, k)
                                                                  for q, w in queries.items()}
        assert counts.queries == 40 and counts.hits == sum(len(h) for h in run.values())


@needs_bmp
def test_approximate_settings_return_exact_scores_of_a_subset(tmp_path):
    from lsr_eval.engines.bmp import BmpEngine

    rng = random.Random(11)
    vectors = {f"d{i:04d}": {f"t{j}": rng.randint(1, 200) for j in rng.sample(range(30), rng.randint(1, 8))}
               for i in range(2000)}
    BmpEngine(bsize=16).build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx", threads=1)
    queries = {f"q{i}": {f"t{j}": rng.randint(1, 30) for j in rng.sample(range(30), 6)} for i in range(20)}
    with BmpEngine().open(tmp_path / "idx", alpha=0.5, beta=0.5) as s:
        assert not s.safe and s.describe()["search"] == {"alpha": 0.5, "beta": 0.5}
        run, _ = s.batch_search(queries, k=10, threads=1)
    for qid, hits in run.items():
        exact = {d: sum(w * vectors[d].get(t, 0) for t, w in queries[qid].items()) for d in hits}
        assert list(hits.values()) == sorted(hits.values(), reverse=True)
        assert all(hits[d] == exact[d] for d in hits)  # exact dot products, unadjusted here
    # half the terms dropped: some exact top-10 documents are missed
    assert sum(len(set(run[q]) & {d for d, _ in brute_force(vectors, w, 10)}) for q, w in queries.items()) < 200


@needs_bmp
def test_batch_search_counts_every_query_and_removes_self_hits(tiny):
    from lsr_eval.engines.bmp import BmpEngine

    index, _ = tiny
    queries = {"d1": {"c": 1}, "q-empty": {}, "q-unknown": {"nowhere": 3}, "q-ab": {"a": 1, "b": 1}}
    with BmpEngine().open(index) as s:
        run, counts = s.batch_search(queries, k=10, threads=2, remove_query=True)
        assert {q: list(h.items()) for q, h in run.items()} == {
            "d1": [("d2", 1.0)], "q-empty": [], "q-unknown": [], "q-ab": [("d3", 5.0), ("d1", 1.0), ("d2", tie(1, 1))]}
        assert counts.queries == 4 and counts.removed_self_hits == 1
        assert counts.queries_without_hits == ["q-empty", "q-unknown"]
        with pytest.raises(InputError, match="weight of 'a' is 'x', not a number"):
            s.search({"a": "x"})
        with pytest.raises(ConfigError, match="threads"):
            s.batch_search(queries, threads=0)
    with pytest.raises(InputError, match="closed"):
        s.search({"a": 1})


@needs_bmp
def test_options_are_checked_and_name_their_range(tmp_path):
    from lsr_eval.engines.bmp import BmpEngine
    from lsr_eval.engines.registry import split_options

    for bad in ({"bsize": 0}, {"bsize": 257}, {"bsize": 2.0}, {"compress_range": 1}):
        with pytest.raises(ConfigError, match="^bmp: (bsize|compress_range) must be "):
            BmpEngine(**bad)
    for knob in ({"alpha": 0}, {"alpha": 1.5}, {"beta": float("nan")}, {"beta": True}):
        with pytest.raises(ConfigError, match=r"^bmp: (alpha|beta) must be (a number )?in \(0, 1\], got "):
            BmpEngine().check_search(**knob)
    assert BmpEngine().check_search(alpha=0.8) == {"alpha": 0.8, "beta": 1.0}
    assert split_options("bmp", {"bsize": 64, "alpha": 0.9}) == ({"bsize": 64}, {"alpha": 0.9})
    with pytest.raises(ConfigError, match="build options: bsize, compress_range; search options: alpha, beta"):
        split_options("bmp", {"heap_factor": 0.9})
    with pytest.raises(ConfigError, match="threads"):
        BmpEngine().build(tmp_path / "c", tmp_path / "i", threads=0)


@needs_bmp
def test_compressed_ranges_give_the_same_runs(tmp_path):
    from lsr_eval.engines.bmp import BmpEngine

    rng = random.Random(5)
    vectors = {f"d{i:04d}": {f"t{j}": rng.randint(1, 9) for j in rng.sample(range(20), rng.randint(0, 5))}
               for i in range(600)}
    write_collection(tmp_path / "coll", vectors)
    BmpEngine(bsize=4, compress_range=True).build(tmp_path / "coll", tmp_path / "idx")
    queries = {f"q{i}": {f"t{j}": rng.randint(1, 5) for j in rng.sample(range(20), 3)} for i in range(15)}
    with BmpEngine().open(tmp_path / "idx") as s:
        run, _ = s.batch_search(queries, k=50)
    assert {q: list(h.items()) for q, h in run.items()} == {q: brute_force(vectors, w, 50) for q, w in queries.items()}


@needs_bmp
def test_bad_collections_indexes_of_other_engines_and_broken_indexes_are_refused(tmp_path, tiny):
    from lsr_eval.engines.bmp import BmpEngine

    index, _ = tiny
    with pytest.raises(InputError, match="already exists and is not empty"):   # the checked engine refuses it
        get_engine("bmp").build(tmp_path / "coll", index)
    docs = write_collection(tmp_path / "bad", {"d1": {"a": 1}})
    with open(docs / "docs-00000.jsonl", "a", encoding="utf-8") as f:
        f.write('{"id": "d2", "contents": "", "vector": {"a": 1.5}}\n')
    with pytest.raises(InputError, match=r"docs-00000\.jsonl:2: document 'd2': weight of 'a' is 1.5, not an integer"):
        BmpEngine().build(docs, tmp_path / "idx-bad")
    assert not (tmp_path / "idx-bad").exists()  # nothing half-built left behind
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "docs.jsonl").write_text("\n")
    with pytest.raises(InputError, match="holds no documents"):
        BmpEngine().build(tmp_path / "empty", tmp_path / "idx-empty")
    other = tmp_path / "other"
    other.mkdir()
    write_marker(other, "pisa")
    with pytest.raises(InputError, match="built by engine 'pisa'"):
        BmpEngine().open(other)
    (index / "fwd.impacts").unlink()
    with pytest.raises(InputError, match=r"lacks fwd\.impacts; rebuild it"):
        BmpEngine().open(index)


def test_missing_package_names_the_pip_requirement(monkeypatch):
    from lsr_eval.engines.registry import get_engine

    monkeypatch.setitem(sys.modules, "bmp", None)
    with pytest.raises(ConfigError, match=r"needs the package bmp==0\.2\.8 \(`pip install 'lsr-eval\[engines\]'`, "
                                          r"or `pip install bmp==0\.2\.8`\)"):
        get_engine("bmp")


@needs_bmp
def test_exact_against_anserini_on_scifact(scifact_impact, tmp_path):
    """The key check: at its safe setting, a BMP index of the SciFact splade-tiny collection returns Anserini's run,
    bit for bit, for every query's top 10 and top 1000."""
    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.engines.bmp import BmpEngine

    counts = BmpEngine().build(scifact_impact.collection, tmp_path / "bmp", threads=2)
    assert counts.documents_read == counts.documents_indexed == scifact_impact.documents
    queries = scifact_impact.queries
    with BmpEngine().open(tmp_path / "bmp") as s, ImpactSearcher(str(scifact_impact.anserini_index)) as a:
        for k in (10, 1000):
            run, bcounts = s.batch_search(queries, k=k)
            reference, acounts = a.batch_search(queries, k=k, threads=2)
            assert bcounts.to_dict() == acounts.to_dict() and bcounts.queries == len(queries) == 300
            assert differing(run, reference) == []
        first = next(iter(queries))
        assert s.search(queries[first], k=1000) == list(run[first].items())


@needs_bmp
def test_nfcorpus_tied_runs_are_anserinis_bit_for_bit(tmp_path):
    """NFCorpus' tied runs with a float32 residue (``50.999996`` beside ``51.0``), on real vectors: BMP returns
    Anserini's lists."""

    from lsr_eval.anserini.searcher import ImpactSearcher
    from lsr_eval.engines.bmp import BmpEngine

    index, maps = nfcorpus_tied_indexes(tmp_path, "bmp")
    with BmpEngine().open(index["bmp"]) as b, ImpactSearcher(index["anserini"]) as a:
        brun, counts = b.batch_search(maps, k=1000)
        arun, _ = a.batch_search(maps, k=1000, threads=2)
    assert differing(brun, arun) == [] and counts.hits > 5 * 20
    assert {qid for qid, hits in brun.items() for s in hits.values() if s != round(s)} == set(NFCORPUS_QUERIES)


@needs_bmp
def test_a_query_with_no_block_above_bmps_starting_threshold(tmp_path):
    """Twelve documents tied at impact 5: for k = 10 BMP starts at 5 (the term's 10th largest impact), finds no block
    above it and panics in 0.2.8; the engine asks again from threshold 0, at both settings."""
    from lsr_eval.engines.bmp import BmpEngine

    vectors = {f"d{i:02d}": {"t": 5} for i in range(12)}
    BmpEngine(bsize=2).build(write_collection(tmp_path / "coll", vectors), tmp_path / "idx")
    with BmpEngine().open(tmp_path / "idx") as s:
        assert s.search({"t": 1}, k=10) == [(f"d{i:02d}", tie(5, i)) for i in range(10)]
    with BmpEngine().open(tmp_path / "idx", alpha=0.9) as s:
        hits = s.search({"t": 1}, k=10)
    # approximate: ten of the twelve tied documents (BMP's pick), by docid, their dot products unadjusted
    assert len(hits) == 10 and {s for _, s in hits} == {5.0} and [d for d, _ in hits] == sorted(d for d, _ in hits)


@needs_bmp
def test_documents_lost_between_passes_or_by_bmp_are_refused(tmp_path, monkeypatch):
    import bmp

    from lsr_eval.engines import bmp as engine

    coll = write_collection(tmp_path / "coll", VECTORS)
    passes = []
    real = engine.iter_collection

    def shrinking(collection, weights):  # the second pass reads one document fewer
        passes.append(1)
        return (x for i, x in enumerate(real(collection, weights)) if len(passes) == 1 or i > 0)

    monkeypatch.setattr(engine, "iter_collection", shrinking)
    with pytest.raises(InputError, match=r"changed while it was indexed \(8 documents, then 7\)"):
        get_engine("bmp").build(coll, tmp_path / "a")   # the checked engine clears a failed build
    assert not (tmp_path / "a").exists()
    monkeypatch.setattr(engine, "iter_collection", real)

    class Dropping:  # BMP losing a document
        def __init__(self, *args):
            self.indexer = indexer(*args)

        def add_document(self, docid, vector):
            if docid != "3":
                self.indexer.add_document(docid, vector)

        def finish(self):
            self.indexer.finish()

    indexer = bmp.Indexer
    monkeypatch.setattr(bmp, "Indexer", Dropping)
    with pytest.raises(InputError, match=r"BMP indexed 7 documents of the 8 read from .*coll"):
        get_engine("bmp", bsize=4).build(coll, tmp_path / "b")
    assert not (tmp_path / "b").exists()
