"""pipelines/bench_bf16_fidelity.py: the comparisons on hand-made runs, and the whole script on a tiny model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipelines"))

import bench_bf16_fidelity as bench  # noqa: E402
from tiny_models import tiny_model  # noqa: E402


def test_top_docs_ranks_by_score_then_docid():
    assert bench.top_docs({"b": 1.0, "a": 1.0, "c": 2.0, "d": 0.5}, 3) == ["c", "a", "b"]


def test_compare_top_counts_order_and_set_identity():
    ref = {"q1": {"a": 3.0, "b": 2.0}, "q2": {"a": 3.0, "b": 2.0}, "q3": {"a": 1.0}, "q4": {"x": 1.0}}
    other = {"q1": {"a": 3.0, "b": 2.0},          # identical
             "q2": {"a": 2.0, "b": 3.0},          # same set, swapped
             "q3": {"z": 1.0}}                    # disjoint; q4 missing
    got = bench.compare_top(ref, other, k=2)
    assert (got["queries"], got["identical_ordered"], got["identical_set"]) == (4, 1, 2)
    assert got["share_ordered"] == 0.25 and got["share_set"] == 0.5
    assert got["missing_in_other"] == ["q4"] and got["differing_count"] == 3
    assert got["differing"][0] == {"query": "q2", "overlap": 2, "same_set": True}
    assert got["differing"][1] == {"query": "q3", "overlap": 0, "same_set": False}


def test_compare_vectors_lists_differing_terms():
    ref = {"q1": {"a": 3, "b": 1}, "q2": {"a": 2}}
    got = bench.compare_vectors(ref, {"q1": {"a": 3, "b": 1}, "q2": {"a": 1, "c": 4}})
    assert got["identical"] == 1 and got["share"] == 0.5
    assert got["differing"] == [{"query": "q2", "terms": {"a": [2, 1], "c": [0, 4]}}]


def test_script_runs_both_precisions(tiny_beir, tmp_path, capsys):
    out = tmp_path / "out"
    rc = bench.main(["--dataset", str(tiny_beir), "--model", str(tiny_model("bert")), "--out", str(out),
                     "--work-dir", str(tmp_path / "work"), "--threads", "1", "--max-length-d", "64",
                     "--max-length-q", "32"])
    assert rc == 0
    fid = json.loads((out / "fidelity.json").read_text())
    assert fid["precision"]["fp32"]["name"] == "fp32" and fid["precision"]["bf16"]["name"] == "bf16"
    top = fid["top10"]
    assert top["queries"] > 0 and 0 <= top["identical_set"] <= top["queries"]
    assert top["identical_ordered"] <= top["identical_set"]
    assert set(fid["metrics"]) and all(v["bf16"] is not None for v in fid["metrics"].values())
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "bench-bf16-fidelity"
    assert "Identical top 10" in capsys.readouterr().out
