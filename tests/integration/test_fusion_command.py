"""``lsr-eval fuse``: outputs, manifest, tuning on a train split of a BEIR folder, refusals."""

from __future__ import annotations

import json

import pytest
from conftest import write_beir

from lsr_eval.cli import main
from lsr_eval.evaluation import evaluate
from lsr_eval.fusion import fuse
from lsr_eval.runs.trec import read_run, write_run

TEST_QRELS = [("s1", "b", 1), ("s2", "c", 1)]
TRAIN_QRELS = [("t1", "r", 1)]
TEST_A = {"s1": {"a": 2.0, "b": 1.0}, "s2": {"c": 3.0, "d": 1.0}, "s3": {"e": 1.0}}  # s3 only in A, not judged
TEST_B = {"s1": {"a": 1.0, "b": 2.0}, "s2": {"c": 1.0, "d": 2.0}}
TRAIN_A = {"t1": {"r": 1.0, "x": 2.0, "y": 3.0}}
TRAIN_B = {"t1": {"r": 3.0, "x": 2.0, "y": 1.0}}


@pytest.fixture
def files(tmp_path):
    docs = [{"_id": d, "text": f"text {d}"} for d in "abcderxy"]
    queries = [{"_id": q, "text": f"query {q}"} for q in ("s1", "s2", "t1")]
    beir = write_beir(tmp_path / "beir", docs, queries, TEST_QRELS, split="test")
    write_beir(beir, docs, queries, TRAIN_QRELS, split="train")
    paths = {}
    for name, run in [("a", TEST_A), ("b", TEST_B), ("ta", TRAIN_A), ("tb", TRAIN_B)]:
        paths[name] = str(tmp_path / f"{name}.trec")
        write_run(run, paths[name])
    paths["beir"] = str(beir)
    paths["qrels"] = str(beir / "qrels" / "test.tsv")
    return paths


def test_rrf_outputs_and_manifest(files, tmp_path, capsys):
    out = tmp_path / "rrf"
    assert main(["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--measures", "RR@10", "nDCG@10",
                 "--out", str(out)]) == 0
    fused = read_run(out / "run.trec")
    expected = fuse([TEST_A, TEST_B], "rrf")
    assert fused.keys() == expected.run.keys() and fused["s1"] == pytest.approx(expected.run["s1"], rel=1e-15)
    qrels = {"s1": {"b": 1}, "s2": {"c": 1}}
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics == pytest.approx(evaluate(qrels, expected.run, ["RR@10", "nDCG@10"]), abs=1e-15)
    # s1: a and b tie at 1/61 + 1/62 -> trec_eval puts b first (docid descending): RR 1; s2: c and d tie the same
    # way, d first: RR 1/2
    assert metrics["RR@10"] == pytest.approx(0.75)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "fuse"
    assert manifest["fusion"] == {"method": "rrf", "norm": "none", "params": {"k": 60},
                                  "depth": 1000}  # Pyserini's default output depth
    counts = manifest["counts"]["fusion"]
    assert (counts["queries_union"], counts["queries_in_some"], counts["queries_out"]) == (3, 1, 3)
    assert manifest["counts"]["evaluation"]["run_not_judged"] == 1 and manifest["counts"]["run_lines"] == 5
    assert manifest["tuning"] is None and len(manifest["inputs"]) == 2
    assert "fusion-rrf" in capsys.readouterr().out


def test_wsum_refuses_another_experiment_in_the_folder(files, tmp_path, capsys):
    out = str(tmp_path / "wsum")
    base = ["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--method", "wsum", "--out", out]
    assert main([*base, "--weights", "0.3", "0.7"]) == 0
    assert json.loads((tmp_path / "wsum" / "manifest.json").read_text())["fusion"]["params"] == {
        "weights": [0.3, 0.7]}
    assert main([*base, "--weights", "0.5", "0.5"]) == 2
    assert "holds a different experiment" in capsys.readouterr().err
    assert main([*base, "--weights", "0.5", "0.5", "--overwrite"]) == 0


