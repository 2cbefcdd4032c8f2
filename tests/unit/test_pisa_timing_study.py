"""The PISA timing study (studies/pisa_timing): its committed summary made again from its raw file, the run after its
registration, and the numbers docs/efficiency-paper.md quotes read from the committed result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from study_registration import ran_after_registration

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "results" / "studies" / "pisa-timing"
sys.path.insert(0, str(REPO / "studies" / "pisa_timing"))
from timing import METHODS, summary_md  # noqa: E402


def _committed() -> dict:
    if not (RESULT / "timing.json").is_file():
        pytest.skip("the study has not been committed")
    return json.loads((RESULT / "timing.json").read_text())


def test_the_summary_is_made_again_and_the_run_follows_its_registration():
    doc = _committed()
    assert summary_md(doc) == (RESULT / "summary.md").read_text()
    assert ran_after_registration(RESULT / "manifest.json", "studies/pisa_timing/README.md")
    for c in doc["collections"]:   # every registered method measured, the same top k from each of ours
        assert set(c["methods"]) == set(METHODS[:4]) and c["hits_equal"]
        assert c["methods"]["protocol"]["n"] == c["queries"] * doc["passes"]


def test_the_efficiency_page_quotes_the_committed_figures():
    doc = _committed()
    page = (REPO / "docs" / "efficiency-paper.md").read_text()
    for c in doc["collections"]:
        m = c["methods"]
        assert f"{m['empty_query']['mean_ms'] * 1e3:.1f} µs" in page, c["collection"]
        for name, value in c["ratios_of_means"].items():
            assert f"{value:.2f}" in page, (c["collection"], name)
