"""Fusion without ranx (:mod:`lsr_eval.fusion.native`): RRF and min-max wsum by hand, trec_eval tie order, query and
document counts, errors. The methods and normalisations ranx computes: tests/integration/test_fusion_ranx_by_hand.py."""

from __future__ import annotations

import pytest

from lsr_eval.errors import ConfigError, LsrEvalError
from lsr_eval.fusion import METHODS, fuse, weight_grid
from lsr_eval.fusion.fuse import Prepared, fuse_prepared
from lsr_eval.fusion.methods import Settings

# Run A ties d2 and d3 at 2.0: trec_eval ranks d3 first (docid descending), so A's ranks are d1, d3, d2, d4.
RUN_A = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 2.0, "d4": 1.0}, "q2": {"d5": 1.0}}
RUN_B = {"q1": {"d2": 5.0, "d4": 4.0}, "q3": {"d6": 7.0, "d7": 1.0}}  # q2 only in A, q3 only in B


def test_rrf_by_hand():
    f = fuse([RUN_A, RUN_B])  # rrf, k=60 by default
    assert (f.method, f.norm, f.params) == ("rrf", "none", {"k": 60})
    assert f.run["q1"] == pytest.approx({
        "d1": 1 / 61,  # A rank 1
        "d3": 1 / 62,  # A rank 2 (tie with d2 broken by docid descending, as trec_eval)
        "d2": 1 / 63 + 1 / 61,  # A rank 3, B rank 1
        "d4": 1 / 64 + 1 / 62,  # A rank 4, B rank 2
    }, rel=1e-15)
    assert f.run["q2"] == pytest.approx({"d5": 1 / 61})  # fused from A alone
    assert f.run["q3"] == pytest.approx({"d6": 1 / 61, "d7": 1 / 62})  # fused from B alone
    assert list(f.run) == ["q1", "q2", "q3"]  # first run's queries, then the new ones


def test_rrf_k_declared():
    f = fuse([RUN_A, RUN_B], "rrf", params={"k": 10})
    assert f.run["q1"]["d2"] == pytest.approx(1 / 13 + 1 / 11)


def test_wsum_min_max_by_hand():
    f = fuse([RUN_A, RUN_B], "wsum", params={"weights": [0.3, 0.7]})
    assert f.norm == "min-max"  # declared default of score-based methods
    # min-max per query: A q1 (3, 2, 2, 1) -> d1 1, d2 0.5, d3 0.5, d4 0; B q1 (5, 4) -> d2 1, d4 0
    assert f.run["q1"] == pytest.approx({"d1": 0.3, "d2": 0.3 * 0.5 + 0.7, "d3": 0.3 * 0.5, "d4": 0.0}, abs=1e-15)
    # a single document: (s - min) / max(max - min, 1e-9) = 0
    assert f.run["q2"] == {"d5": 0.0}
    # B q3 (7, 1) -> d6 1, d7 0
    assert f.run["q3"] == pytest.approx({"d6": 0.7, "d7": 0.0})


def test_counts_queries_in_some_runs_and_empty():
    run_c = {"q1": {"d1": 1.0}, "q4": {}}  # q4 present without documents
    f = fuse([RUN_A, RUN_B, run_c], "rrf")
    c = f.counts
    assert [(r.queries, r.documents, r.empty_queries, r.missing_queries) for r in c.inputs] == [
        (2, 5, 0, 2), (2, 4, 0, 2), (1, 1, 1, 2)]
    assert (c.queries_union, c.queries_in_all, c.queries_in_some, c.queries_without_documents) == (4, 1, 2, 1)
    assert c.queries_out == 3 and "q4" not in f.run
    assert c.documents_out == 4 + 1 + 2 and c.documents_cut == 0  # no top-k cut: the union of the inputs


