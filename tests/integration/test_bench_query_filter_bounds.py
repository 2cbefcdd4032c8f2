"""studies/query_filter_bounds/run.py on a tiny model: every bound keeps every truly positive id."""

from __future__ import annotations

import json

from conftest import run_script  # noqa: E402
from tiny_models import tiny_model  # noqa: E402


def test_every_bound_is_exact_and_counts_what_it_keeps(tiny_beir, tmp_path):
    out = tmp_path / "out"
    assert run_script("studies/query_filter_bounds/run.py", ["--dataset", str(tiny_beir),
                       "--model", str(tiny_model("bert")), "--max-length-q", "32",
                       "--clusters", "4", "--groups", "2", "--out", str(out),
                       "--work-dir", str(tmp_path / "work")]) == 0
    result = json.loads((out / "bounds.json").read_text())
    assert set(result["bounds"]) == {"int8", "clusters-4", "box-2"}
    for name, b in result["bounds"].items():
        assert b["missed_positive_ids"] == 0, name                 # an exact filter misses nothing
        assert result["positive_mean"] <= b["kept_mean"] <= result["vocab"], name
        assert b["first_pass_multiply_adds"] > 0
    assert json.loads((out / "manifest.json").read_text())["stage"] == "bench-query-filter-bounds"
