""":func:`lsr_eval.evaluation.evaluate` computes each family's ranx metric exactly: per query, bit for bit, on the
published DL19 runs and on synthetic runs with ties, negative grades, an empty ranking and an all-zero query."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import shared_path

from lsr_eval.data.trec_files import read_qrels
from lsr_eval.evaluation import evaluate
from lsr_eval.evaluation.measures import FAMILIES, parse_measures
from lsr_eval.runs.trec import hits_arrays, read_run, trec_order

MEASURES = ["nDCG@10", "nDCG", "RR@10", "RR(rel=2)", "R@100", "R(rel=2)", "P@10", "P", "MAP", "MAP@100(rel=2)"]


def _ranx(qrels, run, measures) -> dict[str, list[float]]:
    """Per-query values straight from ``ranx.metrics`` on arrays ranked in trec_eval order."""
    from numba.typed import List

    from lsr_eval.fusion.ranx_runs import import_ranx

    metrics = import_ranx().metrics

    q_arrays, r_arrays = [], []
    for qid, judged in qrels.items():
        ordered = sorted(judged.items(), key=lambda kv: kv[1], reverse=True)
        index = {d: i for i, (d, _) in enumerate(ordered)}
        q_arrays.append(np.array([[i, g] for i, (_, g) in enumerate(ordered)], dtype=np.float64).reshape(-1, 2))
        docids, scores = hits_arrays(qid, run.get(qid) or {})
        ids = [index.get(docids[i], -1) for i in trec_order(docids, scores).tolist()]
        r_arrays.append(np.array([[d, len(ids) - j] for j, d in enumerate(ids)], dtype=np.float64).reshape(-1, 2))
    return {m.name: getattr(metrics, FAMILIES[m.family].ranx)(List(q_arrays), List(r_arrays), m.cutoff or 0,
                                                                 m.rel).tolist()
            for m in parse_measures(measures)}


def _assert_same(qrels, run) -> None:
    ours = evaluate(qrels, run, MEASURES, per_query=True)
    theirs = _ranx(qrels, run, MEASURES)
    for name in MEASURES:
        assert list(ours[name].values()) == theirs[name], name
    assert any(v > 0 for v in theirs["nDCG@10"])


@pytest.mark.parametrize("name", ["bm25-flat", "splade-pp-ed"])
def test_equal_to_ranx_on_dl19(name):
    qrels = read_qrels(shared_path("msmarco-passage", "qrels.dl19-passage.txt"))
    _assert_same(qrels, read_run(shared_path("msmarco-passage", "runs", f"dl19.{name}.top100.trec")))


def test_equal_to_ranx_with_ties_and_odd_queries():
    rng = random.Random(5)
    qrels = {f"q{i}": {f"d{rng.randint(0, 200)}": rng.choice([-1, 0, 1, 2, 3]) for _ in range(25)} for i in range(30)}
    qrels["all_zero"] = {"d1": 0, "d2": -1}
    run = {q: {f"d{rng.randint(0, 200)}": round(rng.random(), 1) for _ in range(60)} for q in qrels}
    run["q0"] = {}
    del run["q1"]
    _assert_same(qrels, run)


def test_blocks_of_queries_give_the_same_values(monkeypatch):
    import importlib

    module = importlib.import_module("lsr_eval.evaluation.evaluate")  # the module (its package names the function)

    qrels = read_qrels(shared_path("msmarco-passage", "qrels.dl19-passage.txt"))
    run = read_run(shared_path("msmarco-passage", "runs", "dl19.tas-b.top100.trec"))
    whole = evaluate(qrels, run, MEASURES, per_query=True)
    monkeypatch.setattr(module, "BLOCK_QUERIES", 5)  # 43 queries: 9 blocks, the last one of 3
    assert evaluate(qrels, run, MEASURES, per_query=True) == whole
    _assert_same(qrels, run)
