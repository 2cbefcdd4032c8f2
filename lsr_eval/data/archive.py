"""A downloaded archive checked before it is used (naver's middle-trained checkpoints, ``mlm_flops.tar.gz``:
naver/splade ``conf/efficient_splade/README.md``): its sha256 and file counts, the counts under each folder a later
stage needs, against a lock file (:func:`lsr_eval.data.lock.check_lock`: recorded by the first run, checked after).
A missing archive, an unreadable one, a needed folder it lacks or a value that differs is one error naming it."""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Sequence

from lsr_eval.data.lock import check_lock
from lsr_eval.data.trec_files import file_sha256
from lsr_eval.errors import InputError


@dataclass(frozen=True)
class ArchiveCounts:
    """The archive's sha256, its regular files, and the files under each needed folder (by folder name)."""

    sha256: str
    files: int
    folders: dict[str, int] = field(default_factory=dict)

    def lock_values(self) -> dict[str, Any]:
        """The values a lock file records: ``sha256``, ``files`` and ``files_<folder>`` per needed folder."""
        return {"sha256": self.sha256, "files": self.files, **{f"files_{k}": v for k, v in self.folders.items()}}


def archive_counts(path: str | os.PathLike, need: Sequence[str] = ()) -> ArchiveCounts:
    """Count the regular files of the tar archive ``path`` and those under a folder named each of ``need`` (at any
    depth); a missing or unreadable archive, or a needed folder it lacks, is one error naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path} does not exist (the archive to check)")
    try:
        with tarfile.open(path) as tar:
            members = [m.name for m in tar.getmembers() if m.isfile()]
    except (tarfile.TarError, OSError, EOFError) as e:
        raise InputError(f"{path}: not a readable tar archive ({e}); download it again") from e
    folders = {}
    for name in need:
        under = [m for m in members if name in PurePosixPath(m).parts[:-1]]
        if not under:
            raise InputError(f"{path} holds no file under a {name} folder (needed: {', '.join(need)}); download it "
                             "again")
        folders[name] = len(under)
    return ArchiveCounts(file_sha256(path), len(members), folders)


def check_archive(path: str | os.PathLike, expect: str | os.PathLike, need: Sequence[str] = ()) -> str:
    """One line: the archive's counts (:func:`archive_counts`) and what the lock file ``expect`` made of them
    (recorded or matched); a mismatch raises, naming the archive and every value that differs."""
    counts = archive_counts(path, need)
    done = check_lock(counts.lock_values(), expect, list(counts.lock_values()), str(path))
    per = ", ".join(f"{k}: {v}" for k, v in counts.folders.items())
    return f"{path}: sha256 {counts.sha256}, {counts.files} files{f' ({per})' if per else ''}; {done}"