def test_tuned_on_train_split_applied_to_test(files, tmp_path):
    out = tmp_path / "tuned"
    assert main(["fuse", files["a"], files["b"], "--qrels", files["beir"], "--method", "wsum",
                 "--tune-on", files["beir"], "--tune-split", "train", "--tune-runs", files["ta"], files["tb"],
                 "--measures", "RR@10", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tuning"]["params"] == {"weights": [0.4, 0.6]} and manifest["tuning"]["score"] == 1.0
    assert manifest["fusion"]["params"] == {"weights": [0.4, 0.6]}
    assert manifest["experiment"]["tune"]["split"] == "train"
    # s1: a .4, b .6 -> RR 1; s2: c .4, d .6 -> RR 1/2
    assert json.loads((out / "metrics.json").read_text()) == pytest.approx({"RR@10": 0.75})


@pytest.mark.parametrize("extra, message", [
    (["--tune-on", "{beir}", "--tune-runs", "{ta}", "{tb}"], "tuning qrels equal the reported qrels"),
    (["--tune-on", "{qrels}", "--tune-runs", "{ta}", "{tb}"], "tuning qrels equal the reported qrels"),
    (["--tune-on", "{beir}", "--tune-split", "train", "--tune-runs", "{ta}"], "1 --tune-runs for 2 runs"),
    (["--tune-on", "{beir}", "--tune-split", "train", "--tune-runs", "{ta}", "{tb}", "--weights", "1", "1"],
     "--tune-on chooses wsum's parameters: drop --weights"),
    (["--tune-runs", "{ta}", "{tb}"], "needs both --tune-on"),
    (["--weights", "1"], "1 weights for 2 runs"),
    (["--norm", "l2", "--weights", "1", "1"], "allowed: min-max, max, sum, zmuv, rank, borda, none"),
])
def test_refusals(files, tmp_path, capsys, extra, message):
    argv = ["fuse", files["a"], files["b"], "--qrels", files["beir"], "--method", "wsum", "--out",
            str(tmp_path / "x"), *(e.format(**files) for e in extra)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # refused before the output folder is made


def test_unknown_method_lists_known(files, tmp_path, capsys):
    assert main(["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--method", "foo", "--out",
                 str(tmp_path / "x")]) == 2
    assert "unknown fusion method 'foo'; known: rrf, wsum, sum" in capsys.readouterr().err


def test_k_param_and_depth(files, tmp_path):
    out = tmp_path / "k"
    assert main(["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--rrf.k", "10", "--depth", "1",
                 "--measures", "RR@10", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["fusion"] == {"method": "rrf", "norm": "none", "params": {"k": 10}, "depth": 1}
    assert manifest["counts"]["run_lines"] == 3 and manifest["counts"]["fusion"]["documents_cut"] == 2
    # the depth-1 cut keeps each query's first document in trec_eval order: s1 b (RR 1), s2 d (RR 0)
    assert json.loads((out / "metrics.json").read_text()) == pytest.approx({"RR@10": 0.5})


def test_param_option(files, tmp_path, capsys):
    # RRF's k (computed without ranx: ranx's methods compile for a minute on a cold numba cache; their scalars
    # parse through the same code, and tests/unit/fusion/test_fusion.py fuses with each of them)
    base = ["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--method", "rrf", "--out"]
    assert main([*base, str(tmp_path / "g"), "--param", "k=10"]) == 0
    assert json.loads((tmp_path / "g" / "manifest.json").read_text())["fusion"]["params"] == {"k": 10}
    fused = read_run(tmp_path / "g" / "run.trec")
    expected = fuse([TEST_A, TEST_B], "rrf", params={"k": 10}).run
    assert {q: pytest.approx(h, rel=1e-15) for q, h in expected.items()} == fused
    assert main([*base, str(tmp_path / "h"), "--param", "k"]) == 2
    assert "--param 'k': expected NAME=VALUE" in capsys.readouterr().err
    assert main([*base, str(tmp_path / "h"), "--param", "sigma=1"]) == 2
    assert "rrf takes no parameter sigma; its parameters: k" in capsys.readouterr().err


def test_without_qrels_the_fused_run_is_written_not_evaluated(files, tmp_path, capsys):
    out = tmp_path / "plain"
    assert main(["fuse", files["a"], files["b"], "--out", str(out)]) == 0
    expected = fuse([TEST_A, TEST_B], "rrf")
    fused = read_run(out / "run.trec")
    assert fused.keys() == expected.run.keys() == {"s1", "s2", "s3"}
    for q in fused:
        assert fused[q] == pytest.approx(expected.run[q], rel=1e-15)
    assert not (out / "metrics.json").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["evaluated"] is False and "metrics" not in manifest and manifest["experiment"]["qrels"] is None
    assert manifest["counts"]["run_lines"] == 5 and manifest["outputs"] == ["run.trec"]
    assert "not evaluated" in capsys.readouterr().out
    assert main(["fuse", files["a"], files["b"], "--measures", "RR@10", "--out", str(tmp_path / "m")]) == 2
    assert "--measures applies with --qrels" in capsys.readouterr().err


def test_without_qrels_tuning_refuses_the_fused_queries(files, tmp_path, capsys):
    out = tmp_path / "tuned"
    assert main(["fuse", files["a"], files["b"], "--method", "wsum", "--tune-on", files["beir"], "--tune-split",
                 "train", "--tune-runs", files["ta"], files["tb"], "--out", str(out)]) == 0
    assert json.loads((out / "manifest.json").read_text())["tuning"] is not None
    # tuning runs on the queries being fused: refused even without qrels
    assert main(["fuse", files["a"], files["b"], "--method", "wsum", "--tune-on", files["qrels"], "--tune-runs",
                 files["a"], files["b"], "--out", str(tmp_path / "bad")]) == 2
    assert "reported queries" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
