"""Datasets: the registry, BEIR folders, ir_datasets, and the errors bad input gets."""

from __future__ import annotations

import logging

import pytest
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, shared_path, write_beir

from lsr_eval.data.datasets import BeirFolder, load_dataset
from lsr_eval.data.registry import BENCHMARKS, GROUPS, expand
from lsr_eval.errors import InputError


def test_registry_names_ids_and_measures():
    assert len(GROUPS["beir-13"]) == 13 and all(n in BENCHMARKS for n in GROUPS["beir-13"])
    assert BENCHMARKS["msmarco-dev"].irds_id == "msmarco-passage/dev/small"
    assert BENCHMARKS["msmarco-dev"].measures == ("RR@10", "R@1000")
    assert BENCHMARKS["dl19"].irds_id == "msmarco-passage/trec-dl-2019/judged"
    assert BENCHMARKS["dl19"].measures == ("nDCG@10", "R@1000(rel=2)", "MAP(rel=2)")
    assert BENCHMARKS["webis-touche2020"].irds_id == "beir/webis-touche2020/v2"
    assert all(BENCHMARKS[n].remove_query for n in GROUPS["beir-13"])
    assert not BENCHMARKS["dl19"].remove_query
    assert expand("beir-13")[-1] == "scifact" and expand("dl19") == ["dl19"]


def test_registry_measures_parse():
    from lsr_eval.evaluation.measures import parse_measures

    for b in BENCHMARKS.values():
        parse_measures(b.measures)


def test_unknown_dataset_lists_known_names():
    with pytest.raises(InputError) as e:
        load_dataset("scifcat")
    assert "scifcat" in str(e.value) and "scifact" in str(e.value) and "beir-13" in str(e.value)


def test_beir_folder_streams_judged_queries(tiny_beir):
    ds = load_dataset(str(tiny_beir))
    assert isinstance(ds, BeirFolder) and ds.remove_query
    assert [d.id for d in ds.docs()] == [d["_id"] for d in TINY_DOCS]
    assert ds.doc_stats.read == 5 and ds.doc_stats.empty == 0
    assert [q.id for q in ds.queries()] == ["q1", "q2", "q3"]
    assert ds.qrels() == {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 2}}


def test_missing_split_names_available_ones(tiny_beir):
    with pytest.raises(InputError, match=r"dev\.tsv does not exist; splits in .*: test"):
        load_dataset(str(tiny_beir), split="dev")


