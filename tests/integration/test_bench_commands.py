"""studies/command_speed/run.py, run as a user runs it (a subprocess, this checkout as both 'before' and 'after',
two repeats): its three files, medians that are the medians of the recorded samples, the same numbers twice."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from conftest import REPO, shared_path


def test_two_repeats_write_the_three_files(tmp_path):
    data = shared_path("msmarco-passage")
    subprocess.run([sys.executable, str(REPO / "studies" / "command_speed" / "run.py"), "--before", str(REPO),
                    "--data", str(data), "--repeats", "2", "--warmup", "0", "--out", str(tmp_path)], check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["rows"]) == {"evaluate", "fuse", "help"}
    for name, row in results["rows"].items():
        samples = results["samples"][name]
        assert all(len(s) == 2 for s in samples.values())
        assert row["median_s"] == {k: statistics.median(s) for k, s in samples.items()}
        assert row["same_output"] is (None if name == "help" else True)  # one checkout: the same numbers twice
        assert row["meets_target"] == (row["median_s"]["after"] < row["target_s"])
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["experiment"]["repeats"] == 2 and manifest["stage"] == "bench-commands" and manifest["commit"]
    from studies.command_speed.summary import summaries

    assert summaries(tmp_path) == {"summary.md": (tmp_path / "summary.md").read_text()}
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("# Command wall times") and summary.count("| `lsr-eval ") == 3
