"""A benchmark's rows against published figures (lsr_eval.benchmark.published): within the tolerance passes, a
miss of more than the tolerance, a failed or absent row is one line naming each; the verdict (or a skip) is
recorded beside the results."""

from __future__ import annotations

import json

import pytest

from lsr_eval.benchmark.published import CHECK_FILE, check_published, compare, read_published
from lsr_eval.cli import main
from lsr_eval.errors import ConfigError, InputError

CARDS = {"source": "the cards", "dataset": "msmarco-dev", "tolerance_points": 0.2,
         "published": {"v": {"RR@10": 38.8, "R@1000": 98.0}, "bt": {"RR@10": 38.0, "R@1000": 97.8}},
         "on_miss": "Stop."}


def _setup(tmp_path, v=(0.3870, 0.9815), bt=(0.3805, 0.9790), bt_status="ok"):
    (tmp_path / "cards.json").write_text(json.dumps(CARDS))
    res = tmp_path / "results"
    res.mkdir(exist_ok=True)
    rows = [{"dataset": "msmarco-dev", "system": "v", "status": "ok", "RR@10": v[0], "R@1000": v[1]},
            {"dataset": "msmarco-dev", "system": "bt", "status": bt_status, "RR@10": bt[0], "R@1000": bt[1]},
            {"dataset": "dl19", "system": "v", "status": "ok", "RR@10": 0.1}]
    (res / "table.json").write_text(json.dumps(rows))
    return res, tmp_path / "cards.json"


def test_within_the_tolerance_passes_and_is_recorded(tmp_path):
    res, cards = _setup(tmp_path)     # off by 0.10, 0.15, 0.05, 0.10 points
    line = check_published(res, cards)
    assert line.startswith(f"{res} meets {cards} within 0.2 points: v RR@10 38.70 (38.8), R@1000 98.15 (98)")
    record = json.loads((res / CHECK_FILE).read_text())
    assert record["stage"] == "check-published" and record["status"] == "passed" and record["misses"] == []
    assert record["compared"]["bt"]["RR@10"] == {"published": 38.0, "measured": 38.05, "off": 0.05}


def test_a_miss_of_more_than_the_tolerance_stops_with_one_line_naming_it(tmp_path):
    res, cards = _setup(tmp_path, v=(0.3859, 0.9815))          # RR@10 off by 0.21 points
    with pytest.raises(InputError) as e:
        check_published(res, cards)
    msg = str(e.value)
    assert "\n" not in msg and "v RR@10 38.59, published 38.8 (off by 0.21 > 0.2 points)" in msg
    assert "bt R" not in msg and "bt:" not in msg                 # bt meets its card: not named
    assert msg.endswith(f"Stop. (recorded in {res / CHECK_FILE})")
    assert json.loads((res / CHECK_FILE).read_text())["status"] == "failed"


def test_failed_absent_and_missing_measures_are_misses(tmp_path):
    res, cards = _setup(tmp_path, bt_status="failed: model naver/x cannot be loaded")
    published = read_published(cards)
    rows = json.loads((res / "table.json").read_text())
    _, misses = compare(rows, published)
    assert misses == ["bt on msmarco-dev: failed: model naver/x cannot be loaded"]
    _, misses = compare([r for r in rows if r["system"] != "bt"], published)
    assert misses == ["bt: no msmarco-dev row"]
    _, misses = compare([{**r, "R@1000": None} if r["system"] == "v" else r for r in rows], published)
    assert misses == ["v: no R@1000 on msmarco-dev", "bt on msmarco-dev: failed: model naver/x cannot be loaded"]


def test_skip_records_that_nothing_was_compared(tmp_path):
    (tmp_path / "cards.json").write_text(json.dumps(CARDS))
    line = check_published(tmp_path / "never-run", tmp_path / "cards.json", skip=True)
    assert "skipped (asked for): nothing compared" in line
    assert json.loads((tmp_path / "never-run" / CHECK_FILE).read_text())["status"] == "skipped"


def test_bad_inputs_are_one_line(tmp_path, capsys):
    res, cards = _setup(tmp_path)
    (res / "table.json").unlink()
    assert main(["check-published", str(res), "--expect", str(cards)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"lsr-eval check-published: error: {res / 'table.json'} does not exist: run the benchmark first (its "
        f"results are checked against {cards})"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**CARDS, "tolerance_points": -1}))
    with pytest.raises(ConfigError, match="tolerance_points must be >= 0, got -1"):
        read_published(bad)
    bad.write_text(json.dumps({**CARDS, "published": {"v": {"RR@10": "high"}}}))
    with pytest.raises(ConfigError, match="published.v must be a non-empty mapping of strings to numbers"):
        read_published(bad)


def test_the_chains_cards_are_the_model_cards():
    from conftest import REPO

    cards = read_published(REPO / "pipelines" / "data" / "efficient-splade-model-cards.json")
    assert (cards.dataset, cards.tolerance) == ("msmarco-dev", 0.2)
    assert cards.figures == {"naver-efficient-splade-V-large": {"RR@10": 38.8, "R@1000": 98.0},
                             "naver-efficient-splade-VI-BT-large": {"RR@10": 38.0, "R@1000": 97.8}}
