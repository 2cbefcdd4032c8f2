"""Every registered ranx method and normalisation on random runs with ties; RRF against a plain-Python reference;
tuning agrees with ranx.optimize_fusion where no fused scores tie. Slow on a cold numba cache (ranx compiles each
method once), a few seconds warm."""

from __future__ import annotations

import numpy as np
import pytest

from lsr_eval.fusion import METHODS, NORMALISATIONS, fuse, tune_weights
from lsr_eval.fusion.ranx_runs import import_ranx
from lsr_eval.runs.trec import trec_ranking

pytestmark = pytest.mark.slow


def _runs(seed: int, queries: int = 12, docs: int = 15, pool: int = 30, levels: int | None = 4):
    """Two runs over random documents; ``levels`` score values make ties frequent (None: continuous scores)."""
    rng = np.random.default_rng(seed)

    def one():
        return {f"q{q}": {f"d{d}": float(rng.integers(0, levels) if levels else rng.random())
                          for d in rng.choice(pool, docs, replace=False)} for q in range(queries)}

    qrels = {f"q{q}": {f"d{d}": int(rng.integers(1, 3)) for d in rng.choice(pool, 5, replace=False)}
             for q in range(queries)}
    return one(), one(), qrels


def test_rrf_matches_plain_python_with_ties():
    a, b, _ = _runs(0)
    expected = {}
    for run in (a, b):
        for q, hits in run.items():
            for rank, (d, _) in enumerate(trec_ranking(hits), start=1):
                expected.setdefault(q, {}).setdefault(d, 0.0)
                expected[q][d] += 1 / (60 + rank)
    got = fuse([a, b], "rrf").run
    assert got.keys() == expected.keys()
    for q in expected:
        assert got[q] == pytest.approx(expected[q], rel=1e-14)


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_keeps_every_document_and_is_deterministic(name):
    a, b, qrels = _runs(1)
    train_a, train_b, train_qrels = _runs(2)
    train_qrels = {f"t{q}": j for q, j in train_qrels.items()}
    train_a, train_b = ({f"t{q}": h for q, h in r.items()} for r in (train_a, train_b))
    m = METHODS[name]
    params = {}
    if m.trained:
        params = tune_weights([train_a, train_b], train_qrels, name, metric="nDCG@10", reported=qrels).params
    else:
        if m.weighted:
            params["weights"] = [0.4, 0.6]
        if m.scalar is not None and m.scalar.default is None:
            params[m.scalar.name] = m.scalar.grid[len(m.scalar.grid) // 2]
    first = fuse([a, b], name, params=params)  # fuse() raises if ranx returns other documents than the inputs'
    second = fuse([a, b], name, params=params)
    assert first.run == second.run
    assert first.counts.documents_out == sum(len(a[q].keys() | b[q].keys()) for q in a)


@pytest.mark.parametrize("norm", NORMALISATIONS)
def test_every_normalisation(norm):
    a, b, _ = _runs(3)
    f = fuse([a, b], "wsum", norm, {"weights": [0.5, 0.5]})
    assert f.norm == norm and f.counts.queries_out == 12


def test_tuning_agrees_with_ranx_optimize_fusion_without_ties():
    ranx = import_ranx()
    a, b, qrels = _runs(4, queries=20, docs=25, pool=40, levels=None)
    ours = tune_weights([a, b], qrels, "wsum", metric="nDCG@10", reported=["none"])
    theirs = ranx.optimize_fusion(ranx.Qrels(qrels), [ranx.Run(a), ranx.Run(b)], norm="min-max", method="wsum",
                                  metric="ndcg@10", show_progress=False, return_optimization_report=True)
    assert ours.params["weights"] == [float(w) for w in theirs[0]["weights"]]
    assert [t["score"] for t in ours.trials] == pytest.approx(list(theirs[1].results), abs=1e-12)
