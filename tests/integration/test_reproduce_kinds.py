"""The other kinds of committed result ``lsr-eval reproduce`` reruns: a training run (its training only with
--train, compared step by step), one ``lsr-eval bm25`` run, a pipeline script's command line (lsr_eval/reproduce/
training.py, stage.py, pipeline.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import tiny_beir  # noqa: F401  (fixture)
from train_helpers import tiny_config

from lsr_eval.reproduce.compare import COULD_NOT_RUN, DIFFERS, REPRODUCED
from lsr_eval.reproduce.jobs import Options, plan, reproduce_result
from lsr_eval.reproduce.paths import PathMap
from lsr_eval.reproduce.pipeline import _arguments
from lsr_eval.reproduce.results import load_result


@pytest.fixture
def trained(tmp_path) -> Path:
    """A finished tiny training run whose small outputs lie in ``tmp_path/results/train/tiny`` (as committed)."""
    from lsr_eval.train.config import SpladeTrainConfig, from_dict
    from lsr_eval.train.run import train

    cfg = tiny_config(tmp_path, "tiny", steps=3)
    cfg["output"]["dir"] = str(tmp_path / "results" / "train" / "tiny")
    assert train(from_dict(SpladeTrainConfig, cfg, "test")).status == "done"
    return tmp_path / "results" / "train" / "tiny"


def test_training_reruns_only_with_train_and_matches_step_by_step(trained, tmp_path):
    outcomes = reproduce_result(load_result(trained), Options(out=tmp_path / "repro"))
    assert [(o.row, o.status) for o in outcomes] == [("training", COULD_NOT_RUN)]
    assert "only with --train" in outcomes[0].detail
    outcomes = reproduce_result(load_result(trained), Options(out=tmp_path / "repro", train=True))
    assert [(o.row, o.status) for o in outcomes] == [("training", REPRODUCED)], outcomes[0].summary()
    assert outcomes[0].comparison.compared["metric"] >= 3 * 10      # every logged value of the three steps


def test_a_training_log_that_moved_differs_naming_the_step(trained, tmp_path):
    log = trained / "log.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    records[1]["loss"] += 0.01
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    [outcome] = reproduce_result(load_result(trained), Options(out=tmp_path / "repro", train=True))
    assert outcome.status == DIFFERS
    assert [d.key for d in outcome.comparison.differences] == ["log.step2.loss"]


def test_missing_training_data_could_not_run(trained, tmp_path):
    manifest = json.loads((trained / "manifest.json").read_text())
    manifest["config"]["data"]["negatives"] = str(tmp_path / "gone.tsv")
    (trained / "manifest.json").write_text(json.dumps(manifest))
    job = plan(load_result(trained), Options(out=tmp_path / "repro", train=True))
    assert job.blocked["training"].status == COULD_NOT_RUN
    assert job.blocked["training"].reason.startswith(f"missing data: {tmp_path / 'gone.tsv'}")


@pytest.mark.slow
def test_a_bm25_run_reproduces_from_its_recorded_command(tiny_beir, tmp_path):  # noqa: F811
    from lsr_eval.cli import main

    assert main(["bm25", str(tiny_beir), "--out", str(tmp_path / "bm25"), "--work-dir", str(tmp_path / "w")]) == 0
    [outcome] = reproduce_result(load_result(tmp_path / "bm25"), Options(out=tmp_path / "repro"))
    assert (outcome.row, outcome.status) == ("tiny/test bm25", REPRODUCED), outcome.summary()
    assert outcome.comparison.compared["metric"] >= 5              # the measures, k1, b


def test_a_pipeline_command_gets_fresh_outputs_and_mapped_paths(tmp_path):
    (tmp_path / "data").mkdir()
    argv = ["--model", "splade-tiny", "--dataset", "/old/data", "--reuse", "/old/work", "--work-dir", "/old/work",
            "--out=/old/results/x", "--queries", "300"]
    args, missing, had_work = _arguments(argv, Options(paths=PathMap.parse([f"/old/data={tmp_path / 'data'}"])))
    assert args == ["--model", "splade-tiny", "--dataset", str(tmp_path / "data"), "--queries", "300"]
    assert missing == [] and had_work
    _, missing, _ = _arguments(["--dataset", "/old/elsewhere"], Options())
    assert missing == ["/old/elsewhere"]


def test_a_rerun_that_raises_fails_its_rows_and_a_long_one_is_not_started(tmp_path):
    from lsr_eval.reproduce.compare import FAILED
    from lsr_eval.reproduce.jobs import Job
    from lsr_eval.reproduce.results import Result

    def broken(out, work):
        raise KeyError("counts")

    result = Result(tmp_path, {"stage": "benchmark"}, "benchmarks/x", None)
    job = Job(command="c", rows={"a": {"table.nDCG@10": 0.5}}, run=broken, estimate_s=60.0)
    [row] = reproduce_result(result, Options(out=tmp_path / "repro"), job)
    assert (row.status, row.detail) == (FAILED, "the rerun failed: KeyError: 'counts'") and row.failing
    job.estimate_s = 1200.0
    [row] = reproduce_result(result, Options(out=tmp_path / "repro", max_minutes=10), job)
    assert (row.status, row.detail) == (COULD_NOT_RUN, "longer than --max-minutes 10 (estimated 20 min from the "
                                                       "recorded times)")
