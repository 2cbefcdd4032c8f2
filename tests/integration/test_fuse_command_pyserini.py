"""``lsr-eval fuse`` with Pyserini users' habits: ``--rrf.k``, output depth 1,000 by default, a bare ``--k`` refused
with both meanings, ``--out FILE.trec``; cross-validated weights (``--tune-cv``); inputs that cannot be fused."""

from __future__ import annotations

import json

import pytest

from lsr_eval.cli import main
from lsr_eval.fusion import cross_validate, fuse
from lsr_eval.runs.trec import read_run, write_run

QRELS = {f"q{i}": {"d0": 1, f"d{i + 1}": 2} for i in range(6)}


def _run(shift: int, n_docs: int = 1200) -> dict[str, dict[str, float]]:
    """1,200 documents per query, scores depending on the query and ``shift`` (two runs that disagree)."""
    return {q: {f"d{j}": float((j * (3 + shift) + i * 7) % 1301) for j in range(n_docs)}
            for i, q in enumerate(QRELS)}


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, judged in QRELS.items() for d, g in judged.items()))
    paths = {"qrels": str(qrels)}
    for name, shift in (("a", 0), ("b", 5)):
        paths[name] = str(tmp_path / f"{name}.trec")
        write_run(_run(shift), paths[name])
    return paths


def test_rrf_k_and_the_default_depth_of_1000(files, tmp_path, capsys):
    out = tmp_path / "f"
    assert main(["fuse", files["a"], files["b"], "--rrf.k", "10", "--out", str(out)]) == 0
    fused = read_run(out / "run.trec")
    expected = fuse([read_run(files["a"]), read_run(files["b"])], "rrf", params={"k": 10}, depth=1000)
    assert {q: len(h) for q, h in fused.items()} == {q: 1000 for q in QRELS}  # 1,200 documents fused, 1,000 kept
    assert fused.keys() == expected.run.keys()
    assert all(fused[q] == pytest.approx(expected.run[q], rel=1e-15) for q in QRELS)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["fusion"] == {"method": "rrf", "norm": "none", "params": {"k": 10}, "depth": 1000}
    assert main(["fuse", files["a"], files["b"], "--depth", "all", "--out", str(tmp_path / "all")]) == 0
    assert {len(h) for h in read_run(tmp_path / "all" / "run.trec").values()} == {1200}


def test_a_bare_k_is_refused_with_both_meanings(files, tmp_path, capsys):
    assert main(["fuse", files["a"], files["b"], "--k", "60", "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert "--k 60 is ambiguous" in err and "output depth" in err and "--depth" in err and "--rrf.k" in err
    assert "Traceback" not in err and not (tmp_path / "f").exists()


def test_out_names_a_run_file_with_its_manifest_beside_it(files, tmp_path, capsys):
    out = tmp_path / "fused.trec"
    assert main(["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--rrf.k", "60", "--out", str(out)]) == 0
    assert out.is_file() and not (tmp_path / "fused.trec" / "run.trec").exists()
    manifest = json.loads((tmp_path / "fused.trec.manifest.json").read_text())
    assert manifest["outputs"] == ["fused.trec"] and "nDCG@10" in manifest["metrics"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.trec", "b.trec", "fused.trec",
                                                         "fused.trec.manifest.json", "qrels.txt"]
    capsys.readouterr()
    assert main(["fuse", files["a"], files["b"], "--out", str(out)]) == 2  # an existing file is refused clearly
    err = capsys.readouterr().err
    assert f"{out} exists; pass --overwrite" in err and "Traceback" not in err
    assert main(["fuse", files["a"], files["b"], "--method", "sum", "--out", str(out), "--overwrite"]) == 0
    assert json.loads((tmp_path / "fused.trec.manifest.json").read_text())["fusion"]["method"] == "sum"


def test_tune_cv_fuses_each_fold_with_weights_from_the_others(files, tmp_path):
    out = tmp_path / "cv"
    assert main(["fuse", files["a"], files["b"], "--qrels", files["qrels"], "--method", "wsum", "--tune-cv", "3",
                 "--tune-seed", "4", "--tune-metric", "nDCG@10", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    tuning = manifest["tuning"]
    assert (tuning["cv"], tuning["seed"], len(tuning["folds"])) == (3, 4, 3)
    assert manifest["experiment"]["tune"] == {"cv": 3, "seed": 4, "metric": "nDCG@10", "step": 0.1}
    expected = cross_validate([read_run(files["a"]), read_run(files["b"])], QRELS, "wsum", None, "nDCG@10", k=3,
                              seed=4, depth=1000)
    assert [f["judged_queries"] for f in tuning["folds"]] == [f.judged for f in expected.folds]
    fused = read_run(out / "run.trec")
    assert all(fused[q] == pytest.approx(expected.run[q], rel=1e-12) for q in QRELS)


@pytest.mark.parametrize("extra, message", [
    (["--tune-cv", "3"], "--tune-cv needs --qrels"),
    (["--tune-seed", "1"], "--tune-seed applies with --tune-cv"),
])
def test_tune_cv_refusals(files, tmp_path, capsys, extra, message):
    assert main(["fuse", files["a"], files["b"], "--method", "wsum", *extra, "--out", str(tmp_path / "x")]) == 2
    assert message in capsys.readouterr().err


def test_fusing_an_empty_run_or_other_queries_is_an_error(files, tmp_path, capsys):
    empty = tmp_path / "empty.trec"
    empty.write_text("")
    other = tmp_path / "other.trec"
    write_run({"z1": {"d1": 1.0}}, other)
    assert main(["fuse", files["a"], str(empty), "--out", str(tmp_path / "e")]) == 2
    assert f"{empty}: no result line (empty file)" in capsys.readouterr().err  # refused where runs are read
    assert main(["fuse", files["a"], str(other), "--out", str(tmp_path / "o")]) == 2
    assert f"fusion input {files['a']} shares no query with {other}" in capsys.readouterr().err
    assert not (tmp_path / "e").exists() and not (tmp_path / "o").exists()
