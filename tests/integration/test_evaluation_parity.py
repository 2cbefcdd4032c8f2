"""Parity of :func:`lsr_eval.evaluation.evaluate` (ranx) with trec_eval, through pytrec_eval (trec_eval's C code).

pytrec_eval evaluates only the queries found in both run and qrels and has no ``-c``: the reference below adds the
zeros of ``-c`` (judged queries without results) and divides by the number of judged queries, as trec_eval's
``meas_avg.c`` does. RR@k has no trec_eval measure; the reference is ``recip_rank`` on each ranking cut to k in
trec_eval order (= ``trec_eval -M k``), sorted here by an independent port of trec_eval's ``comp_sim_docno``.
"""

from __future__ import annotations

import functools
import json
import os
import random

import pytest

if os.environ.get("CI", "").lower() not in ("", "0", "false"):
    import pytrec_eval  # CI claims this parity: a missing pytrec_eval fails there instead of skipping
else:
    pytrec_eval = pytest.importorskip("pytrec_eval")

from conftest import shared_path  # noqa: E402

from lsr_eval.data.trec_files import read_qrels  # noqa: E402
from lsr_eval.evaluation import evaluate  # noqa: E402

TOL = 1e-6

#: our measure name -> (pytrec_eval measure, result key, relevance level, cutoff applied to the run first)
REFERENCE = {
    "nDCG@10": ("ndcg_cut.10", "ndcg_cut_10", 1, None),
    "nDCG@1000": ("ndcg_cut.1000", "ndcg_cut_1000", 1, None),
    "nDCG": ("ndcg", "ndcg", 1, None),
    "RR@10": ("recip_rank", "recip_rank", 1, 10),
    "RR": ("recip_rank", "recip_rank", 1, None),
    "RR@10(rel=2)": ("recip_rank", "recip_rank", 2, 10),
    "R@100": ("recall.100", "recall_100", 1, None),
    "R@1000": ("recall.1000", "recall_1000", 1, None),
    "R@1000(rel=2)": ("recall.1000", "recall_1000", 2, None),
    "R@10(rel=2)": ("recall.10", "recall_10", 2, None),
    "R": ("set_recall", "set_recall", 1, None),
    "MAP": ("map", "map", 1, None),
    "MAP@100": ("map_cut.100", "map_cut_100", 1, None),
    "MAP(rel=2)": ("map", "map", 2, None),
    "P@10": ("P.10", "P_10", 1, None),
    "P@5(rel=2)": ("P.5", "P_5", 2, None),
}


def _comp_sim_docno(a: tuple[str, float], b: tuple[str, float]) -> int:
    """trec_eval's qsort comparator: higher score first, then strcmp(b, a) on the bytes."""
    if a[1] != b[1]:
        return -1 if a[1] > b[1] else 1
    da, db = a[0].encode(), b[0].encode()
    return (db > da) - (db < da)


def _cut(run: dict[str, dict[str, float]], k: int) -> dict[str, dict[str, float]]:
    key = functools.cmp_to_key(_comp_sim_docno)
    return {q: dict(sorted(h.items(), key=key)[:k]) for q, h in run.items()}


def trec_eval_c(qrels, run, name: str) -> float:
    """``trec_eval -c`` mean of one measure, through pytrec_eval."""
    measure, key, rel, cut = REFERENCE[name]
    run = {q: h for q, h in run.items() if h and q in qrels}
    if cut is not None:
        run = _cut(run, cut)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=rel).evaluate(run)
    return sum(per_query.get(q, {}).get(key, 0.0) for q in qrels) / len(qrels)


def assert_parity(qrels, run) -> None:
    ours = evaluate(qrels, run, list(REFERENCE))
    ref = {name: trec_eval_c(qrels, run, name) for name in REFERENCE}
    assert list(ours) == list(REFERENCE)
    for name in REFERENCE:
        assert ours[name] == pytest.approx(ref[name], abs=TOL), name
    # not a vacuous comparison: the run ranks relevant documents high enough to count
    assert all(ref[name] > 0 for name in ("nDCG@10", "RR@10", "R@100", "MAP", "P@10"))
    if any(g >= 2 for judged in qrels.values() for g in judged.values()):
        assert ref["R@1000(rel=2)"] > 0


