"""studies.long_queries.measure (studies/long_queries/run.py) on tiny hand-made corpora: lsr-eval's runs equal
Anserini's own SearchCollection's (BM25 and impact, self-hits removed), the counts add up, and the comparison catches
what differs."""

from __future__ import annotations

import json

import pytest

from lsr_eval.anserini.collections import write_json_collection
from lsr_eval.anserini.indexer import build_index
from lsr_eval.anserini.search_collection import (
    JvmMemory,
    pretokenized,
    run_search_collection,
    search_collection_argv,
    write_tsv_topics,
)
from lsr_eval.data.types import Document
from lsr_eval.errors import InputError
from lsr_eval.runs.trec import read_run
from lsr_eval.search.counts import SearchCounts
from studies.harness.agreement import ranked_hits_agreement
from studies.long_queries import measure as bench

DOCS = [
    Document("d1", "Sparse retrieval with learned term weights\nexpands documents.", title="Sparse"),
    Document("d2", "BM25 is a strong   lexical baseline for retrieval of documents."),
    Document("d3", "Cats sleep most of the day; retrieval of mice.", title="Cats"),
    Document("d4", "   "),  # blank: never a query
    Document("d5", "Dense retrieval encodes queries and documents as vectors, unlike sparse retrieval."),
    Document("d6", "Zebra quagga okapi."),  # its only hit is itself: without hits once the self-hit is removed
    Document("d7", "Retrieval of documents: sparse, dense and lexical retrieval compared."),
]


def _bm25_setup(tmp_path):
    write_json_collection(DOCS, tmp_path / "coll")
    build_index(tmp_path / "coll", tmp_path / "idx", "bm25-flat", threads=1)
    queries = bench.long_topics(iter(DOCS), 6)
    return tmp_path / "idx", queries


def test_long_topics_collapse_whitespace_skip_blank_and_read_the_whole_stream():
    seen = []

    def stream():
        for d in DOCS:
            seen.append(d.id)
            yield d

    queries = bench.long_topics(stream(), 3)
    assert [q.id for q in queries] == ["d1", "d2", "d3"]
    assert queries[0].text == "Sparse Sparse retrieval with learned term weights expands documents."
    assert queries[1].text == "BM25 is a strong lexical baseline for retrieval of documents."
    assert seen == [d.id for d in DOCS]  # consumed to the end (the dataset's counts stay complete)
    assert [q.id for q in bench.long_topics(iter(DOCS), 6)] == ["d1", "d2", "d3", "d5", "d6", "d7"]
    with pytest.raises(InputError, match="6 non-blank documents, fewer than the 7"):
        bench.long_topics(iter(DOCS), 7)
    stats = bench.topic_stats(queries)
    assert stats["queries"] == 3 and stats["min_words"] == 9 and stats["max_words"] == 10


def test_bm25_run_equals_search_collection_and_counts_add_up(tmp_path):
    index, queries = _bm25_setup(tmp_path)
    topics = tmp_path / "topics.tsv"
    assert write_tsv_topics(((q.id, q.text) for q in queries), topics) == 6
    argv = search_collection_argv(index, topics, tmp_path / "sc.trec", "bm25", hits=3, threads=2, remove_query=True)
    sc = run_search_collection(argv)
    ours = bench.ours_bm25(index, queries, tmp_path / "ours.trec", k=3, threads=2, k1=0.9, b=0.4)()
    theirs = read_run(sc.output)
    qids = [q.id for q in queries]
    cmp = ranked_hits_agreement(ours["run"], theirs, qids, bench.SCORE_TOLERANCE, names=("ours", bench.ANSERINI))
    assert cmp["identical_queries"] == 6 and cmp["differing_examples"] == []
    assert cmp["hits_ours"] == cmp["hits_searchcollection"] > 0
    counts = bench.check_counts(ours["counts"], qids, ours["run"], theirs)
    assert counts["ok"], counts
    # d6 finds only itself: counted without hits here, absent from SearchCollection's run file
    assert ours["counts"].queries_without_hits == ["d6"] and "d6" not in theirs
    assert ours["counts"].removed_self_hits == 6  # every document is its own best hit
    assert read_run(tmp_path / "ours.trec") == {q: h for q, h in ours["run"].items() if h}


