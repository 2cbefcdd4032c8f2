"""How many documents a corpus holds, cheaply and without reading its text, for progress bars (None: unknown).

A BEIR folder counts the lines of ``corpus.jsonl`` (a byte scan, ~1 s per GB); an ``ir_datasets`` corpus asks its
``docs_count()`` (metadata). Used only to show a total: the stage still counts what it reads and writes.
"""

from __future__ import annotations

from pathlib import Path

#: bytes read at once when counting lines.
_READ = 1 << 24


def count_lines(path: Path) -> int:
    """Lines of a text file, blank ones included (a last line without a newline counts): an upper bound for the
    progress bar's total."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(_READ):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def expected_documents(dataset) -> int | None:
    """Documents in ``dataset`` (a :class:`lsr_eval.data.datasets.Dataset`), or None when it cannot tell cheaply."""
    path = getattr(dataset, "path", None)
    if path is not None and (Path(path) / "corpus.jsonl").is_file():
        return count_lines(Path(path) / "corpus.jsonl")
    irds = getattr(dataset, "_ds", None)
    try:
        count = irds.docs_count() if irds is not None else None
    except Exception:   # noqa: BLE001 - metadata unavailable offline: no total, the bar still counts
        return None
    return int(count) if count else None
