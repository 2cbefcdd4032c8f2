"""D3 of the MS MARCO scale study (studies/msmarco_scale/duplication.py): the registered rule by hand, the template
pools drawn as registered, and the committed result made again from its raw file, run after its registration."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from study_registration import ran_after_registration

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "results" / "studies" / "msmarco-scale-duplication"
sys.path.insert(0, str(REPO / "studies" / "msmarco_scale"))
from duplication import summary_md, verdict  # noqa: E402


def _pool(latency: float, kth: float) -> dict:
    return {"latency_mean_ms": latency, "kth_score_k10": kth}


def test_the_rule_moves_against_the_5000_pool_and_decides_at_10_percent():
    same = verdict({500: _pool(10.9, 100), 5000: _pool(10.0, 100)})
    assert same["duplication_matters"] is False and same["largest_move"] == pytest.approx(0.09)
    moved = verdict({500: _pool(10.0, 88.0), 5000: _pool(10.0, 100)})   # the k-th score 12% lower
    assert moved["duplication_matters"] is True and moved["moves"][500]["kth_score_k10"] == pytest.approx(-0.12)
    assert verdict({500: _pool(10.0, 100)})["status"] == "incomplete"             # no reference pool yet
    assert verdict({500: {"kth_score_k10": 1.0}, 5000: _pool(1, 1)})["status"] == "incomplete"


def test_the_committed_result_is_made_again_and_follows_its_registration():
    if not (RESULT / "duplication.json").is_file():
        pytest.skip("D3 has not been committed")
    doc = json.loads((RESULT / "duplication.json").read_text())
    assert summary_md(doc) == (RESULT / "summary.md").read_text()
    assert ran_after_registration(RESULT / "manifest.json", "studies/msmarco_scale/duplication.py")