def test_impact_run_equals_search_collection_with_ties(tmp_path):
    coll = tmp_path / "vcoll"
    coll.mkdir()
    vectors = {"a": {"cat": 5, "dog": 2}, "b": {"cat": 5, "dog": 2}, "c": {"dog": 7}, "d": {"fish": 3},
               "e": {"cat": 1, "##s": 4}}
    with open(coll / "docs-00000.jsonl", "w") as f:
        for doc_id, vec in vectors.items():
            f.write(json.dumps({"id": doc_id, "contents": "", "vector": vec}) + "\n")
    build_index(coll, tmp_path / "vidx", "impact", threads=1)
    maps = {"a": {"cat": 3, "dog": 1}, "c": {"dog": 2, "cat": 1}, "e": {"##s": 2, "cat": 0}, "q": {"fish": 0}}
    # by hand: a's query scores a = b = 3*5 + 1*2 = 17 (a first by docid, then removed; b lowered by the tie
    # adjuster), c = 7, e = 3; c's query: c = 14 (removed), a = b = 9, e = 1; e finds only itself; q sends nothing
    topics = tmp_path / "topics.tsv"
    write_tsv_topics(((qid, pretokenized(m, qid)) for qid, m in maps.items() if pretokenized(m, qid)), topics)
    sc = run_search_collection(search_collection_argv(tmp_path / "vidx", topics, tmp_path / "sc.trec", "impact",
                                                      hits=10, threads=2, remove_query=True))
    ours = bench.ours_impact(tmp_path / "vidx", maps, tmp_path / "ours.trec", k=10, threads=2)()
    theirs = read_run(sc.output)
    assert list(ours["run"]["a"].items()) == [("b", pytest.approx(17, abs=2e-6)), ("c", 7.0), ("e", 3.0)]
    assert list(ours["run"]["c"]) == ["a", "b", "e"] and ours["run"]["c"]["b"] < ours["run"]["c"]["a"] == 9.0
    cmp = ranked_hits_agreement(ours["run"], theirs, list(maps), bench.SCORE_TOLERANCE, names=("ours", bench.ANSERINI))
    assert cmp["identical_queries"] == 4, cmp
    counts = bench.check_counts(ours["counts"], list(maps), ours["run"], theirs)
    assert counts["ok"] and ours["counts"].queries_without_hits == ["e", "q"]


def test_compare_runs_catches_order_scores_and_missing_queries():
    ours = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "b": 1.0}, "q3": {"a": 1.0}, "q4": {"a": 1.0},
            "q5": {}}
    theirs = {"q1": {"a": 2.0000004, "b": 1.0}, "q2": {"b": 2.0, "a": 1.0}, "q3": {"a": 1.00001}, "q5": {}}
    cmp = ranked_hits_agreement(ours, theirs, ["q1", "q2", "q3", "q4", "q5"], tolerance=5.01e-7)
    assert cmp["identical_queries"] == 2  # q1 (within the printed precision) and q5 (both empty)
    assert cmp["same_docids_queries"] == 3  # q3 has the right docs, a wrong score
    assert [d["qid"] for d in cmp["differing_examples"]] == ["q2", "q3", "q4"]
    assert cmp["differing_examples"][0]["first_rank"] == 1 and cmp["differing_examples"][2]["first_rank"] == 1
    assert cmp["max_abs_score_diff_same_docids"] == pytest.approx(1e-5, rel=1e-3)


