"""CI reruns the cheap committed results with ``lsr-eval reproduce``: BM25 on SciFact and NFCorpus
(``results/benchmarks/bm25-beir``), the published DL19 runs and their fusions, and the quickstart benchmark
(``results/benchmarks/scifact-splade-tiny``: BM25, splade-tiny, RRF, tuned weighted sum, significance, FLOPs).
A change that moves a committed number fails here, naming the row and the value (old -> new). The quickstart reuses
the session's SciFact encoding (tests/conftest.py ``scifact_impact``: the quickstart's settings), so its rerun
encodes nothing twice; everything else reruns in fresh folders."""

from __future__ import annotations

import json
import re
import shutil

import ir_datasets  # noqa: F401  imported with the session's home (conftest) before a test points lsr-eval elsewhere
import pytest
from conftest import REPO, shared_path

from lsr_eval.cli import main

RESULTS = REPO / "results" / "benchmarks"


def reproduce(capsys, *argv: str) -> tuple[int, list[str]]:
    """``lsr-eval reproduce ARGV``: (exit status, the row lines it printed)."""
    code = main(["reproduce", *map(str, argv)])
    lines = [line for line in capsys.readouterr().out.splitlines() if ": " in line and not line.startswith(
        ("machine:", "tolerances:", "matrix:"))]
    return code, lines


@pytest.fixture(scope="module")
def bm25_work(tmp_path_factory):
    """One BM25 index cache for the tests of this module (each run is still made again)."""
    return tmp_path_factory.mktemp("bm25-work")


@pytest.mark.slow
def test_bm25_on_scifact_and_nfcorpus_reproduces(capsys, tmp_path, bm25_work):
    shared_path("beir", "nfcorpus")
    code, lines = reproduce(capsys, RESULTS / "bm25-beir", "--out", tmp_path, "--work-dir", bm25_work)
    assert [line.split(" (")[0] for line in lines] == ["benchmarks/bm25-beir scifact bm25: reproduced",
                                                      "benchmarks/bm25-beir nfcorpus bm25: reproduced"], lines
    assert all(int(re.search(r"\((\d+) values", line).group(1)) >= 40 for line in lines)  # metrics, counts, k1, b
    assert code == 0
    matrix = (tmp_path / "matrix.md").read_text()
    assert "| benchmarks/bm25-beir | benchmark | 2 | 2 reproduced |" in matrix
    assert "`lsr-eval reproduce results/benchmarks/bm25-beir`" in matrix


@pytest.mark.slow
def test_a_changed_bm25_k1_in_a_copied_manifest_fails_naming_the_rows(capsys, tmp_path, bm25_work):
    """A changed setting is caught: k1 0.9 -> 1.2 in a copy of the committed manifest; exit 1, both rows named."""
    copy = tmp_path / "bm25-beir"
    shutil.copytree(RESULTS / "bm25-beir", copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    bm25 = next(s for s in manifest["config"]["systems"] if s["name"] == "bm25")
    bm25["params"]["k1"] = 1.2
    (copy / "manifest.json").write_text(json.dumps(manifest))
    code, lines = reproduce(capsys, copy, "--out", tmp_path / "out", "--work-dir", bm25_work)
    assert code == 1
    assert [line.split(": ")[0] for line in lines] == [f"{copy} scifact bm25", f"{copy} nfcorpus bm25"]
    for line in lines:
        assert ": differs: experiment.k1 0.9 -> 1.2; table.nDCG@10 " in line
    assert "table.nDCG@10 0.678909 -> 0.680334" in lines[0]   # Anserini's BM25 with k1=1.2, b=0.4 on SciFact


@pytest.fixture
def msmarco_home(tmp_path, monkeypatch):
    """An ir_datasets home with the DL19 topics and qrels (``lsr-eval seed-irds ../shared/data/msmarco-passage``)."""
    from lsr_eval.data.irds_cache import seed_cache

    home = tmp_path / "irds"
    seed_cache(shared_path("msmarco-passage"), home)
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    return home


@pytest.mark.slow
def test_the_published_dl19_runs_and_their_fusions_reproduce(capsys, tmp_path, msmarco_home):
    code, lines = reproduce(capsys, RESULTS / "dl19-published-runs", "--out", tmp_path / "out")
    assert len(lines) == 10 and all(": reproduced (" in line for line in lines), lines
    assert code == 0


@pytest.mark.slow
def test_the_quickstart_benchmark_reproduces(capsys, tmp_path, scifact_impact):
    """``lsr-eval reproduce results/benchmarks/scifact-splade-tiny`` on this CPU: every row to 1e-4, every count
    exactly (the session's encoding has the quickstart's settings, so --work-dir reuses it)."""
    code, lines = reproduce(capsys, RESULTS / "scifact-splade-tiny", "--out", tmp_path / "out",
                            "--work-dir", scifact_impact.work)
    rows = [line.split(": ")[0] for line in lines]
    assert rows == [f"benchmarks/scifact-splade-tiny scifact {s}" for s in ("bm25", "splade-tiny", "rrf",
                                                                             "wsum-tuned")]
    assert all(": reproduced (" in line for line in lines), "\n".join(lines)
    assert code == 0
