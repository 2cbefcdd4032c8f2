"""A full disk, for real (a tiny tmpfs), where stages write: one line naming the folder and the space needed, nothing
partial trusted (a rerun with room gives the same result), no mount left behind."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import splade_tiny_dir
from faults import error_line, tmpfs

from lsr_eval.cli import main
from lsr_eval.encode.store import NPZ_MEMBER_OVERHEAD, TMP_MARK
from lsr_eval.errors import DiskFullError, JavaError, format_bytes, free_bytes, is_disk_full, on_disk_full
from lsr_eval.runs.trec import write_run


@pytest.fixture
def disk(tmp_path):
    with tmpfs(tmp_path / "disk", "16m") as d:
        yield d


def _files(folder: Path) -> dict[str, bytes]:
    """The bytes of an encoding's files that depend only on the input (the shards' times and the manifest do not)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.name.endswith(".npz") or p.name in ("vocab.json", "encoding.json")}


def test_a_resumed_encoding_on_a_full_disk_names_the_shard_and_its_size_and_resumes_with_room(
        disk, tmp_path, tiny_beir, capsys):
    splade_tiny_dir()
    encode = ["encode", "splade-tiny", str(tiny_beir), "--shard-size", "2"]
    ref = tmp_path / "ref"
    assert main([*encode, "--out", str(ref)]) == 0          # 5 documents: shards 0, 1, 2
    # a run killed after its first shard, on a disk with one page left: shard 1's time file fits, the shard does not
    out = disk.root / "enc"
    out.mkdir()
    for name in ("vocab.json", "encoding.json", "shard-00000.npz", "shard-00000.time.json"):
        shutil.copy(ref / name, out / name)
    disk.fill(leave=4096)
    capsys.readouterr()
    assert main([*encode, "--out", str(out)]) == 2
    line = error_line(capsys.readouterr().err, "encode")
    with np.load(ref / "shard-00001.npz") as z:  # what write_shard estimates: the arrays plus a header each
        estimate = sum(z[m].nbytes + NPZ_MEMBER_OVERHEAD for m in z.files)
    assert estimate >= (ref / "shard-00001.npz").stat().st_size
    assert line == (f"lsr-eval encode: error: {out}: no space left on its disk while writing shard-00001.npz (it "
                    f"needs about {format_bytes(estimate)}, {format_bytes(free_bytes(out))} free there); free space "
                    "on that disk, or move the folder to a larger one (--work-dir / LSR_EVAL_WORK for the cache, "
                    "--out for outputs), and rerun: nothing partial was kept")
    assert not (out / "shard-00001.npz").exists() and not (out / "manifest.json").exists()
    assert not [p for p in out.iterdir() if TMP_MARK in p.name]

    disk.resize("32m")
    assert main([*encode, "--out", str(out)]) == 0
    assert _files(out) == _files(ref)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["documents_in"] == manifest["counts"]["documents_out"] == 5
    assert [r["shards_verified"] for r in manifest["parameters"]["runs"]] == [1]


def test_a_full_work_folder_at_the_export_and_the_index_is_one_line_and_a_rerun_with_room_gives_the_same_metrics(
        disk, tmp_path, tiny_beir, capsys):
    splade_tiny_dir()
    work = disk.root / "work"

    def splade(out: str) -> int:
        return main(["splade", "splade-tiny", str(tiny_beir), "--out", str(tmp_path / out), "--work-dir", str(work)])

    assert splade("first") == 0
    metrics = json.loads((tmp_path / "first" / "metrics.json").read_text())
    (collection_slot,) = (work / "collections").iterdir()
    (index_slot,) = (work / "indexes").iterdir()
    manifest_bytes = len((collection_slot / "manifest.json").read_bytes())

    # two pages: the reused encoding rewrites its manifest in them, the export's file takes one, its manifest fails
    shutil.rmtree(collection_slot)
    shutil.rmtree(index_slot)
    disk.fill(leave=2 * 4096)
    capsys.readouterr()
    assert splade("second") == 2
    line = error_line(capsys.readouterr().err, "splade")
    assert line.startswith(f"lsr-eval splade: error: {collection_slot}: no space left on its disk while writing "
                           f"manifest.json (it needs about {format_bytes(manifest_bytes)}, ")
    assert line.endswith("and rerun: nothing partial was kept")
    assert not collection_slot.exists()          # the partial collection is removed (its space given back)
    assert not (tmp_path / "second").exists()

    # the export fits, Lucene's files do not: Anserini logs the IOException and counts every document indexed
    disk.empty()
    assert splade("second") == 0
    shutil.rmtree(index_slot)
    shutil.rmtree(tmp_path / "second")
    disk.fill(leave=2 * 4096)
    capsys.readouterr()
    assert splade("second") == 2
    line = error_line(capsys.readouterr().err, "splade")
    assert line.startswith(f"lsr-eval splade: error: {index_slot / 'index'}: Anserini counted 5 documents indexed, "
                           "but the index "), line
    assert "free on its disk); free space or fix the cause, and rerun" in line
    assert not (index_slot / "manifest.json").exists()     # not published: the next build removes it

    disk.empty()
    assert splade("third") == 0
    assert json.loads((tmp_path / "third" / "metrics.json").read_text()) == metrics


