"""Git checks shared by the pre-registered studies' tests: which commit registered a study, and whether a run's
manifest was written from a commit that descends from it."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def full_history() -> bool:
    """Whether this checkout has the whole history (a shallow clone cannot answer ancestry)."""
    return git("rev-parse", "--is-shallow-repository").stdout.strip() == "false"


def registration_commit(paths: list[str]) -> str:
    """The last commit that changed any of ``paths`` ("" when none did)."""
    return git("log", "-1", "--format=%H", "--", *paths).stdout.strip()


def descends(commit: str, registered: str) -> bool:
    """Whether ``commit`` is ``registered`` or one of its descendants."""
    return git("merge-base", "--is-ancestor", registered, commit).returncode == 0
