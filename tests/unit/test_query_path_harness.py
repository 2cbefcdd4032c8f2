"""Side-by-side query-path harness (lsr_eval.efficiency.latency.query_path; studies.query_path.measure:
part_breakdown, summarise_path; studies.harness.measure.run_interleaved) and the per-part table of the query-path
benchmark (studies.query_path.summary), on hand-made paths and results."""

from __future__ import annotations

import pytest

from lsr_eval.data.types import Query
from lsr_eval.efficiency.latency import PARTS, query_path
from lsr_eval.errors import InputError
from studies.harness.measure import run_interleaved
from studies.query_path.measure import part_breakdown, summarise_path
from studies.query_path.summary import breakdown_md, write_per_query

QUERIES = [Query(f"q{i}", f"text {i}") for i in range(3)]


def test_run_interleaved_rotates_the_order_per_query():
    calls = []
    paths = {name: (lambda q, name=name: calls.append((q.id, name)) or {"name": name}) for name in "abc"}
    out = run_interleaved(QUERIES, paths)
    assert calls == [("q0", "a"), ("q0", "b"), ("q0", "c"), ("q1", "b"), ("q1", "c"), ("q1", "a"),
                     ("q2", "c"), ("q2", "a"), ("q2", "b")]
    assert {n: len(r) for n, r in out.items()} == {"a": 3, "b": 3, "c": 3}


def _result(total: float, terms: int = 2, candidates=None, **parts: float) -> dict:
    return {"total": total, "encode": total / 2, "search": total / 2, "terms": terms, "parts": parts,
            "candidates": candidates}


def test_part_breakdown_hand_computed():
    results = [_result(100.0, tokenize=50.0, search=50.0, candidates=999),          # warm-up: not counted
               _result(10.0, tokenize=1.0, session=4.0, search=3.0, candidates=100),
               _result(20.0, tokenize=3.0, session=6.0, search=7.0, candidates=300),
               _result(30.0, tokenize=2.0, session=8.0, search=11.0, select=1.0, candidates=200)]
    bd = part_breakdown(results, warmup=1)
    assert list(bd["parts"]) == ["tokenize", "session", "search", "unaccounted"]   # select: not in every query
    assert bd["parts"]["tokenize"]["mean_ms"] == pytest.approx(2.0)
    assert bd["parts"]["session"]["p50_ms"] == pytest.approx(6.0)
    # unaccounted per query: 10-8 = 2, 20-16 = 4, 30-21 = 9 (select is not one of the parts summed)
    assert bd["parts"]["unaccounted"]["mean_ms"] == pytest.approx(5.0)
    assert bd["total"]["mean_ms"] == pytest.approx(20.0)
    assert bd["parts"]["search"]["share_of_mean_total"] == pytest.approx(7.0 / 20.0)
    assert sum(p["share_of_mean_total"] for p in bd["parts"].values()) == pytest.approx(1.0)
    assert bd["mean_candidates"] == pytest.approx(200.0)
    with pytest.raises(InputError):
        part_breakdown(results, warmup=4)


def test_summarise_path_counts_terms_after_warmup():
    results = [_result(1.0, terms=100), _result(2.0, terms=4), _result(4.0, terms=6)]
    s = summarise_path(results, 1, ("total",))
    assert s["total"]["mean_ms"] == pytest.approx(3.0) and s["total"]["n"] == 2
    assert s["mean_terms"] == pytest.approx(5.0)


class _Weights:
    """Text -> weight map, reporting two parts as an encoder does (seconds)."""

    def __call__(self, text, qid, stats):
        stats["tokenize"] = stats.get("tokenize", 0.0) + 0.001
        stats["session"] = stats.get("session", 0.0) + 0.002
        stats["candidates"] = stats.get("candidates", 0) + 7
        return {"a": 3, "b": 1}


class _Searcher:
    def __init__(self):
        self.seen = []

    def search(self, weights, k, qid):
        self.seen.append((dict(weights), k, qid))
        return [("d1", 4.0), ("d2", 1.0)][:k]


def test_query_path_reports_parts_in_ms():
    searcher = _Searcher()
    r = query_path(_Weights(), searcher, 1)(QUERIES[0])
    assert searcher.seen == [({"a": 3, "b": 1}, 1, "q0")]
    assert r["hits"] == [("d1", 4.0)] and r["terms"] == 2 and r["weights"] == {"a": 3, "b": 1}
    assert r["parts"]["tokenize"] == pytest.approx(1.0) and r["parts"]["session"] == pytest.approx(2.0)
    assert r["parts"]["search"] == r["search"] >= 0 and r["candidates"] == 7
    assert set(r["parts"]) <= set(PARTS)
    assert r["total"] == pytest.approx(r["encode"] + r["search"])


def test_summary_has_a_row_per_part():
    results = [_result(10.0, tokenize=1.0, search=3.0, candidates=5), _result(20.0, tokenize=3.0, search=7.0,
                                                                             candidates=7)]
    lines = breakdown_md({"lsr-eval": part_breakdown(results, 0)})
    rows = [line.split(" | ")[0].strip("| ") for line in lines if line.startswith("| ") and "---" not in line]
    assert rows == ["part", "tokenize", "search", "unaccounted", "total"]
    assert "6.0 candidate ids per query" in "\n".join(lines)
    assert breakdown_md({}) == []


def test_per_query_csv_has_the_parts(tmp_path):
    import csv

    ours = [_result(10.0, tokenize=1.0, search=3.0), _result(20.0, tokenize=3.0, search=7.0)]
    theirs = [{"encode": 5.0, "search": 6.0, "total": 11.0, "read": 1.0, "terms": 4},
              {"encode": 5.0, "search": 6.0, "total": 11.0, "read": 1.0, "terms": 4}]
    agreement = {"pyserini": {"overlaps": [1.0, 0.5]}}
    write_per_query(tmp_path / "q.csv", QUERIES[:2], {"lsr-eval": ours, "pyserini": theirs},
                                     agreement, warmup=1)
    rows = list(csv.DictReader(open(tmp_path / "q.csv", encoding="utf-8")))
    assert [r["warmup"] for r in rows] == ["1", "0"]
    assert rows[1]["lsr-eval:part:tokenize_ms"] == "3.000" and rows[1]["lsr-eval:part:search_ms"] == "7.000"
    assert rows[1]["pyserini:read_ms"] == "1.000" and rows[1]["overlap10:pyserini"] == "0.50"
    assert not any(k.startswith("pyserini:part:") for k in rows[0])
