"""Exception types. Every input problem raises one of these with a message that names the file, line or id; a full
disk is turned into one of them by :func:`on_disk_full`."""

from __future__ import annotations

import errno
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


class LsrEvalError(Exception):
    """Base class: the CLI prints these as one-line errors (no traceback)."""


class InputError(LsrEvalError, ValueError):
    """Bad user input: malformed file, unknown name, duplicate id, ..."""


class ConfigError(InputError):
    """An invalid option value or configuration key."""


class JavaError(LsrEvalError, RuntimeError):
    """A Java exception raised inside Anserini, or no usable Java."""


class OutputExistsError(LsrEvalError):
    """An output folder holds a different experiment (pass --overwrite to replace it)."""


class DiskFullError(LsrEvalError):
    """No space left on the disk of a folder a stage writes to."""


#: errno values of a full disk: no space left, disk quota exceeded.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
#: How Java (Lucene) and native tools relay ENOSPC in their messages.
DISK_FULL_TEXT = os.strerror(errno.ENOSPC)


def _chain(e: BaseException | None) -> Iterator[BaseException]:
    """``e`` and the exceptions it was raised from or while handling."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def is_disk_full(e: BaseException | None) -> bool:
    """Whether ``e``, or an exception it was raised from or while handling, is a full disk: an ``OSError`` with
    ENOSPC/EDQUOT, or an error relaying one in its text (Java's ``IOException: No space left on device``, a native
    engine's ``RuntimeError``)."""
    return any(isinstance(x, DiskFullError) or (isinstance(x, OSError) and x.errno in DISK_FULL_ERRNOS)
               or DISK_FULL_TEXT in str(x) for x in _chain(e))


def format_bytes(n: int) -> str:
    """``n`` bytes for a message: ``512 B``, ``3.4 KiB``, ``1.2 MiB``, ``5.0 GiB``."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    size, i = float(n), 0
    while size >= 1024 and i < len(units) - 1:
        size, i = size / 1024, i + 1
    return f"{n} B" if i == 0 else f"{size:.1f} {units[i]}"


def free_bytes(path: str | os.PathLike) -> int | None:
    """Free bytes on the disk holding ``path`` (its nearest existing folder); None when that cannot be told."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def disk_full_error(folder: str | os.PathLike | None, what: str, needed: int | None = None,
                    at_least: bool = False, clean: bool = True) -> DiskFullError:
    """The one-line error of a full disk: the folder, what was being written, the space it needs (``needed`` bytes;
    with ``at_least``, more than that), the space free there, and what to do; ``clean``: the writer left nothing
    partial (say so)."""
    where = str(folder) if folder is not None else "a folder this command writes to"
    if needed is None:
        need = "it needs more space"
    else:
        need = f"it needs {'more than ' if at_least else 'about '}{format_bytes(needed)}"
    free = free_bytes(folder) if folder is not None else None
    if free is not None:
        need += f", {format_bytes(free)} free there"
    return DiskFullError(f"{where}: no space left on its disk while {what} ({need}); free space on that disk, or "
                         "move the folder to a larger one (--work-dir / LSR_EVAL_WORK for the cache, --out for "
                         f"outputs), and rerun{': nothing partial was kept' if clean else ''}")


@contextmanager
def on_disk_full(folder: str | os.PathLike | None, what: str,
                 needed: int | Callable[[], int | None] | None = None,
                 at_least: bool = False, cleanup: Callable[[], None] | None = None,
                 clean: bool = True) -> Iterator[None]:
    """Turn a full disk inside the block into :class:`DiskFullError` (one line, see :func:`disk_full_error`).

    ``needed``: the bytes the write needs, or a function giving them at the fault (e.g. what a stage had written by
    then, with ``at_least``). ``cleanup`` runs first (e.g. removing a partial output). A :class:`DiskFullError`
    raised inside (a write that named its own file and size) passes through, after ``cleanup``. ``folder`` None:
    the folder of the file the fault names, if any; ``clean`` False: the writer may have left a partial file (both
    for the CLI's last resort).
    """
    try:
        yield
    except Exception as e:
        if not is_disk_full(e):
            raise
        inner = next((x for x in _chain(e) if isinstance(x, DiskFullError)), None)
        if inner is not None:
            if cleanup is not None:
                cleanup()
            raise inner
        size = needed() if callable(needed) else needed
        if cleanup is not None:
            cleanup()
        raise disk_full_error(folder if folder is not None else _named_folder(e), what, size, at_least,
                              clean) from e


def _named_folder(e: BaseException) -> Path | None:
    """The folder of the first file an exception in ``e``'s chain names (``open`` names it; ``write`` does not)."""
    return next((Path(x.filename).parent for x in _chain(e) if isinstance(x, OSError) and x.filename), None)