def _corpus_error(tmp_path, lines: list[bytes]) -> str:
    folder = write_beir(tmp_path / "bad", [], TINY_QUERIES, TINY_QRELS)
    (folder / "corpus.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(InputError) as e:
        list(load_dataset(str(folder)).docs())
    return str(e.value)


def test_malformed_json_names_file_and_line(tmp_path):
    msg = _corpus_error(tmp_path, [b'{"_id": "a", "text": "x"}', b'{"_id": "b", "text": '])
    assert "corpus.jsonl:2: malformed JSON" in msg


def test_invalid_utf8_names_line(tmp_path):
    msg = _corpus_error(tmp_path, [b'{"_id": "a", "text": "x"}', b'{"_id": "b", "text": "\xff\xfe"}'])
    assert "corpus.jsonl:2: invalid UTF-8" in msg


def test_duplicate_document_id_names_id_and_line(tmp_path):
    msg = _corpus_error(tmp_path, [b'{"_id": "a", "text": "x"}', b'{"_id": "b", "text": "y"}',
                                   b'{"_id": "a", "text": "z"}'])
    assert "corpus.jsonl:3: duplicate document id 'a'" in msg


def test_missing_id_field(tmp_path):
    assert "corpus.jsonl:1: missing field '_id'" in _corpus_error(tmp_path, [b'{"text": "x"}'])


def test_empty_documents_are_kept_counted_and_warned(tmp_path, caplog):
    docs = TINY_DOCS + [{"_id": "e1", "title": "", "text": ""}, {"_id": "e2", "title": " ", "text": "  "}]
    folder = write_beir(tmp_path / "e", docs, TINY_QUERIES, TINY_QRELS)
    ds = load_dataset(str(folder))
    with caplog.at_level(logging.WARNING):
        ids = [d.id for d in ds.docs()]
    assert ids[-2:] == ["e1", "e2"] and ds.doc_stats.read == 7 and ds.doc_stats.empty == 2
    assert ds.doc_stats.empty_ids == ["e1", "e2"] and "e1" in caplog.text


def test_judged_queries_missing_from_topics_are_counted_and_warned(tmp_path, caplog):
    folder = write_beir(tmp_path / "m", TINY_DOCS, TINY_QUERIES[:2], TINY_QRELS)
    ds = load_dataset(str(folder))
    with caplog.at_level(logging.WARNING):
        counts = ds.judged_check()
    assert counts["judged_queries_missing_from_topics"] == 1 and counts["judged_queries_missing_ids"] == ["q3"]
    assert "q3" in caplog.text


@pytest.mark.parametrize("after_pass", [True, False])
def test_judged_documents_missing_from_the_corpus_are_counted_and_named(tmp_path, caplog, after_pass):
    qrels = TINY_QRELS + [("q1", "gone-b", 1), ("q3", "gone-a", 0), ("q2", "d4", 1)]
    folder = write_beir(tmp_path / "m", TINY_DOCS, TINY_QUERIES, qrels)
    ds = load_dataset(str(folder))
    with caplog.at_level(logging.WARNING):
        if after_pass:  # an index or encoding read the corpus in this process: its pass counted them
            assert len(list(ds.docs())) == len(TINY_DOCS)
            assert ds.doc_stats.to_dict()["judged_documents_missing_ids"] == ["gone-a", "gone-b"]
        counts = ds.judged_check()  # else (cached index) a pass over the ids alone
    # judged: d1, d2, d3, d4, gone-a, gone-b (a grade-0 judgment is a judgment too)
    assert counts["judged_documents"] == 6 and counts["judged_documents_missing_from_corpus"] == 2
    assert counts["judged_documents_missing_ids"] == ["gone-a", "gone-b"]
    assert "2 of 6 judged documents are not in the corpus" in caplog.text and "gone-a, gone-b" in caplog.text


def test_a_corpus_without_qrels_is_read_without_the_judged_check(tmp_path):
    folder = write_beir(tmp_path / "c", TINY_DOCS, TINY_QUERIES, TINY_QRELS)
    ds = BeirFolder(folder)
    (folder / "qrels" / "test.tsv").unlink()  # e.g. an ir_datasets corpus without qrels
    assert len(list(ds.docs())) == len(TINY_DOCS)
    assert "judged_documents" not in ds.doc_stats.to_dict()


def test_topics_and_qrels_files_override(tiny_beir, tmp_path):
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tcats on mats\nq9\tunjudged\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d3 1\n")
    ds = load_dataset(str(tiny_beir), topics=str(topics), qrels=str(qrels))
    assert [(q.id, q.text) for q in ds.queries()] == [("q1", "cats on mats"), ("q9", "unjudged")]
    assert ds.qrels() == {"q1": {"d3": 1}}
    assert ds.judged_check()["topics_without_judgments"] == 1


def test_ir_datasets_scifact_from_seeded_cache(tmp_path, monkeypatch):
    from lsr_eval.data.irds_cache import seed_cache

    copied = seed_cache(shared_path("ir_datasets"), tmp_path / "irds")
    assert "beir/scifact/source.zip" in [p.relative_to(tmp_path / "irds").as_posix() for p in copied]
    # conftest seeded the session's IR_DATASETS_HOME the same way, before ir_datasets was imported

    ds = load_dataset("irds:beir/scifact/test")
    assert ds.remove_query and ds.corpus_key() == {"source": "ir_datasets", "docs_id": "beir/scifact"}
    assert len(ds.queries()) == 300 and sum(len(v) for v in ds.qrels().values()) == 339
    assert sum(1 for _ in ds.docs()) == 5183 and ds.doc_stats.empty == 0