def test_a_run_file_on_a_full_disk_names_its_folder_and_estimated_size(disk, tmp_path, capsys):
    run = {f"q{i}": {f"doc{j}": 1.0 / (1 + i + j) for j in range(200)} for i in range(20)}
    runs = []
    for name, shift in (("a", 0), ("b", 1)):
        runs.append(tmp_path / f"{name}.trec")
        write_run({q: {d: s + shift for d, s in hits.items()} for q, hits in run.items()}, runs[-1])
    assert main(["fuse", *map(str, runs), "--out", str(tmp_path / "ref.trec")]) == 0
    real = (tmp_path / "ref.trec").stat().st_size
    out = disk.root / "fused.trec"
    disk.fill(leave=0)
    capsys.readouterr()
    assert main(["fuse", *map(str, runs), "--out", str(out)]) == 2
    line = error_line(capsys.readouterr().err, "fuse")
    m = re.search(r"while writing the run fused\.trec \(it needs about ([\d.]+) (B|KiB|MiB), 0 B free there\)", line)
    assert m and line.startswith(f"lsr-eval fuse: error: {disk.root}: "), line
    needed = float(m.group(1)) * {"B": 1, "KiB": 1024, "MiB": 1024 ** 2}[m.group(2)]
    assert real <= needed <= 2 * real            # an upper estimate, of the right size
    assert [p.name for p in disk.root.iterdir()] == ["filler"]   # no partial run, no temporary file


def test_a_relayed_java_disk_fault_counts_and_a_guarded_write_passes_its_own_error_through(tmp_path):
    assert is_disk_full(JavaError("IndexCollection: java.io.IOException: No space left on device"))
    assert not is_disk_full(JavaError("IndexCollection: java.io.IOException: Permission denied"))
    assert is_disk_full(RuntimeError("Seismic failed while building x: No space left on device (os error 28)"))
    assert not is_disk_full(OSError(13, "Permission denied"))
    inner = DiskFullError("the shard's own line")
    with pytest.raises(DiskFullError) as e:
        with on_disk_full(tmp_path, "building", needed=lambda: 1 / 0):  # not asked: the inner error is kept
            raise inner
    assert e.value is inner


def test_an_export_on_a_full_disk_names_its_folder_and_leaves_no_partial_file(disk, tmp_path, capsys):
    from lsr_eval.data.types import Document
    from lsr_eval.encode import HashingEncoder, encode_corpus

    vectors = tmp_path / "vectors"
    encode_corpus([Document(f"d{i}", " ".join(f"w{i * 7 + j}" for j in range(60))) for i in range(400)],
                  HashingEncoder(vocab_size=4096), vectors, {"toy": 1}, progress=False)
    out = disk.root / "collection"
    disk.fill(leave=4096)
    capsys.readouterr()
    assert main(["export", str(vectors), "--out", str(out)]) == 2
    line = error_line(capsys.readouterr().err, "export")
    assert re.match(rf"lsr-eval export: error: {re.escape(str(out / 'docs'))}: no space left on its disk while "
                    r"writing docs-00000\.jsonl \(it needs more than [\d.]+ KiB, [\d.]+ KiB free there\)", line), line
    assert line.endswith("and rerun: nothing partial was kept")
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]


def test_the_last_resort_names_the_fault_of_an_unguarded_write(disk):
    disk.fill(leave=0)
    with pytest.raises(DiskFullError, match=r"^a folder this command writes to: no space left on its disk while "
                                            r"running `lsr-eval x` \(it needs more space\); .* and rerun$"):
        with on_disk_full(None, "running `lsr-eval x`", clean=False):
            with open(disk.root / "f", "wb", buffering=0) as f:
                f.write(b"x" * 8192)
