"""Two processes sharing a work folder: each cached stage is built once, the other process waits and reuses it."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsr_eval.manifest import write_manifest
from lsr_eval.workdir import cache_slot, cached, lock_path

REPO = Path(__file__).resolve().parents[2]
KEY = {"stage": "test", "corpus": "tiny"}


def _build_slowly(slot: str, log: str) -> None:
    """A stage build that takes a second, writing a file then its manifest (as the real stages do)."""
    slot_path = Path(slot)
    with open(log, "a") as f:
        f.write(f"start {os.getpid()}\n")
    slot_path.mkdir(parents=True)
    (slot_path / "part").write_text("half")
    time.sleep(1.0)
    (slot_path / "part").write_text("whole")
    write_manifest(slot_path, "test", KEY)
    with open(log, "a") as f:
        f.write(f"end {os.getpid()}\n")


def _worker(slot: str, log: str, out: str) -> None:
    manifest = cached(Path(slot), KEY, build=lambda: _build_slowly(slot, log))
    Path(out).write_text(json.dumps({"experiment": manifest["experiment"],
                                     "part": (Path(slot) / "part").read_text()}))


def test_two_processes_build_a_slot_once(tmp_path):
    slot = cache_slot(tmp_path / "work", "indexes", KEY, "tiny")
    log = tmp_path / "builds.log"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(str(slot), str(log), str(tmp_path / f"out{i}.json")))
             for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert log.read_text().split()[::2] == ["start", "end"]          # one build, not interleaved
    for i in range(2):  # both saw the finished artefact, never the half-written one
        assert json.loads((tmp_path / f"out{i}.json").read_text()) == {"experiment": KEY, "part": "whole"}
    assert lock_path(slot).exists() and not lock_path(slot).is_relative_to(slot)


def test_a_killed_build_is_removed_and_redone(tmp_path):
    slot = cache_slot(tmp_path / "work", "indexes", KEY, "tiny")
    slot.mkdir(parents=True)
    (slot / "part").write_text("half")  # no manifest: what a killed build leaves
    manifest = cached(slot, KEY, build=lambda: (slot.mkdir(), write_manifest(slot, "test", KEY)))
    assert manifest["experiment"] == KEY and not (slot / "part").exists()


def test_a_build_without_manifest_is_a_bug_said_clearly(tmp_path):
    from lsr_eval.errors import LsrEvalError

    slot = cache_slot(tmp_path / "work", "indexes", KEY, "tiny")
    with pytest.raises(LsrEvalError, match="without a manifest"):
        cached(slot, KEY, build=lambda: slot.mkdir(parents=True))


def test_two_bm25_commands_on_one_dataset_share_the_index(tiny_beir, tmp_path):
    """Today's second process died with Lucene's LockObtainFailedException (or removed the first's index)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "lsr_eval.cli", "bm25", str(tiny_beir), "--work-dir", str(tmp_path / "work")]
    procs = [subprocess.Popen(cmd + ["--out", str(tmp_path / f"run{i}")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    both = "\n".join(outputs)
    assert "LockObtainFailed" not in both
    assert both.count("indexed 5 documents") == 1, both                    # built once ...
    assert "reusing BM25 index" in both                                     # ... and reused by the other
    runs = [(tmp_path / f"run{i}" / "run.trec").read_text() for i in range(2)]
    assert runs[0] == runs[1] and runs[0]
