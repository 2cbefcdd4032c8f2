"""K-fold cross-validation of fusion weights over the reported queries (``lsr_eval.fusion.cross_validation``), on
hand-made runs whose answer is known, and the refusal of fusion inputs that cannot be fused."""

from __future__ import annotations

import pytest

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.evaluation import evaluate
from lsr_eval.fusion import check_inputs, cross_validate, fuse, tune_weights
from lsr_eval.fusion.cross_validation import assign_folds

# Each query has one relevant document "a" and one non-relevant "z". A run either ranks "a" first ("right") or "z"
# first ("wrong"); min-max normalises its top document to 1 and the other to 0, so a weighted sum (wA, wB) ranks
# "a" first exactly when the heavier weight is a run that is right; on equal weights "a" and "z" tie and trec_eval
# order (docid descending) puts "z" first. RR@10 is then 1 (right) or 1/2 (wrong).
RIGHT, WRONG = {"a": 2.0, "z": 1.0}, {"a": 1.0, "z": 2.0}


def _runs(pattern: dict[str, str]) -> tuple[dict, dict, dict]:
    """``pattern``: qid -> which run is right ("A" or "B"); returns (run A, run B, qrels)."""
    run_a = {q: dict(RIGHT if who == "A" else WRONG) for q, who in pattern.items()}
    run_b = {q: dict(RIGHT if who == "B" else WRONG) for q, who in pattern.items()}
    return run_a, run_b, {q: {"a": 1} for q in pattern}


def test_two_folds_each_tuned_on_the_other_give_the_known_held_out_answer():
    # q1: only A is right; q2: only B is right. Any fixed weights get one query right (RR 0.75): in-sample tuning
    # reaches 0.75. With 2 folds (one query each), the fold {q1} is fused with weights tuned on q2 (favouring B) and
    # vice versa, so both held-out queries come out wrong: RR 0.5, the answer without leakage.
    run_a, run_b, qrels = _runs({"q1": "A", "q2": "B"})
    in_sample = tune_weights([run_a, run_b], qrels, "wsum", "min-max", "RR@10", reported=set())
    assert in_sample.score == pytest.approx(0.75)
    cv = cross_validate([run_a, run_b], qrels, "wsum", "min-max", "RR@10", k=2, seed=0)
    assert evaluate(qrels, cv.run, ["RR@10"])["RR@10"] == pytest.approx(0.5)
    by_query = {f.judged[0]: f.tuning.params["weights"] for f in cv.folds}
    # the grid is lexicographic and the last of equally good candidates wins: trained on q2 (B right) the weights
    # (0, 1) ... (0.4, 0.6) all score 1 -> (0.4, 0.6); trained on q1 (A right): (0.6, 0.4) ... (1, 0) -> (1, 0)
    assert by_query == {"q1": [0.4, 0.6], "q2": [1.0, 0.0]}
    assert {f.tuning.score for f in cv.folds} == {1.0}
    assert cv.run["q1"] == pytest.approx({"a": 0.4, "z": 0.6}) and cv.run["q2"] == pytest.approx({"a": 0.0, "z": 1.0})


def test_leave_one_out_on_a_majority_pattern():
    # A is right on q1..q3, B on q4: leaving out q1, q2 or q3, the other queries still favour A (2 against 1), so
    # those come out right; leaving out q4, A is favoured, so q4 comes out wrong: RR (1 + 1 + 1 + 1/2) / 4.
    run_a, run_b, qrels = _runs({"q1": "A", "q2": "A", "q3": "A", "q4": "B"})
    cv = cross_validate([run_a, run_b], qrels, "wsum", "min-max", "RR@10", k=4, seed=3)
    assert sorted(len(f.judged) for f in cv.folds) == [1, 1, 1, 1]
    assert evaluate(qrels, cv.run, ["RR@10"], per_query=True)["RR@10"] == {"q1": 1.0, "q2": 1.0, "q3": 1.0,
                                                                           "q4": 0.5}


def test_folds_are_seeded_recorded_and_each_tuned_on_the_other_folds():
    pattern = {f"q{i}": "AB"[i % 3 == 0] for i in range(12)}
    run_a, run_b, qrels = _runs(pattern)
    run_a["extra"] = dict(RIGHT)  # answered, not judged: fused, in some fold, never used for tuning
    cv = cross_validate([run_a, run_b], qrels, "wsum", "min-max", "RR@10", k=3, seed=7)
    again = cross_validate([run_a, run_b], qrels, "wsum", "min-max", "RR@10", k=3, seed=7)
    other = cross_validate([run_a, run_b], qrels, "wsum", "min-max", "RR@10", k=3, seed=8)
    assert [f.judged for f in cv.folds] == [f.judged for f in again.folds] != [f.judged for f in other.folds]
    assert sorted(q for f in cv.folds for q in f.judged) == sorted(qrels)
    assert [q for f in cv.folds for q in f.unjudged] == ["extra"] and "extra" in cv.run
    assert sorted(len(f.judged) for f in cv.folds) == [4, 4, 4]
    assert [f.judged for f in cv.folds] == [j for j, _ in assign_folds(list(qrels), ["extra"], 3, 7)]
    for fold in cv.folds:  # the parameters a fold is fused with are those tuned without it
        rest = {q: j for q, j in qrels.items() if q not in fold.judged}
        alone = tune_weights([{q: run_a[q] for q in rest}, {q: run_b[q] for q in rest}], rest, "wsum", "min-max",
                             "RR@10", reported=set(fold.judged))
        assert fold.tuning.params["weights"] == alone.params["weights"]
        assert fold.tuning.counts["tuning_queries"] == 8
    record = cv.to_dict()
    assert (record["cv"], record["seed"], len(record["folds"])) == (3, 7, 3)
    assert record["folds"][0]["judged_queries"] == cv.folds[0].judged and "weights" in record["folds"][0]["params"]


def test_bad_fold_counts_are_refused():
    run_a, run_b, qrels = _runs({"q1": "A", "q2": "B"})
    with pytest.raises(ConfigError, match="^k must be >= 2, got 1$"):
        cross_validate([run_a, run_b], qrels, k=1)
    with pytest.raises(ConfigError, match="3 folds over 2 judged queries"):
        cross_validate([run_a, run_b], qrels, k=3)


def test_an_empty_run_or_one_sharing_no_query_is_refused():
    a = {"q1": {"d1": 1.0}, "q2": {"d2": 1.0}}
    with pytest.raises(InputError, match="fusion input empty.trec holds no document"):
        fuse([a, {"q1": {}}], names=["a.trec", "empty.trec"])
    with pytest.raises(InputError, match="fusion input run 2 holds no document"):
        fuse([a, {}])
    with pytest.raises(InputError, match=r"fusion input test.trec shares no query with dev.trec .*theirs: e.g. q7"):
        fuse([a, {"q7": {"d1": 1.0}}], names=["test.trec", "dev.trec"])
    check_inputs([a, {"q2": {"d9": 1.0}, "q7": {"d1": 1.0}}])  # one shared query is enough
