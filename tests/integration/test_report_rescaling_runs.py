"""The rescaling study in the report: per-run table (stability, dev selection, linked results), best k on dev, the
suggested k and inspect-head diagnoses. Values below are computed by hand from the logs written here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from lsr_eval.errors import InputError
from lsr_eval.report.best_k import best_k_on_dev, head_norm_points
from lsr_eval.report.build import write_report
from lsr_eval.report.linking import link_training
from lsr_eval.report.loading import load_results, load_training_run
from lsr_eval.report.plots import head_norm_figure
from lsr_eval.report.rescaling_runs import candidates, diagnoses_table, runs_table

CONFIG = {"train": {"batch_size": 8}, "data": {"n_negatives": 1}, "loss": {"in_batch": True}}


def _run(root: Path, name: str, k: float, rank: list[float], *, dev: dict | None = None, tied: str = "divided",
         rule: str = "config") -> Path:
    folder = root / "train" / name
    folder.mkdir(parents=True)
    with open(folder / "log.jsonl", "w") as f:
        for step, v in enumerate(rank, 1):
            f.write(json.dumps({"step": step, "loss": v, "rank": v, "grad_norm": float(step),
                                "active_dims_q": 10.0 * step, "active_dims_d": 100.0 * step}) + "\n")
    manifest = {"experiment": {"backbone": "mlm", "rescale_k": k if rule == "config" else "suggested",
                               "config": {"model": {"tied_input": tied}}},
                "config": CONFIG, "head_norm_before": 190.0,
                "init": {"document": {"rescale_k": k, "rescale_rule": rule}}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    if dev is not None:
        (folder / "dev").mkdir()
        (folder / "dev" / "metrics.json").write_text(json.dumps(dev))
    return folder


def _diagnosis(root: Path, run: str, label: str, norm: float, suggested: int, tied: str = "divided") -> None:
    folder = root / "train" / run / "inspect-head" / label
    folder.mkdir(parents=True)
    rows = [{"k": 1.0, "frobenius": norm, "mean_max_logit": 12.5, "mean_score": 1000.0, "active_fraction": 0.5},
            {"k": 2.0, "frobenius": norm / 2, "mean_max_logit": 6.0, "mean_score": 250.0, "active_fraction": 0.4}]
    (folder / "diagnosis.json").write_text(json.dumps({"model": "m", "rows": rows, "suggested_k": suggested,
                                                       "rule": "the rule"}))
    (folder / "manifest.json").write_text(json.dumps({"experiment": {"tied_input": tied}}))


@pytest.fixture
def study(tmp_path) -> Path:
    # k=1: rank 20 for 10 steps then 5 for 10 -> first 20, last 5, not diverged; k=4: ln(16) throughout -> the last
    # mean equals the first (diverged by the rule: not below) and sits at ln(candidates=16) (collapsed)
    _run(tmp_path, "r-k1", 1, [20.0] * 10 + [5.0] * 10, dev={"nDCG@10": 0.30, "R@1000": 0.9})
    _run(tmp_path, "r-k4", 4, [math.log(16)] * 20, dev={"nDCG@10": 0.40, "R@1000": 0.8})
    _run(tmp_path, "r-k2", 2, [3.0] * 20, dev={"nDCG@10": 0.40}, tied="compensated", rule="suggested")
    _diagnosis(tmp_path, "r-k1", "mlm", 190.0, 8)
    _diagnosis(tmp_path, "r-k1", "mlm-compensated", 190.0, 16, tied="compensated")
    bench = tmp_path / "benchmarks" / "b"
    bench.mkdir(parents=True)
    rows = [{"dataset": "scifact", "system": s, "model": "", "status": "ok", "nDCG@10": v, "R@1000": r,
             "flops": f} for s, v, r, f in (("r-k1", 0.5, 0.95, 10.0), ("r-k4", 0.55, 0.96, 2.0),
                                            ("bm25", 0.6, 0.97, math.nan))]
    pd.DataFrame(rows).to_json(bench / "table.json", orient="records")
    return tmp_path


def test_runs_table_hand_computed(study):
    results = load_results(study)
    frame = link_training(results.combined(), results.training)
    t = runs_table(frame, results.training)
    rows = t.frame().set_index("run")
    assert list(t.labels["run"]) == ["r-k1", "r-k4", "r-k2"]  # backbone "mlm" first, then "mlm (input compensated)"
    assert rows.loc["r-k2", "backbone"] == "mlm (input compensated)"
    assert candidates(results.training["r-k1"]) == 16
    assert rows.loc["r-k1", "rank loss, first 10"] == "20" and rows.loc["r-k1", "rank loss, last 10"] == "5"
    assert rows.loc["r-k1", "diverged"] == "no" and rows.loc["r-k1", "collapsed"] == "no"
    assert rows.loc["r-k4", "diverged"] == "yes" and rows.loc["r-k4", "collapsed"] == "yes"
    assert rows.loc["r-k1", "max grad norm"] == "20"
    # last 10 of steps 1..20: mean step 15.5 -> 155 query dims, 1550 document dims
    assert rows.loc["r-k1", "query dims, last 10"] == "155.0" and rows.loc["r-k1", "doc dims, last 10"] == "1550.0"
    assert rows.loc["r-k4", "dev nDCG@10"] == "0.4000" and rows.loc["r-k2", "dev R@1000"] == "n/a"
    assert rows.loc["r-k4", "scifact nDCG@10"] == "0.5500" and rows.loc["r-k1", "scifact R@1000"] == "0.9500"
    assert rows.loc["r-k1", "scifact FLOPs"] == "10.0" and rows.loc["r-k2", "scifact nDCG@10"] == "absent"
    best = t.best.set_axis(list(t.labels["run"]))
    assert best.loc["r-k4", "scifact nDCG@10"] and best.loc["r-k4", "scifact FLOPs"]
    assert not best.loc["r-k1", "scifact nDCG@10"]


def test_best_k_is_chosen_on_dev_and_suggested_k_read(study):
    results = load_results(study)
    dev = best_k_on_dev(results.training.values()).set_index("backbone")
    assert dev.loc["mlm", "best_k"] == 4 and dev.loc["mlm", "value"] == 0.40 and dev.loc["mlm", "ks"] == [1, 4]
    points = head_norm_points(None, results.training).set_index("backbone")
    assert set(points["criterion"]) == {"dev nDCG@10"}
    assert points.loc["mlm (input compensated)", "suggested_k"] == 2 and math.isnan(points.loc["mlm", "suggested_k"])
    # the diagnoses are drawn: their suggested k are y ticks
    fig = head_norm_figure(points.reset_index(), diagnoses=list(results.diagnoses.values()))
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert {"8", "16", "2", "4"} <= set(ticks)


def test_diagnoses_are_loaded_and_tabled(study):
    results = load_results(study)
    assert sorted(results.diagnoses) == ["r-k1/mlm", "r-k1/mlm-compensated"]
    d = results.diagnoses["r-k1/mlm-compensated"]
    assert (d.head_norm, d.suggested_k, d.tied_input, d.mean_max_logit) == (190.0, 16.0, "compensated", 12.5)
    t = diagnoses_table(results.diagnoses).frame()
    assert list(t["suggested k"]) == ["8", "16"] and list(t["head norm"]) == ["190.0", "190.0"]


def test_report_shows_the_study_first(study, tmp_path):
    files = write_report(study, tmp_path / "report")
    html = files.html.read_text()
    assert html.index("Rescaling runs") < html.index("Rescaling k: in-domain") < html.index("MLM-head diagnoses")
    assert (tmp_path / "report" / "plots" / "rank-loss-by-k.png").is_file()


def test_bad_dev_metrics_and_diagnosis_name_their_file(tmp_path):
    folder = _run(tmp_path, "bad", 1, [1.0, 0.5], dev={"nDCG@10": "high"})
    with pytest.raises(InputError, match=r"bad/dev/metrics.json.*nDCG@10"):
        load_training_run(folder)
    (folder / "dev" / "metrics.json").write_text(json.dumps({"nDCG@10": 0.3}))
    broken = folder / "inspect-head" / "x"
    broken.mkdir(parents=True)
    (broken / "diagnosis.json").write_text(json.dumps({"rows": [], "suggested_k": 2}))
    with pytest.raises(InputError, match=r"inspect-head/x/diagnosis.json"):
        load_results(tmp_path)


def test_a_run_whose_head_was_not_rescaled_has_no_k(tmp_path):
    # lsr-eval records rescale_k 1.0 with rescale_rule "none" when no k was set: not a point of a k study
    folder = _run(tmp_path, "plain", 1, [2.0, 1.0], rule="none")
    run = load_training_run(folder)
    assert run.k is None and not any("no rescaling k" in n for n in run.notes)
    assert load_training_run(_run(tmp_path, "grid-k1", 1, [2.0, 1.0])).k == 1
