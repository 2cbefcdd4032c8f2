"""The MS MARCO scale study's generator (studies/msmarco_scale/generator.py): seeded, bounded, and keeping real
co-occurrence, unlike independent terms."""

from __future__ import annotations

import sys
from itertools import combinations
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies" / "msmarco_scale"))
from generator import draw, fit  # noqa: E402

#: two topics whose terms never meet in a real document
REAL = [{"cat": 3, "dog": 5, "pet": 2}, {"cat": 1, "pet": 4}, {"dog": 2, "pet": 1},
        {"stock": 7, "bond": 3, "yield": 2}, {"bond": 1, "yield": 5}, {"stock": 2, "yield": 1}]


def test_fit_counts_document_frequencies_and_impacts():
    state = fit(REAL)
    df = dict(zip(state.vocab, state.df.tolist()))
    assert df == {"cat": 2, "dog": 2, "pet": 3, "stock": 2, "bond": 2, "yield": 3}
    assert sorted(state.impacts[state.vocab.index("pet")].tolist()) == [1, 2, 4]
    with pytest.raises(ValueError):
        fit([])


def test_draw_is_seeded_and_keeps_everything_at_keep_1_sigma_0():
    state = fit(REAL)
    a, b = list(draw(state, 50, seed=3)), list(draw(state, 50, seed=3))
    assert a == b and a != list(draw(state, 50, seed=4))
    assert all(vector in REAL for _, vector in draw(state, 100, keep=1.0, sigma=0.0))
    assert [d for d, _ in draw(state, 3, prefix="x")] == ["x0", "x1", "x2"]


def test_co_occurrence_survives_where_independent_terms_would_mix_topics():
    state = fit(REAL)
    pets, money = {"cat", "dog", "pet"}, {"stock", "bond", "yield"}
    mixed = sum(1 for _, v in draw(state, 2000, keep=0.9, sigma=0.25, seed=1)
                if set(v) & pets and set(v) & money)
    # a dropped term (10%) is replaced from the whole vocabulary: about half the replacements cross topics, so
    # most documents stay on one topic; independent draws of 2-3 terms would mix them in most documents
    assert mixed / 2000 < 0.3
    together = {p for _, v in draw(state, 2000, keep=1.0, seed=2) for p in combinations(sorted(v), 2)}
    assert ("bond", "stock") in together and ("cat", "stock") not in together
    assert all(w >= 1 for _, v in draw(state, 500, sigma=2.0) for w in v.values())


RESULT = Path(__file__).resolve().parents[2] / "results" / "studies" / "msmarco-scale-generator"


def test_the_committed_check_summary_is_made_again_from_its_raw_file_and_the_run_follows_its_registration():
    """results/studies/msmarco-scale-generator: summary.md equals what check.py makes of check.json, and the commit
    that ran it descends from the commit that pre-registered the study (studies/msmarco_scale/README.md)."""
    import json
    import subprocess

    if not (RESULT / "check.json").is_file():
        pytest.skip("the check has not been committed")
    from check import summary_md

    check = json.loads((RESULT / "check.json").read_text())
    assert summary_md(check) == (RESULT / "summary.md").read_text()
    repo = RESULT.parents[2]
    registered = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--",
                                 "studies/msmarco_scale/README.md"], cwd=repo, capture_output=True, text=True,
                                check=True).stdout.split()
    ran = json.loads((RESULT / "manifest.json").read_text())["commit"]
    assert registered and subprocess.run(["git", "merge-base", "--is-ancestor", registered[-1], ran],
                                         cwd=repo).returncode == 0
