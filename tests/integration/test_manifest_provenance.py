"""Provenance: manifests under a repository's ``results/`` are written only from a clean checkout (a clone or a
``git worktree``), so that the recorded commit names code that is in history."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from lsr_eval import manifest
from lsr_eval.manifest import ProvenanceError, check_provenance, git_commit, prepare_output, write_manifest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    """A committed repository standing in for the lsr-eval checkout that runs."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "code.py").write_text("X = 1\n")
    (root / ".gitignore").write_text("/work/\n")
    (root / "results").mkdir()
    (root / "results" / "old.json").write_text("{}\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    monkeypatch.setattr(manifest, "SOURCE_ROOT", root)
    return root


def test_clean_checkout_writes_results_with_its_commit(repo: Path):
    out = prepare_output(repo / "results" / "bench", {"a": 1})
    write_manifest(out, "test", {"a": 1})
    doc = json.loads((out / "manifest.json").read_text())
    assert doc["commit"] == git(repo, "rev-parse", "HEAD") and not doc["commit"].endswith("-dirty")


def test_results_being_written_and_ignored_files_do_not_count_as_changes(repo: Path):
    (repo / "results" / "old.json").write_text('{"changed": true}\n')  # a tracked result being regenerated
    (repo / "results" / "new").mkdir()
    (repo / "results" / "new" / "table.csv").write_text("a\n")
    (repo / "work").mkdir()
    (repo / "work" / "cache.bin").write_text("x")  # git-ignored
    check_provenance(repo / "results" / "new")
    assert git_commit() == git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize("change", ["tracked", "untracked", "staged"])
def test_uncommitted_code_is_refused_under_results(repo: Path, change: str):
    if change == "tracked":
        (repo / "pkg" / "code.py").write_text("X = 2\n")
    elif change == "untracked":
        (repo / "pkg" / "new_module.py").write_text("Y = 1\n")
    else:
        (repo / "pkg" / "code.py").write_text("X = 3\n")
        git(repo, "add", "pkg/code.py")
    target = repo / "results" / "bench"
    with pytest.raises(ProvenanceError, match=r"1 uncommitted change.*pkg/(code|new_module)\.py.*worktree"):
        prepare_output(target, {"a": 1})
    assert not target.exists()  # refused before anything is created
    with pytest.raises(ProvenanceError):
        write_manifest(repo / "results", "test", {"a": 1})
    assert git_commit().endswith("-dirty")


def test_dirty_code_still_writes_outside_results(repo: Path, tmp_path: Path):
    (repo / "pkg" / "code.py").write_text("X = 2\n")
    for folder in (tmp_path / "elsewhere", repo / "work" / "runs", tmp_path / "results"):  # tmp_path: no .git
        write_manifest(prepare_output(folder, {"a": 1}), "test", {"a": 1})
        assert json.loads((folder / "manifest.json").read_text())["commit"].endswith("-dirty")


def test_a_clean_worktree_of_a_dirty_checkout_may_write_results(repo: Path, tmp_path: Path, monkeypatch):
    (repo / "pkg" / "code.py").write_text("X = 2\n")  # the main tree is dirty
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(wt), "HEAD")
    assert (wt / ".git").is_file()
    monkeypatch.setattr(manifest, "SOURCE_ROOT", wt)
    out = prepare_output(wt / "results" / "bench", {"a": 1})
    write_manifest(out, "test", {"a": 1})
    assert json.loads((out / "manifest.json").read_text())["commit"] == git(repo, "rev-parse", "HEAD")
    (wt / "pkg" / "code.py").write_text("X = 3\n")
    with pytest.raises(ProvenanceError, match="uncommitted"):
        write_manifest(out, "test", {"a": 1})
    # Writing into the main tree's results/ checks the code that runs (the worktree), not the main tree.
    (wt / "pkg" / "code.py").write_text("X = 1\n")
    write_manifest(prepare_output(repo / "results" / "from-wt", {"a": 1}), "test", {"a": 1})


def test_code_outside_git_cannot_write_results(repo: Path, tmp_path: Path, monkeypatch):
    plain = tmp_path / "installed"
    plain.mkdir()
    monkeypatch.setattr(manifest, "SOURCE_ROOT", plain)
    with pytest.raises(ProvenanceError, match="not a git checkout"):
        check_provenance(repo / "results" / "x")
    check_provenance(tmp_path / "x")  # outside any repository's results/: nothing to check


def test_outputs_of_uncommitted_code_are_not_copied_into_results(repo: Path, tmp_path: Path):
    from lsr_eval.manifest import check_copy

    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(ProvenanceError, match="made by uncommitted code"):
        check_copy({"commit": head + "-dirty"}, repo / "results" / "bench" / "runs" / "x", tmp_path / "work" / "x")
    check_copy({"commit": head}, repo / "results" / "bench" / "runs" / "x", tmp_path / "work" / "x")
    check_copy({"commit": head + "-dirty"}, tmp_path / "out", tmp_path / "work" / "x")  # not under results/
