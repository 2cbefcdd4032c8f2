"""Real faults for the fault tests: a tiny tmpfs that fills up (root only), bytes flipped in a shard, and the check
that the CLI reported a fault as one line."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

#: A tqdm progress bar ("encode rank 0/1: 100%|████| 5/5 [...]"): the only other output on stderr in process.
PROGRESS = re.compile(r"^.*: +\d+%\|.*\|")
PAGE = 4096  # tmpfs allocates whole pages


def error_line(err: str, command: str) -> str:
    """The one line ``lsr-eval COMMAND: error: ...`` that ``err`` (a command's stderr) must consist of, besides
    progress bars: fails on a traceback, a second error line or any other output."""
    lines = [line for line in re.split(r"[\r\n]+", err) if line.strip() and not PROGRESS.match(line)]
    assert "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith(f"lsr-eval {command}: error: "), lines
    return lines[0]


def is_mounted(path: Path) -> bool:
    target = str(path.resolve())
    with open("/proc/mounts", encoding="utf-8") as f:
        return any(line.split()[1] == target for line in f)


class Disk:
    """A mounted tmpfs: :meth:`fill` leaves a chosen number of bytes free, :meth:`resize` gives it room."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / "filler"

    def resize(self, size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.root)], check=True, capture_output=True)

    def fill(self, leave: int = 0) -> None:
        """Write a filler file until the disk is full, then give back ``leave`` bytes (whole pages)."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            written = os.fstat(fd).st_size
            block = b"\0" * PAGE
            while True:
                try:
                    written += os.write(fd, block)
                except OSError:
                    break
            os.ftruncate(fd, max(0, written - leave))
        finally:
            os.close(fd)

    def empty(self) -> None:
        self.filler.unlink(missing_ok=True)


@contextmanager
def tmpfs(mount_point: Path, size: str) -> Iterator[Disk]:
    """A tmpfs of ``size`` at ``mount_point``, unmounted on exit whatever happened (lazily if busy). Skips where
    mounting is not permitted, except in CI (env ``CI``), where the tests run as root and must run."""
    mount_point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs at {mount_point} ({done.stderr.strip() or done.returncode}): a real full " \
                 "disk needs root"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield Disk(mount_point)
    finally:
        if subprocess.run(["umount", str(mount_point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
        assert not is_mounted(mount_point), f"{mount_point} is still mounted"


def flip_member_byte(npz: Path, member: str, offset: int = 200) -> None:
    """Flip one byte of ``member`` (e.g. ``indices.npy``) inside an uncompressed ``.npz``, ``offset`` bytes into its
    data (past the npy header): the zip stays readable, the member's CRC-32 no longer matches."""
    with zipfile.ZipFile(npz) as zf:
        info = zf.getinfo(member)
    with open(npz, "r+b") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
        data = info.header_offset + 30 + name_len + extra_len
        if not 0 <= offset < info.compress_size:
            raise ValueError(f"{npz}: {member} has {info.compress_size} bytes, cannot flip byte {offset}")
        f.seek(data + offset)
        byte = f.read(1)
        f.seek(data + offset)
        f.write(bytes([byte[0] ^ 0xFF]))
