"""studies/vector_check/run.py, run as a user runs it (a subprocess, one pair on a small collection): its three
files, a ratio that is the ratio of the recorded medians, a summary the library makes again, and a bad collection
refused before anything is timed."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "studies" / "vector_check" / "run.py"


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_one_pair_writes_the_three_files(tmp_path):
    coll = tmp_path / "export" / "docs"
    coll.mkdir(parents=True)
    (coll / "docs-00000.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "vector": {f"t{j}": (i * j) % 7 for j in range(20)}}) + "\n" for i in range(50)))
    done = run("--collection", str(coll), "--repeats", "1", "--warmup", "0", "--threads", "1",
               "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["collection"]["documents"] == 50 and results["collection"]["name"] == "export/docs"
    assert all(len(s) == 1 for s in results["samples_s"].values())
    median = {k: statistics.median(s) for k, s in results["samples_s"].items()}
    assert results["median_s"] == median
    assert results["ratio"] == round(median["check"] / median["anserini"], 4)
    assert results["within_limit"] == (results["ratio"] <= 0.10)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["stage"] == "bench-vector-check" and manifest["experiment"]["repeats"] == 1
    from studies.vector_check.summary import summaries

    assert summaries(tmp_path / "out") == {"summary.md": (tmp_path / "out" / "summary.md").read_text()}
    assert "Check / index build:" in done.stdout


def test_a_bad_collection_is_refused_with_its_line(tmp_path):
    coll = tmp_path / "docs"
    coll.mkdir()
    (coll / "d.jsonl").write_text('{"id": "a", "vector": {"x": -1}}\n')
    done = run("--collection", str(coll), "--repeats", "1", "--warmup", "0", "--out", str(tmp_path / "out"))
    assert done.returncode == 1 and "d.jsonl:1: document 'a': weight of 'x' is -1, negative" in done.stderr
    assert done.stderr.strip().count("\n") == 0  # one line, no traceback: refused before Anserini ran
    assert not (tmp_path / "out" / "results.json").exists()
