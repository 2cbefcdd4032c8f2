"""Hard-negative and teacher-score files, training examples from a dataset, and the MS MARCO triples path."""

from __future__ import annotations

import logging
from collections import Counter
from types import SimpleNamespace

import pytest
from conftest import write_beir

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.train.config import DataConfig
from lsr_eval.train.data import IrdsTriples, build_query_set
from lsr_eval.train.files import read_hard_negatives, read_teacher_scores

DOCS = [{"_id": f"d{i}", "title": f"T{i}", "text": f"text of document {i}"} for i in range(1, 7)]
QUERIES = [{"_id": f"q{i}", "text": f"query {i}"} for i in range(1, 6)]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q2", "d3", 2), ("q3", "d4", 1), ("q4", "d5", 0), ("q5", "d6", 1)]


@pytest.fixture
def beir(tmp_path):
    return write_beir(tmp_path / "beir", DOCS, QUERIES, QRELS, split="train")


def test_trec_run_negatives_in_trec_eval_order(tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 3.0 t\nq1 Q0 c 3 1.0 t\n# comment\n\nq2 Q0 z 1 0.5 t\n")
    # score descending, ties by docid descending
    assert read_hard_negatives(run) == {"q1": ["b", "c", "a"], "q2": ["z"]}
    assert read_hard_negatives(run, top_k=2) == {"q1": ["b", "c"], "q2": ["z"]}


def test_list_negatives_and_their_errors(tmp_path):
    f = tmp_path / "neg.tsv"
    f.write_text("q1\tb,a, c\nq2\t\n")
    assert read_hard_negatives(f, top_k=2) == {"q1": ["b", "a"], "q2": []}
    f.write_text("q1\tb,a\nq1\tc\n")
    with pytest.raises(InputError, match=r"neg.tsv:2: query 'q1' listed twice"):
        read_hard_negatives(f)
    f.write_text("q1\ta,b,a\n")
    with pytest.raises(InputError, match=r"neg.tsv:1: document 'a' listed twice"):
        read_hard_negatives(f)
    f.write_text("q1 a b\n")
    with pytest.raises(InputError, match=r"neg.tsv:1: neither a TREC run line"):
        read_hard_negatives(f)


def test_teacher_scores_and_their_errors(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("q1 d1 3.5\nq1 d2 -1\nq2 d1 0\n")
    assert read_teacher_scores(f) == {"q1": {"d1": 3.5, "d2": -1.0}, "q2": {"d1": 0.0}}
    for text, message in [("q1 d1\n", r"t.txt:1: expected 'qid docid score', got 2"),
                          ("q1 d1 1\nq1 d1 2\n", r"t.txt:2: teacher score for \('q1', 'd1'\) given twice"),
                          ("q1 d1 x\n", r"t.txt:1: score 'x' is not a number"),
                          ("q1 d1 nan\n", r"t.txt:1: score 'nan' is not finite")]:
        f.write_text(text)
        with pytest.raises(InputError, match=message):
            read_teacher_scores(f)


def test_query_set_from_dataset_counts_what_it_drops(beir, tmp_path, caplog):
    neg = tmp_path / "neg.tsv"
    neg.write_text("q1\td2,d1,d5\nq2\td2,d3\nq3\td5,d6,dX\nq9\td1\nq5\td1\n")
    cfg = DataConfig(dataset=str(beir), negatives=str(neg), n_negatives=2)
    with caplog.at_level(logging.WARNING):
        qs = build_query_set(cfg, seed=7)
    # q1: pool d2, d5 (d1 positive removed); q2: pool empty (all positives) -> dropped; q3: d5, d6 (dX unknown);
    # q4: no positive (grade 0); q5: pool d1
    assert qs.qids == ["q1", "q3", "q5"]
    assert qs.pools["q1"] == ["d2", "d5"] and qs.pools["q3"] == ["d5", "d6"]
    c = qs.counts
    assert c["dropped_no_negative"] == 1 and c["queries_without_positive"] == 1
    (n,) = c["negatives"]
    assert n["unknown_queries"] == 1 and n["unknown_query_ids"] == ["q9"]
    assert n["judged_positives_removed"] == 3                         # d1 for q1; d2, d3 for q2
    assert c["unknown_documents"] == 1 and c["unknown_document_ids"] == ["dX"]
    assert c["queries_with_fewer_negatives_than_n"] == 1              # q5 has one negative for n = 2
    assert "q9" in caplog.text and "dX" in caplog.text
    ex = qs.example(0, epoch=0)
    assert ex.query == "query 1" and ex.pos_id == "d1" and ex.pos_text == "T1 text of document 1"
    assert sorted(ex.neg_ids) == ["d2", "d5"] and ex.positives == {"d1"}
    assert qs.example(2, epoch=0).neg_ids == ("d1", "d1")             # sampled with replacement


def test_negatives_from_several_files_are_the_union_of_their_top_k(beir, tmp_path):
    bm25, own = tmp_path / "bm25.tsv", tmp_path / "own.tsv"
    bm25.write_text("q1\td2,d5,d6\nq3\td5\n")
    own.write_text("q1\td6,d1,d3\nq3\td6\n")
    cfg = DataConfig(dataset=str(beir), negatives=[str(bm25), str(own)], negatives_top_k=2, n_negatives=1)
    qs = build_query_set(cfg, seed=0)
    # q1: bm25 top-2 d2, d5; own top-2 d6, d1 -> d1 is q1's positive; d6 new.  q3: d5 then d6.
    assert qs.pools["q1"] == ["d2", "d5", "d6"] and qs.pools["q3"] == ["d5", "d6"]
    first, second = qs.counts["negatives"]
    assert (first["new_in_pools"], second["new_in_pools"]) == (3, 2)
    assert second["judged_positives_removed"] == 1


def test_examples_are_a_function_of_seed_epoch_and_step(beir, tmp_path):
    neg = tmp_path / "neg.tsv"
    neg.write_text("".join(f"q{i}\td1,d2,d3,d4,d5,d6\n" for i in range(1, 6)))
    qs = build_query_set(DataConfig(dataset=str(beir), negatives=str(neg), n_negatives=1), seed=3)
    assert len(qs) == 4 and qs.batches_per_epoch(2) == 2
    epoch0 = qs.global_batch(0, 2) + qs.global_batch(1, 2)
    assert sorted(e.qid for e in epoch0) == ["q1", "q2", "q3", "q5"]     # each query once per epoch
    again = build_query_set(DataConfig(dataset=str(beir), negatives=str(neg), n_negatives=1), seed=3)
    assert again.global_batch(3, 2) == qs.global_batch(3, 2)            # pure function of (seed, step)
    assert {e.neg_ids[0] for e in epoch0}.isdisjoint({"d1"} & {e.pos_id for e in epoch0 if e.qid == "q1"})
    q2_positives = Counter(qs.example(qs.qids.index("q2"), epoch).pos_id for epoch in range(40))
    assert set(q2_positives) == {"d2", "d3"}                            # both judged positives are used
    with pytest.raises(ConfigError, match="batch_size=5 is larger than the 4 training queries"):
        qs.global_batch(0, 5)


def test_teacher_scores_choose_negatives_and_unknown_ids_are_counted(beir, tmp_path, caplog):
    t = tmp_path / "teacher.txt"
    t.write_text("q1 d1 9\nq1 d3 5\nq1 d2 7\nq3 d4 8\nq3 d6 1\nq3 dX 3\nqZ d1 1\nqZ d2 1\n")
    with caplog.at_level(logging.WARNING):
        qs = build_query_set(DataConfig(dataset=str(beir), teacher_scores=str(t), n_negatives=1), seed=0)
    assert qs.qids == ["q1", "q3"]                                      # q2, q5: no teacher score for a positive
    assert qs.pools == {"q1": ["d2", "d3"], "q3": ["d6"]}               # scored non-positives, best first
    teacher = qs.counts["teacher"]
    assert (teacher["pairs"], teacher["unknown_queries"], teacher["unknown_documents"]) == (8, 1, 1)
    assert teacher["positives_without_score"] == 3                      # d2, d3 of q2; d6 of q5
    assert "3 of 8 teacher scores name unknown ids" in caplog.text
    ex = qs.example(1, epoch=0)
    assert (ex.teacher_pos, ex.teacher_neg) == (8.0, (1.0,))


class FakeIrds:
    """What IrdsTriples uses of an ir_datasets dataset."""

    def __init__(self):
        self.pairs = [SimpleNamespace(query_id=q, doc_id_a=a, doc_id_b=b)
                      for q, a, b in [("1", "p1", "n1"), ("2", "p2", "n2"), ("9", "p1", "n1"), ("3", "p3", "n3")]]
        docs = {d: SimpleNamespace(doc_id=d, text=f"passage {d}") for d in ("p1", "p2", "p3", "n1", "n2", "n3")}
        self.store = SimpleNamespace(get_many=lambda ids: {i: docs[i] for i in ids if i in docs})

    def has_docpairs(self):
        return True

    def docpairs_iter(self):
        return iter(self.pairs)

    def docpairs_count(self):
        return len(self.pairs)

    def queries_iter(self):
        return iter([SimpleNamespace(query_id=q, text=f"question {q}") for q in ("1", "2", "3")])

    def has_qrels(self):
        return True

    def qrels_iter(self):
        return iter([SimpleNamespace(query_id="1", doc_id="p1", relevance=1),
                     SimpleNamespace(query_id="1", doc_id="p9", relevance=1)])

    def docs_store(self):
        return self.store


def test_msmarco_triples_code_path(monkeypatch):
    import ir_datasets

    monkeypatch.setattr(ir_datasets, "load", lambda irds_id: FakeIrds())
    src = IrdsTriples("msmarco-passage/train/triples-small")
    b1 = src.global_batch(0, 2)
    assert [(e.qid, e.pos_id, e.neg_ids, e.pos_text) for e in b1] == [("1", "p1", ("n1",), "passage p1"),
                                                                       ("2", "p2", ("n2",), "passage p2")]
    assert b1[0].positives == {"p1", "p9"}
    b2 = src.global_batch(1, 2)                  # query 9 is unknown: skipped, counted; then wraps around
    assert [e.qid for e in b2] == ["3", "1"] and src.counts["skipped_unknown_query"] == 1
    state = src.state()
    resumed = IrdsTriples("msmarco-passage/train/triples-small")
    resumed.load_state(state)
    assert resumed.global_batch(2, 2) == src.global_batch(2, 2)
