"""Compact JSON lines: orjson when installed (several times faster), else the standard library; same bytes."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
from pathlib import Path
from typing import Any, BinaryIO, Callable

from lsr_eval.errors import on_disk_full

#: gzip level for compressed outputs: 1 is ~3x faster than 9 for a few % more bytes.
GZIP_LEVEL = 1
TMP_MARK = ".tmp-"


def std_dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON with the standard library (the same bytes as ``orjson.dumps`` for str/int/dict/list)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def json_dumper() -> tuple[str, Callable[[Any], bytes]]:
    """(library name, ``obj -> compact UTF-8 JSON bytes``): orjson if installed, else :func:`std_dumps`."""
    try:
        import orjson
    except ImportError:
        return "json", std_dumps
    return "orjson", orjson.dumps


def open_compressed(path: str | os.PathLike, mode: str = "rt", suffix: str | None = None):
    """A file opened by its suffix (``suffix`` when given, e.g. for a temporary name): ``.gz`` (gzip, written without
    a timestamp so that equal contents give equal bytes) or ``.xz`` (LZMA, about half gzip's size for run files)
    compressed on the fly, anything else as is; text modes in UTF-8."""
    path = Path(path)
    suffix = path.suffix if suffix is None else suffix
    encoding = "utf-8" if "b" not in mode else None
    if suffix == ".gz":
        if "w" in mode:   # no name and no time in the header: the same run gives the same bytes, whatever the file
            raw = gzip.GzipFile(filename="", mode="wb", fileobj=open(path, "wb"), mtime=0)
            raw.myfileobj = raw.fileobj   # closed with the gzip stream, as gzip.open's own file is
            return io.TextIOWrapper(raw, encoding=encoding, newline="\n") if encoding else raw
        return gzip.open(path, mode, encoding=encoding)
    if suffix == ".xz":
        return lzma.open(path, mode, encoding=encoding, **({"newline": "\n"} if encoding and "w" in mode else {}))
    return open(path, mode, encoding=encoding, **({"newline": "\n"} if encoding and "w" in mode else {}))


def open_collection_file(path: str | os.PathLike, mode: str = "rt"):
    """A collection file for reading (:func:`open_compressed`)."""
    return open_compressed(path, mode)


class AtomicLines:
    """A file written under a temporary name and renamed on :meth:`close` (gzip when ``compress``), so that a
    crashed export never leaves a partial file for Anserini to index."""

    def __init__(self, path: Path, compress: bool) -> None:
        self.path = path
        self.tmp = path.with_name(f"{path.name}{TMP_MARK}{os.getpid()}")
        self._raw = open(self.tmp, "wb")
        self._f: BinaryIO = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=GZIP_LEVEL,
                                          mtime=0) if compress else self._raw  # type: ignore[assignment]
        self.lines = 0

    def _disk_full(self):
        """A full disk as one line naming the folder and what the file had taken (the temporary file removed)."""
        return on_disk_full(self.path.parent, f"writing {self.path.name}",
                            lambda: self.tmp.stat().st_size if self.tmp.exists() else None, at_least=True,
                            cleanup=self.abort)

    def write_lines(self, lines: list[bytes]) -> None:
        if lines:
            with self._disk_full():
                self._f.write(b"\n".join(lines) + b"\n")
            self.lines += len(lines)

    def close(self) -> None:
        with self._disk_full():
            if self._f is not self._raw:
                self._f.close()
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            os.replace(self.tmp, self.path)

    def abort(self) -> None:
        """Drop the temporary file (even when closing it fails again, as on a full disk)."""
        try:
            if self._f is not self._raw:
                self._f.close()
            self._raw.close()
        except OSError:
            pass  # the error being handled is the one to report
        finally:
            self.tmp.unlink(missing_ok=True)
