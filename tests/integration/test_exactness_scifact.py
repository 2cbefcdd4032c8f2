"""Exactness on SciFact test: Anserini's top-100 impact scores equal the brute-force dot product of the exported
integer vectors, for every query (a hashed bag-of-words encoder stands in for the model: exactness is about the
export -> index -> search path, and this keeps the test fast)."""

from __future__ import annotations

from conftest import shared_path

from lsr_eval.anserini.indexer import build_index
from lsr_eval.anserini.searcher import ImpactSearcher
from lsr_eval.data.datasets import load_dataset
from lsr_eval.encode.corpus import encode_corpus
from lsr_eval.encode.hashing import HashingEncoder
from lsr_eval.encode.queries import encode_queries
from lsr_eval.export.documents import COLLECTION_DIR, export_documents
from lsr_eval.export.queries import query_weight_maps
from studies.exact_engines.measure import check_exactness


def test_anserini_top100_equals_brute_force_on_scifact(tmp_path):
    ds = load_dataset(str(shared_path("beir", "scifact")), "test")
    encoder = HashingEncoder(vocab_size=20000)
    encode_corpus(ds.docs(), encoder, tmp_path / "enc", {"test": "exactness"}, progress=False)
    export_documents(tmp_path / "enc", tmp_path / "coll", {"test": "exactness"}, scale=100, progress=False)
    counts = build_index(tmp_path / "coll" / COLLECTION_DIR, tmp_path / "idx", "impact", threads=2)
    assert counts.total_indexed == ds.doc_stats.read == 5183
    maps = query_weight_maps(encode_queries(ds.queries(), encoder).vectors, 100)
    with ImpactSearcher(str(tmp_path / "idx")) as searcher:
        run, search_counts = searcher.batch_search(maps, k=100, threads=2)
    assert search_counts.queries == 300
    report = check_exactness(tmp_path / "coll" / COLLECTION_DIR, maps, run, k=100)
    assert report.queries == 300 and report.exact == 300, report.to_dict()


def test_exactness_check_detects_a_wrong_score(tmp_path):
    coll = tmp_path / "c"
    coll.mkdir()
    (coll / "docs-00000.jsonl").write_text('{"id": "a", "contents": "", "vector": {"x": 3, "y": 1}}\n'
                                           '{"id": "b", "contents": "", "vector": {"y": 5}}\n')
    maps = {"q": {"x": 2, "y": 1}}  # hand: a = 2*3 + 1*1 = 7, b = 1*5 = 5
    assert check_exactness(coll, maps, {"q": {"a": 7.0, "b": 5.0}}, k=10).exact == 1
    assert check_exactness(coll, maps, {"q": {"a": 7.0, "b": 6.0}}, k=10).mismatched == ["q"]
    assert check_exactness(coll, maps, {"q": {"b": 7.0, "a": 5.0}}, k=10).mismatched == ["q"]
