"""A cache entry damaged after a good run: a shard with a flipped byte is encoded again on the next run (the log says
so, the result is the same) and refused, naming the folder to remove, where it cannot be rebuilt; a slot whose
manifest is damaged is built again."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
from conftest import splade_tiny_dir
from faults import error_line, flip_member_byte

from lsr_eval.cli import main
from lsr_eval.encode.store import read_shard, shard_problem
from lsr_eval.errors import InputError
from lsr_eval.manifest import write_manifest
from lsr_eval.workdir import cache_slot, cached


def test_a_damaged_cached_shard_is_encoded_again_and_the_rerun_gives_the_same_metrics(tmp_path, tiny_beir, caplog):
    splade_tiny_dir()
    work = tmp_path / "work"

    def splade(out: str) -> int:
        return main(["splade", "splade-tiny", str(tiny_beir), "--out", str(tmp_path / out), "--work-dir", str(work)])

    assert splade("first") == 0
    (encoding,) = (work / "encodings").iterdir()
    shard = encoding / "shard-00000.npz"
    good = shard.read_bytes()
    flip_member_byte(shard, "indices.npy")
    assert shard_problem(shard) == "bad CRC-32 for 'indices.npy'"
    with caplog.at_level(logging.WARNING, logger="lsr_eval"):
        assert splade("second") == 0
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"{shard} fails its check (bad CRC-32 for 'indices.npy'): removed, encoding it again" in said
    assert shard.read_bytes() == good
    assert (json.loads((tmp_path / "second" / "metrics.json").read_text())
            == json.loads((tmp_path / "first" / "metrics.json").read_text()))


def test_reading_a_damaged_shard_is_one_line_naming_the_folder_to_remove(tmp_path, tiny_beir, capsys):
    splade_tiny_dir()
    vectors = tmp_path / "vectors"
    assert main(["encode", "splade-tiny", str(tiny_beir), "--out", str(vectors), "--shard-size", "2"]) == 0
    shard = vectors / "shard-00001.npz"
    flip_member_byte(shard, "indices.npy")
    capsys.readouterr()
    assert main(["export", str(vectors), "--out", str(tmp_path / "collection")]) == 2
    line = error_line(capsys.readouterr().err, "export")
    assert line == (f"lsr-eval export: error: {shard}: fails its check (BadZipFile: Bad CRC-32 for file "
                    f"'indices.npy'); the encoded folder {vectors} is damaged: remove that folder and rerun, which "
                    "encodes it again")
    assert not (tmp_path / "collection").exists()


@pytest.mark.parametrize("damage", ["truncated", "not a zip"])
def test_a_truncated_or_foreign_shard_fails_its_check(tmp_path, damage):
    from lsr_eval.data.types import Document
    from lsr_eval.encode import HashingEncoder, encode_corpus

    folder = tmp_path / "v"
    encode_corpus([Document(f"d{i}", f"w{i} w{i + 1}") for i in range(3)], HashingEncoder(vocab_size=16), folder,
                  {"toy": 1}, progress=False)
    shard = folder / "shard-00000.npz"
    data = shard.read_bytes()
    shard.write_bytes(data[:len(data) // 2] if damage == "truncated" else b"not a zip file at all")
    assert shard_problem(shard) is not None
    with pytest.raises(InputError, match=f"^{shard}: fails its check .*; the encoded folder {folder} is damaged"):
        read_shard(shard)


def test_a_cache_slot_whose_manifest_is_damaged_is_built_again(tmp_path, caplog):
    key = {"stage": "toy", "n": 1}
    slot = cache_slot(tmp_path, "things", key, "toy")
    builds = []

    def build() -> None:
        builds.append(1)
        slot.mkdir(parents=True)
        (slot / "data.txt").write_text("payload\n")
        write_manifest(slot, "toy", key)

    assert cached(slot, key, build)["experiment"] == key and len(builds) == 1
    assert cached(slot, key, build) is not None and len(builds) == 1      # reused
    manifest = slot / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:40])                   # cut short
    with caplog.at_level(logging.WARNING, logger="lsr_eval"):
        assert cached(slot, key, build)["experiment"] == key
    assert len(builds) == 2
    assert any(r.getMessage().startswith(f"{slot}: its manifest is unreadable (")
               and r.getMessage().endswith("): building this cache entry again") for r in caplog.records)
    shutil.rmtree(slot)