def _graded_qrels(rng: random.Random, n_queries: int, docs: list[str]) -> dict[str, dict[str, int]]:
    """Grades -1..3 (some negative, many 0), plus one all-zero query and one without grade >= 2."""
    qrels = {}
    for i in range(n_queries):
        judged = rng.sample(docs, rng.randint(1, 40))
        qrels[f"q{i}"] = {d: rng.choice([-1, 0, 0, 0, 1, 1, 2, 3]) for d in judged}
    qrels["all_zero"] = {d: 0 for d in rng.sample(docs, 5)}
    qrels["only_grade1"] = {d: 1 for d in rng.sample(docs, 5)}
    return qrels


def _synthetic_run(rng: random.Random, qrels, docs: list[str], depth: int, decimals: int | None):
    """Per judged query: ~60% of its judged documents plus random others, up to ``depth``; random scores, higher
    for higher grades (rounded to ``decimals``: ties)."""
    run = {}
    for q, judged in qrels.items():
        picked = sorted({d for d in judged if rng.random() < 0.6} | set(rng.sample(docs, depth)))
        rng.shuffle(picked)
        scores = {d: rng.gauss(0, 1) + 0.7 * max(judged.get(d, 0), 0) for d in picked[:depth]}
        run[q] = {d: round(s, decimals) for d, s in scores.items()} if decimals is not None else scores
    return run


# docids of unequal lengths, mixed case, digits and non-ASCII: exercises the strcmp tie order
DOCS = [f"d{i}" for i in range(3000)] + [f"D{i}" for i in range(500)] + [f"é{i}" for i in range(200)]


def test_parity_random_scores():
    rng = random.Random(11)
    qrels = _graded_qrels(rng, 40, DOCS)
    assert_parity(qrels, _synthetic_run(rng, qrels, DOCS, depth=1000, decimals=None))


def test_parity_with_score_ties():
    rng = random.Random(12)
    qrels = _graded_qrels(rng, 40, DOCS)
    run = _synthetic_run(rng, qrels, DOCS, depth=300, decimals=1)  # ~30 distinct scores per query: many ties
    assert sum(len(h) - len(set(h.values())) for h in run.values()) > 1000
    assert_parity(qrels, run)
    # the tie order matters: all scores equal, the ranking is by docid alone
    flat = {q: dict.fromkeys(h, 1.0) for q, h in run.items()}
    assert_parity(qrels, flat)
    # ... and another tie order (docid ascending) gives other values, so the parity above can fail
    ascending = {q: {d: -i for i, d in enumerate(sorted(h, key=str.encode))} for q, h in flat.items()}
    assert evaluate(qrels, ascending)["nDCG@10"] != pytest.approx(evaluate(qrels, flat)["nDCG@10"], abs=TOL)


def test_parity_with_missing_and_extra_queries():
    rng = random.Random(13)
    qrels = _graded_qrels(rng, 40, DOCS)
    run = _synthetic_run(rng, qrels, DOCS, depth=200, decimals=2)
    for q in ["q0", "q1", "q2", "q3", "q4"]:
        del run[q]  # judged, no results: count 0
    run["q5"] = {}  # judged, empty ranking: counts 0
    run["not_judged"] = {"d1": 3.0, "d2": 2.0}  # ignored
    assert_parity(qrels, run)


@pytest.mark.parametrize("dataset", ["scifact", "msmarco-dl19-5k"])
def test_parity_real_qrels(dataset):
    folder = shared_path("beir", dataset)
    qrels = read_qrels(folder / "qrels" / "test.tsv")
    docs = [json.loads(line)["_id"] for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    rng = random.Random(14)
    run = _synthetic_run(rng, qrels, docs, depth=1000, decimals=3)
    del run[next(iter(run))]
    assert_parity(qrels, run)
