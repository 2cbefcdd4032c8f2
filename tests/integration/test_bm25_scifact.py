"""BM25 flat on SciFact reproduces Pyserini's published regression (nDCG@10 0.6789, R@100 0.9253), offline."""

from __future__ import annotations

import json

import pytest
from conftest import shared_path

from lsr_eval.cli import main

REFERENCE = {"nDCG@10": 0.6789, "R@100": 0.9253, "R@1000": 0.9767}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("work")


@pytest.fixture(scope="module")
def outs(tmp_path_factory):
    return tmp_path_factory.mktemp("outs")


def _check(out):
    metrics = json.loads((out / "metrics.json").read_text())
    assert {k: round(v, 4) for k, v in metrics.items()} == REFERENCE
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["index"]["documents_read"] == counts["index"]["total_indexed"] == 5183
    assert counts["search"]["queries"] == counts["topics"]["queries"] == 300
    run_qids = {line.split()[0] for line in (out / "run.trec").read_text().splitlines()}
    assert len(run_qids) == 300
    assert manifest["experiment"]["k1"] == 0.9 and manifest["experiment"]["b"] == 0.4
    assert manifest["versions"]["pyserini"] == "1.6.0"


def test_bm25_scifact_beir_folder(work, outs, capsys):
    scifact = shared_path("beir", "scifact")
    out = outs / "bm25"
    assert main(["bm25", str(scifact), "--split", "test", "--out", str(out), "--work-dir", str(work)]) == 0
    _check(out)
    assert "0.6789" in capsys.readouterr().out
    # the same output folder for the same experiment is accepted again (and the index is reused) ...
    assert main(["bm25", str(scifact), "--split", "test", "--out", str(out), "--work-dir", str(work)]) == 0
    assert len(list((work / "indexes").iterdir())) == 1
    # ... but a different experiment is refused without --overwrite
    assert main(["bm25", str(scifact), "--split", "test", "--k1", "1.2", "--out", str(out),
                 "--work-dir", str(work)]) == 2
    assert "holds a different experiment" in capsys.readouterr().err


def test_bm25_scifact_ir_datasets(work, outs):
    shared_path("ir_datasets")  # conftest seeded the session's IR_DATASETS_HOME from it
    out = outs / "bm25-irds"
    assert main(["bm25", "irds:beir/scifact/test", "--out", str(out), "--work-dir", str(work)]) == 0
    _check(out)
    # the BEIR folder and ir_datasets give the same run, line for line
    assert (out / "run.trec").read_text() == (outs / "bm25" / "run.trec").read_text()


def test_unknown_dataset_is_a_clear_cli_error(capsys, tmp_path):
    assert main(["bm25", "scifakt", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "unknown dataset 'scifakt'" in err and "scifact" in err
