"""The fusions of :mod:`lsr_eval.fusion.native` give ranx's fused runs float for float (documents in trec_eval
order, where ranx leaves tied ones in no defined order): on the published DL19 runs (two and three of them, one
with a query removed) and on runs full of ties."""

from __future__ import annotations

import random

import pytest
from conftest import shared_path

from lsr_eval.fusion.fuse import Prepared, fuse_prepared
from lsr_eval.fusion.methods import Settings
from lsr_eval.fusion.native import supports
from lsr_eval.runs.trec import read_run, trec_ranking

CASES = [("rrf", "none", {}), ("rrf", "none", {"k": 10}), ("sum", "none", {}), ("sum", "min-max", {}),
         ("wsum", "min-max", {"weights": "split"}), ("wsum", "none", {"weights": "split"})]


def _runs(n: int) -> list[dict]:
    runs = [read_run(shared_path("msmarco-passage", "runs", f"dl19.{name}.top100.trec"))
            for name in ("bm25-flat", "splade-pp-ed", "tas-b")[:n]]
    del runs[-1][next(iter(runs[-1]))]  # a query fused from the other runs only
    return runs


def _tied(rng: random.Random) -> list[dict]:
    return [{f"q{q}": {f"d{rng.randint(0, 80)}": round(rng.random(), 1) for _ in range(40)} for q in range(12)}
            for _ in range(3)]


@pytest.mark.parametrize("method, norm, params", CASES)
@pytest.mark.parametrize("source", ["dl19-2", "dl19-3", "ties"])
def test_native_fusion_equals_ranx(method, norm, params, source):
    runs = _tied(random.Random(7)) if source == "ties" else _runs(int(source[-1]))
    if params.get("weights") == "split":
        params = {"weights": [0.3, 0.7] if len(runs) == 2 else [0.2, 0.5, 0.3]}
    settings = Settings.make(method, norm, params, len(runs))
    assert supports(settings)
    prepared = Prepared(runs)
    ours = fuse_prepared(prepared, settings, depth=None).run
    theirs = fuse_prepared(prepared, settings, depth=None, native=False).run
    assert list(ours) == list(theirs)
    for qid in theirs:
        assert ours[qid] == theirs[qid], qid
        assert list(ours[qid]) == [d for d, _ in trec_ranking(theirs[qid], qid)]


def test_other_methods_and_norms_go_to_ranx():
    assert not supports(Settings.make("rrf", "min-max", {}, 2))
    assert not supports(Settings.make("mnz", None, {}, 2))
    assert not supports(Settings.make("wsum", "zmuv", {"weights": [0.5, 0.5]}, 2))
