"""The exploratory controls where the rescaling result is quoted (studies/confirm_rescale_nfcorpus/controls_pages.py):
README.md, docs/results.md and the study's results page each show the block rendered from the committed runs, a
changed number fails, and the reading follows the numbers (hand-made summaries). The rebuilt backbone's logs, committed
beside the controls, are the committed backbone's loss for loss."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import REPO, load_script

P = load_script("studies/confirm_rescale_nfcorpus/controls_pages.py", "confirm_controls_pages")


@pytest.mark.parametrize("page", sorted(P.PAGES))
def test_each_page_shows_the_controls_of_the_committed_runs(page):
    summary = P.load()
    text = (REPO / P.PAGES[page]).read_text(encoding="utf-8")
    assert P.check_page(text, summary, page) == []
    k1 = summary["step0"]["test"]["arms"]["k1"]["step0"]
    changed = text.replace(f"{k1:.3f} at step 0", f"{k1 + 0.001:.3f} at step 0", 1)
    assert changed != text and P.check_page(changed, summary, page) != []      # a changed number fails


def _summary(gap0: float, lost: bool) -> dict:
    arms = {arm: {"step0": 0.12, "trained_90_mean": 0.06 if lost else 0.15, "learned": -0.06 if lost else 0.03}
            for arm in ("k1", "k16-compensated")}
    step0 = {"arms": arms, "gap_step0": gap0, "statement": "remains" if gap0 > 0.0152 else "gone"}
    long = {"gap_at_900": None, "gap_at_90_seed1": 0.05, "statement": None, "k1_learned": None}
    return {"step0": {"test": step0, "dev": copy.deepcopy(step0)}, "long": long}


def test_the_reading_follows_the_numbers():
    gone = P.short(_summary(-0.01, lost=True)).replace("\n", " ")
    assert "every arm's untrained model scores higher" in gone and "advantage is gone at step 0" in gone
    assert "how much less 90 steps lose" in gone and "has not finished yet" in gone
    kept = P.short(_summary(0.03, lost=False)).replace("\n", " ")
    assert "every arm's 90-step runs score higher on average" in kept and "advantage remains at step 0" in kept
    assert "how much less 90 steps lose" not in kept
    done = _summary(-0.01, lost=True)
    done["long"].update(gap_at_900=0.031, statement="remains", k1_learned=0.02)
    assert "k16 - k1 is +0.031" in P.short(done).replace("\n", " ")
    assert "the advantage remains; k = 1 moved +0.020" in P.short(done).replace("\n", " ")


def test_the_rebuilt_backbone_is_the_committed_one():
    budget = REPO / "results/studies/confirm-rescale-nfcorpus-controls/budget"
    for stage in ("head", "mlm"):
        rebuilt = [json.loads(line) for line in open(budget / f"backbone-{stage}-log.jsonl", encoding="utf-8")]
        committed = [json.loads(line) for line in
                     open(REPO / f"results/train/rescale-mlm-minilm-{stage}/log.jsonl", encoding="utf-8")]
        assert len(rebuilt) == len(committed) > 0
        assert [r["loss"] for r in rebuilt] == [c["loss"] for c in committed]
