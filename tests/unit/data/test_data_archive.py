"""A downloaded archive against its lock file (lsr_eval.data.archive, lsr_eval.data.lock): counts by hand, recorded
on the first run, checked after; a changed, unreadable or incomplete archive is one error naming it."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from lsr_eval.cli import main
from lsr_eval.data.archive import archive_counts, check_archive
from lsr_eval.errors import InputError


def tarball(path, files: dict[str, str]):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


FILES = {"models/mlm_flops/DistilBERT/config.json": "{}", "models/mlm_flops/DistilBERT/model.bin": "w",
         "models/mlm_flops/BERTiny/config.json": "{}", "README": "r"}


def test_counts_by_hand(tmp_path):
    c = archive_counts(tarball(tmp_path / "a.tar.gz", FILES), ["DistilBERT", "BERTiny"])
    assert (c.files, c.folders) == (4, {"DistilBERT": 2, "BERTiny": 1}) and len(c.sha256) == 64
    assert c.lock_values() == {"sha256": c.sha256, "files": 4, "files_DistilBERT": 2, "files_BERTiny": 1}


def test_recorded_then_checked_and_a_change_is_named(tmp_path):
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps({"note": "n", "sha256": None, "files": None, "files_DistilBERT": None}))
    a = tarball(tmp_path / "a.tar.gz", FILES)
    assert "recorded sha256, files, files_DistilBERT into" in check_archive(a, lock, ["DistilBERT"])
    assert json.loads(lock.read_text())["files_DistilBERT"] == 2 and json.loads(lock.read_text())["note"] == "n"
    assert check_archive(a, lock, ["DistilBERT"]).endswith(f"matches {lock}")
    b = tarball(tmp_path / "b.tar.gz", {**FILES, "models/mlm_flops/DistilBERT/extra": "x"})
    with pytest.raises(InputError, match=rf"{b} differs from the one recorded: sha256 .*; files 4 expected, 5 "
                                         r"found; files_DistilBERT 2 expected, 3 found"):
        check_archive(b, lock, ["DistilBERT"])


def test_missing_unreadable_or_incomplete_archives_are_named(tmp_path, capsys):
    lock = tmp_path / "lock.json"
    lock.write_text(json.dumps({"sha256": None}))
    with pytest.raises(InputError, match=r"nowhere.tar.gz does not exist"):
        archive_counts(tmp_path / "nowhere.tar.gz")
    (tmp_path / "bad.tar.gz").write_text("not a tarball")
    with pytest.raises(InputError, match=r"bad.tar.gz: not a readable tar archive"):
        archive_counts(tmp_path / "bad.tar.gz")
    a = tarball(tmp_path / "a.tar.gz", FILES)
    assert main(["check-archive", str(a), "--expect", str(lock), "--need", "BERTiny", "--need", "ColBERT"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"lsr-eval check-archive: error: {a} holds no file under a ColBERT folder (needed: BERTiny, "
                   f"ColBERT); download it again"]
    assert json.loads(lock.read_text()) == {"sha256": None}       # nothing recorded from an incomplete archive