def test_check_counts_catches_lost_queries():
    counts, run = SearchCounts(), {}
    counts.add("q1", [("a", 1.0)], True, run)
    counts.add("q2", [("q2", 3.0)], True, run)  # only its self-hit
    assert bench.check_counts(counts, ["q1", "q2"], run, {"q1": {"a": 1.0}})["ok"]
    bad = bench.check_counts(counts, ["q1", "q2"], run, {})  # SearchCollection lost q1
    assert not bad["ok"] and not bad["same_queries_without_hits"]
    lost = bench.check_counts(counts, ["q1", "q2", "q3"], run, {"q1": {"a": 1.0}})  # q3 never searched
    assert not lost["searched_all"] and not lost["in_run_or_without_hits"]


def test_topics_and_pretokenized_by_hand(tmp_path):
    assert pretokenized({"cat": 3, "##s": 1, "dog": 0}) == "cat cat cat ##s"
    with pytest.raises(InputError, match="query q7: term 'a b'"):
        pretokenized({"a b": 2}, "q7")
    with pytest.raises(InputError, match="query q1: text is blank or holds a tab"):
        write_tsv_topics([("q0", "fine"), ("q1", "tab\there")], tmp_path / "t.tsv")
    with pytest.raises(InputError, match="query id 'q 2'"):
        write_tsv_topics([("q 2", "text")], tmp_path / "t.tsv")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_heap_sweeps_record_each_count(tmp_path):
    from lsr_eval.anserini.search_collection import search_collection_argv as argv_of
    from lsr_eval.anserini.searcher import Bm25Searcher

    index, queries = _bm25_setup(tmp_path)
    memory = JvmMemory()
    assert memory.max_mb() > 0 and memory.gc_used_mb() > 0
    with Bm25Searcher(str(index)) as searcher:
        rows = bench.ours_sweep(searcher, queries, [2, 4, 99], k=3, threads=2, memory=memory, interval=0.01)
    assert [r["queries"] for r in rows] == [2, 4]  # 99 > the 6 queries: skipped
    assert all(r["after_gc_mb"] > 0 and r["peak_sampled_mb"] > 0 and r["process_rss_mb"] > 0 for r in rows)
    assert rows[0]["hits"] < rows[1]["hits"]
    lines = [(i, q.id, q.text) for i, q in enumerate(queries)]
    sc_rows = bench.anserini_sweep(
        lambda topics, out: argv_of(index, topics, out, "bm25", hits=3, threads=2, remove_query=True), lines,
        [2, 4], len(queries), tmp_path / "sweep", memory, 0.01)
    assert [(r["path"], r["hits"]) for r in sc_rows] == [("searchcollection", rows[0]["hits"]),
                                                         ("searchcollection", rows[1]["hits"])]
    assert not (tmp_path / "sweep").exists()  # its topics and runs are removed


def test_sweep_summary_by_hand():
    rows = [{"queries": 100, "after_gc_mb": 10.0, "peak_sampled_mb": 50.0, "pool_peaks_mb": {"G1 Old Gen": 8.0}},
            {"queries": 1100, "after_gc_mb": 12.0, "peak_sampled_mb": 70.0, "pool_peaks_mb": {"G1 Old Gen": 9.0}}]
    summary = bench.sweep_summary(rows)
    assert summary["after_gc_growth_mb"] == 2.0 and summary["after_gc_growth_mb_per_1000_queries"] == 2.0
    assert summary["peak_sampled_growth_mb_per_1000_queries"] == 20.0
    assert summary["old_gen_peak_growth_mb_per_1000_queries"] == 1.0
    assert summary["old_gen_peak_range_mb"] == [8.0, 9.0] and bench.sweep_summary(rows[:1]) == {}


def test_search_collection_errors_name_the_command(tmp_path):
    from lsr_eval.errors import JavaError

    (tmp_path / "t.tsv").write_text("q1\tcat\n")
    with pytest.raises(JavaError, match="SearchCollection -index .*missing"):
        run_search_collection(search_collection_argv(tmp_path / "missing", tmp_path / "t.tsv", tmp_path / "o.trec",
                                                     "bm25"))
