"""Fusion from Python (:func:`lsr_eval.fusion`) is the command line's implementation: tuning on another split and
cross-validation are callable from Python, and both doors give the same run, metrics and parameters."""

from __future__ import annotations

import json

import pytest

import lsr_eval
from lsr_eval.cli import main
from lsr_eval.errors import ConfigError
from lsr_eval.runs.trec import read_run, write_run

QRELS = {f"q{i}": {"d0": 1, f"d{i + 1}": 2} for i in range(6)}
TRAIN = {f"t{i}": {"d0": 1, f"d{i + 2}": 2} for i in range(4)}


def _run(queries, shift: int) -> dict[str, dict[str, float]]:
    return {q: {f"d{j}": float((j * (3 + shift) + i * 7) % 41) for j in range(30)} for i, q in enumerate(queries)}


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, judged in (("qrels", QRELS), ("train", TRAIN)):
        paths[name] = str(tmp_path / f"{name}.txt")
        (tmp_path / f"{name}.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, j in judged.items()
                                                      for d, g in j.items()))
    for name, queries, shift in (("a", QRELS, 0), ("b", QRELS, 5), ("ta", TRAIN, 0), ("tb", TRAIN, 5)):
        paths[name] = str(tmp_path / f"{name}.trec")
        write_run(_run(queries, shift), paths[name])
    return paths


def test_cross_validation_from_python_equals_the_command_line(files, tmp_path, capsys):
    fused = lsr_eval.run_fusion([files["a"], files["b"]], "wsum", qrels=files["qrels"], measures=["nDCG@10", "RR@10"],
                            tune=lsr_eval.CrossValidate(k=3, seed=4))
    out = tmp_path / "cli"
    assert main(["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--method", "wsum", "--tune-cv", "3",
                 "--tune-seed", "4", "--measures", "nDCG@10", "RR@10", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert json.loads(json.dumps(fused.tuning)) == manifest["tuning"] and len(fused.tuning["folds"]) == 3
    assert fused.metrics == manifest["metrics"] == json.loads((out / "metrics.json").read_text())
    assert [m for m in fused.input_metrics] == [i["metrics"] for i in manifest["inputs"]]
    written = read_run(out / "run.trec")
    assert written.keys() == fused.run.keys()
    assert all(written[q] == pytest.approx(fused.run[q], rel=1e-12) for q in written)
    printed = capsys.readouterr().out
    assert f"{fused.metrics['nDCG@10']:.4f}" in printed and "3-fold cross-validated, seed 4" in printed


def test_tuning_on_another_split_from_python_equals_the_command_line(files, tmp_path):
    tune = lsr_eval.TuneOn(files["train"], [files["ta"], files["tb"]], metric="RR@10")
    fused = lsr_eval.run_fusion({"a": files["a"], "b": files["b"]}, "wsum", qrels=files["qrels"], tune=tune,
                            out=tmp_path / "py")
    assert main(["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--method", "wsum", "--tune-on",
                 files["train"], "--tune-runs", files["ta"], files["tb"], "--tune-metric", "RR@10", "--out",
                 str(tmp_path / "cli")]) == 0
    py, cli = (json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("py", "cli"))
    assert (py["tuning"] == cli["tuning"] == json.loads(json.dumps(fused.tuning))
            and fused.settings["params"] == fused.tuning["params"])
    assert py["metrics"] == cli["metrics"] == fused.metrics
    assert py["experiment"] == cli["experiment"]   # the same experiment, whichever door it came through
    assert read_run(tmp_path / "py" / "run.trec") == read_run(tmp_path / "cli" / "run.trec")


def test_python_refusals_name_the_argument(files):
    with pytest.raises(ConfigError, match="tuning chooses wsum's parameters: drop weights"):
        lsr_eval.run_fusion([files["a"], files["b"]], "wsum", params={"weights": [1, 1]}, qrels=files["qrels"],
                        tune=lsr_eval.CrossValidate(k=3))
    with pytest.raises(ConfigError, match="cross-validation needs qrels"):
        lsr_eval.run_fusion([files["a"], files["b"]], "wsum", tune=lsr_eval.CrossValidate(k=3))
    with pytest.raises(ConfigError, match="1 tuning runs for 2 runs"):
        lsr_eval.run_fusion([files["a"], files["b"]], "wsum", tune=lsr_eval.TuneOn(files["train"], [files["ta"]]))
    with pytest.raises(ConfigError, match="tuning qrels equal the reported qrels"):
        lsr_eval.run_fusion([files["a"], files["b"]], "wsum", qrels=files["qrels"],
                        tune=lsr_eval.TuneOn(files["qrels"], [files["a"], files["b"]]))


def test_fuse_is_the_run_of_fusion(files):
    runs = [read_run(files["a"]), read_run(files["b"])]
    assert lsr_eval.fuse(runs, "rrf", k=10) == lsr_eval.run_fusion(runs, "rrf", params={"k": 10}).run


def test_fuse_tunes_too(files):
    runs = [read_run(files["a"]), read_run(files["b"])]
    tune = lsr_eval.CrossValidate(k=3, seed=1)
    assert lsr_eval.fuse(runs, "wsum", tune=tune, qrels=files["qrels"]) == lsr_eval.run_fusion(
        runs, "wsum", qrels=files["qrels"], tune=tune).run
