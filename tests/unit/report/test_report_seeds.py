"""Systems that differ only in their training seed: one row per arm (mean, sd, 95% t interval), its seeds below,
the interval figure, and the report section; values hand-computed."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from lsr_eval.cli import main
from lsr_eval.report.loading import TrainingRun
from lsr_eval.report.seeds import seed_arms, seed_of, seeds_figure, seeds_table

HALF = 4.302653 * 0.1 / math.sqrt(3)   # t_{0.975,2} * sd / sqrt(3) for the values 0.1, 0.2, 0.3 (sd 0.1): 0.248414


def rows(extra: list[dict] | None = None) -> pd.DataFrame:
    base = [{"dataset": "d", "system": f"arm-s{s}", "status": "ok", "nDCG@10": v, "run": ""}
            for s, v in ((3, 0.3), (1, 0.1), (2, 0.2))]
    base += [{"dataset": "d", "system": "bm25", "status": "ok", "nDCG@10": 0.5, "run": ""},
             {"dataset": "d", "system": "lone-s1", "status": "ok", "nDCG@10": 0.4, "run": ""},
             {"dataset": "e", "system": "arm-s4", "status": "ok", "nDCG@10": 0.9, "run": ""}]
    return pd.DataFrame(base + (extra or []))


def test_seed_is_the_name_suffix():
    assert seed_of("confirm-nfcorpus-k2-s3") == ("confirm-nfcorpus-k2", 3)
    assert seed_of("bm25") is None and seed_of("-s") is None and seed_of("k-s1x") is None


def test_arm_row_with_its_seeds_below():
    # arm: 0.1, 0.2, 0.3: mean 0.2, sd sqrt((0.01 + 0 + 0.01) / 2) = 0.1, interval 0.2 -+ 0.248414
    table = seeds_table(rows(), "d", "nDCG@10", name="t")
    assert list(table.labels["system"]) == ["arm", "  arm-s1", "  arm-s2", "  arm-s3"]   # seeds in seed order
    assert list(table.labels["seeds"]) == ["3", "seed 1", "seed 2", "seed 3"]
    v = table.values
    assert v.at[0, "mean"] == pytest.approx(0.2) and v.at[0, "sd"] == pytest.approx(0.1)
    assert v.at[0, "95% low"] == pytest.approx(0.2 - HALF, abs=1e-6)
    assert v.at[0, "95% high"] == pytest.approx(0.2 + HALF, abs=1e-6)
    assert list(v["mean"][1:]) == [0.1, 0.2, 0.3] and v["sd"][1:].isna().all()
    assert list(table.text.loc[0]) == ["0.2000", "0.1000", "-0.0484", "0.4484"]
    assert any("lone: one seed" in n for n in table.notes)      # a lone seed is said, not aggregated
    assert seeds_table(rows(), "e", "nDCG@10", name="t") is None   # one seed only: no table


def test_failed_rows_and_manifests_of_another_seed_are_left_out_and_said():
    frame = rows([{"dataset": "d", "system": "arm-s5", "status": "failed: x", "nDCG@10": math.nan, "run": ""},
                  {"dataset": "d", "system": "arm-s6", "status": "ok", "nDCG@10": 0.7, "run": "arm-s6"}])
    runs = {"arm-s6": TrainingRun("arm-s6", None, pd.DataFrame(), {"config": {"train": {"seed": 7}}}, None, None)}
    arms, notes = seed_arms(frame, "d", "nDCG@10", runs)
    assert arms == {"arm": {3: 0.3, 1: 0.1, 2: 0.2}}
    assert any("arm-s5: no nDCG@10" in n for n in notes)
    assert any("arm-s6: its training manifest records seed 7, not 6" in n for n in notes)


def test_figure_draws_each_interval_and_seed():
    fig = seeds_figure(seeds_table(rows(), "d", "nDCG@10", name="t"))
    ax = fig.axes[0]
    (bar,) = [c for c in ax.containers]                 # one errorbar per arm
    (segments,) = bar.lines[2]
    ((x0, _), (x1, _)) = segments.get_segments()[0]
    assert (x0, x1) == (pytest.approx(0.2 - HALF, abs=1e-6), pytest.approx(0.2 + HALF, abs=1e-6))
    (dots,) = [c for c in ax.collections if len(c.get_offsets()) == 3]
    assert sorted(dots.get_offsets()[:, 0].tolist()) == pytest.approx([0.1, 0.2, 0.3])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["arm"]


def test_report_has_the_seed_table_and_figure(tmp_path):
    folder = tmp_path / "results" / "bench"
    folder.mkdir(parents=True)
    records = [{"dataset": "mydata", "system": f"arm-s{s}", "status": "ok", "nDCG@10": v}
               for s, v in ((1, 0.1), (2, 0.2), (3, 0.3))]
    (folder / "table.json").write_text(json.dumps(records), encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps({"stage": "benchmark", "experiment": {"name": "bench"},
                                                      "created": "2026-12-01T00:00:00+00:00", "config": {}}))
    out = tmp_path / "report"
    assert main(["report", str(tmp_path / "results"), "--out", str(out)]) == 0
    csv = pd.read_csv(out / "tables" / "seeds-bench-mydata-nDCG@10.csv")
    assert list(csv["system"].str.strip()) == ["arm", "arm-s1", "arm-s2", "arm-s3"]
    assert (out / "plots" / "seeds-bench-mydata-nDCG@10.png").exists()
    assert "over training seeds" in (out / "index.html").read_text(encoding="utf-8")