def test_one_layout_fuses_many_settings_as_fresh_ones():
    """Tuning fuses one Prepared (its FlatRuns built once) with a grid: each candidate equals a fresh fusion, float
    for float and in trec_eval order (ties, a query in one run only, weights 0 and 1)."""
    runs = [RUN_A, RUN_B]
    prepared = Prepared(runs)
    for method, norm, params in [("wsum", "min-max", {"weights": [w, 1 - w]}) for w in (0.0, 0.3, 1.0)] + [
            ("rrf", "none", {"k": 5}), ("sum", "none", {}), ("wsum", "none", {"weights": [0.5, 2.0]})]:
        reused = fuse_prepared(prepared, Settings.make(method, norm, params, 2), depth=3).run
        fresh = fuse(runs, method, norm, params, depth=3).run
        assert [list(h.items()) for h in reused.values()] == [list(h.items()) for h in fresh.values()]
    assert list(fresh["q1"]) == ["d2", "d4", "d1"]  # wsum 0.5 / 2.0 raw: 1 + 10, 0.5 + 8, 1.5 (d3: 1, cut)


def test_a_non_finite_fused_score_names_query_and_document():
    with pytest.raises(LsrEvalError, match=r"sum with norm none: query 'q1', document 'd1': fused score nan"):
        fuse([{"q1": {"d1": float("inf"), "d2": 0.0}}, {"q1": {"d1": float("-inf")}}], "sum", "none")


def test_depth_cuts_in_trec_order():
    f = fuse([RUN_A, RUN_B], "rrf", depth=2)
    assert list(f.run["q1"]) == ["d2", "d4"] and f.counts.documents_cut == 2
    assert f.counts.documents_out == 2 + 1 + 2


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "nope"}, "unknown fusion method 'nope'; known: rrf, wsum"),
    ({"method": "condorcet"}, "PYTHONHASHSEED"),
    ({"method": "wsum", "norm": "l2", "params": {"weights": [1, 1]}},
     "unknown normalisation 'l2'; allowed: min-max, max, sum, zmuv, rank, borda, none"),
    ({"method": "wsum"}, "wsum needs one weight per run"),
    ({"method": "wsum", "params": {"weights": [1.0]}}, "1 weights for 2 runs"),
    ({"method": "wsum", "params": {"weights": [-1, 2]}}, "wsum: weight must be >= 0, got -1"),
    ({"method": "rrf", "params": {"weights": [1, 1]}}, "rrf takes no parameter weights; its parameters: k"),
    ({"method": "rrf", "params": {"k": 1.5}}, "k=1.5 must be an integer"),
    ({"method": "gmnz"}, "gmnz needs gamma"),
    ({"method": "rbc", "params": {"phi": 2}}, "phi=2 must be in [0, 1]"),
    ({"method": "posfuse"}, "posfuse estimates probs on training qrels"),
    ({"method": "rrf", "depth": 0}, "depth must be >= 1, got 0"),
])
def test_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        fuse([RUN_A, RUN_B], **kwargs)


def test_one_run_refused():
    with pytest.raises(ConfigError, match="runs must be >= 2, got 1"):
        fuse([RUN_A], "rrf")


def test_weight_grid():
    assert weight_grid(2) == [(i / 10, (10 - i) / 10) for i in range(11)]  # 0.3, not 1 - 0.7
    grid = weight_grid(3)
    # compositions of 10 into 3 parts: C(12, 2) = 66 (ranx's float filter sum == 1.0 drops some, e.g. .1+.2+.7)
    assert len(grid) == 66 and (0.1, 0.2, 0.7) in grid
    assert weight_grid(2, 0.25) == [(0.0, 1.0), (0.25, 0.75), (0.5, 0.5), (0.75, 0.25), (1.0, 0.0)]
    with pytest.raises(ConfigError, match="weight step must be 1 divided by a whole number .*got 0.3"):
        weight_grid(2, 0.3)


def test_registry_describes_every_method():
    assert "condorcet" not in METHODS and {"rrf", "wsum", "mnz", "bordafuse", "posfuse"} <= set(METHODS)
    for m in METHODS.values():
        assert m.citation and m.formula and m.default_norm in ("min-max", "none")
