"""studies/exact_engines/run.py: its comparisons (studies.harness.agreement, studies.exact_engines.measure)
on hand-made runs, and the whole script on a tiny model."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
from conftest import run_script  # noqa: E402
from tiny_models import tiny_model  # noqa: E402

from studies.exact_engines.measure import integer_scores, residue, residue_runs
from studies.harness.agreement import differing_queries


def test_differing_compares_order_and_scores_bit_for_bit():
    ref = {"q1": {"a": 3.0, "b": 2.0}, "q2": {"a": 51.0, "b": 50.999996185302734}, "q3": {"a": 1.0}}
    assert differing_queries(ref, ref) == []
    assert differing_queries({"q1": {"b": 2.0, "a": 3.0}, "q2": ref["q2"], "q3": {}}, ref) == ["q1", "q3"]
    assert differing_queries(integer_scores(ref), ref) == ["q2"]  # 50.999996 -> 51
    assert differing_queries({**ref, "q4": {}}, ref) == []
    assert differing_queries({**ref, "q4": {"x": 1.0}}, ref) == ["q4"]


def test_residue_lists_the_scores_off_their_integer_and_their_tied_runs():
    run = {"q1": {"a": 52.0, "b": 51.0, "c": 51.0, "d": 50.999996185302734}, "q2": {"a": 7.0}}
    assert residue(run) == {"q1": [(4, "d", 50.999996185302734)]}
    assert residue_runs(run) == {"q1": {51: ["b", "c", "d"]}}


@pytest.mark.skipif(not all(map(importlib.util.find_spec, ("pyterrier_pisa", "bmp"))) and not os.environ.get("CI"),
                    reason="pyterrier-pisa or bmp is not installed")
def test_script_on_a_tiny_model(tiny_beir, tmp_path, capfd):
    out = tmp_path / "out"
    rc = run_script("studies/exact_engines/run.py", ["--datasets", str(tiny_beir), "--model", str(tiny_model("bert")),
                     "--out", str(out), "--work-dir", str(tmp_path / "work"), "--threads", "1", "--k", "4",
                     "--max-length-d", "64", "--max-length-q", "32"])
    assert rc == 0
    result = json.loads((out / "engines.json").read_text())["tiny/test"]
    assert result["queries"] == 3 and result["k"] == 4 and result["documents"] == 5
    assert result["differing_from_anserini"] == {"anserini_java": [], "pisa": [], "pisa_one_by_one": [], "bmp": [],
                                                 "bmp_one_by_one": []}
    assert len(set(result["hits"].values())) == 1 and result["hits"]["anserini"] > 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "check-exact-engines" and manifest["failed"] == {}
    printed = capfd.readouterr().out
    assert "| tiny/test | 3 |" in printed and "| BMP batch identical | BMP one by one identical |" in printed
