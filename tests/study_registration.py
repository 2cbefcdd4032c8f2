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


def as_now(commit: str, paths: list[str]) -> bool:
    """Whether ``paths`` read at ``commit`` as they do now (in the working tree)."""
    return git("diff", "--quiet", commit, "--", *paths).returncode == 0


def registration_commit(paths: list[str]) -> str:
    """The commit that registered ``paths`` as they read now: the oldest commit that changed any of them and at which
    they read as now ("" when none did). A change undone later does not move it; a run must also have read them as
    now (:func:`as_now`), so a run made while they differed still fails."""
    same = [c for c in git("log", "--format=%H", "--", *paths).stdout.split() if as_now(c, paths)]
    return same[-1] if same else ""


def ran_after_registration(manifest: Path, registration: str) -> bool:
    """Whether the result whose ``manifest`` records its commit was made at or after the commit that added the study's
    ``registration`` file (its pre-registration)."""
    import json

    added = git("log", "--diff-filter=A", "--format=%H", "--", registration).stdout.split()
    return bool(added) and descends(json.loads(manifest.read_text())["commit"], added[-1])


def descends(commit: str, registered: str) -> bool:
    """Whether ``commit`` is ``registered`` or one of its descendants."""
    return git("merge-base", "--is-ancestor", registered, commit).returncode == 0
