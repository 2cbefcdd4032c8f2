"""The order in which ``make test`` hands test files to its pytest-xdist workers (``--dist loadfile
--no-loadscope-reorder``: a file to the next free worker, in collection order), and the file durations it orders by.

The session's SciFact encoding runs first; every other file goes longest first, the files that wait for the encoding
once it should be done. Longest first keeps a long file from starting last while the other workers run out of work.
Only the order depends on the durations, never a result."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence, TypeVar

#: Seconds each test file took in a full ``make test`` on 2 cores (setup, call and teardown of its tests, under
#: contention). Refresh: ``cp work/test-durations.json tests/durations.json`` after a full run.
DURATIONS = Path(__file__).with_name("durations.json")
#: Written by every run's controller: :data:`DURATIONS`, then what this file held, updated with the files that ran.
RECORDED = Path(__file__).resolve().parents[1] / "work" / "test-durations.json"

Item = TypeVar("Item")


def read_durations(path: Path = DURATIONS) -> dict[str, float]:
    """``{test file: seconds}`` from ``path``; empty where it is missing or unreadable (the order then falls back
    to collection order)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0}


def file_of(nodeid: str) -> str:
    """The test file of a node id, as :data:`DURATIONS` keys it (``tests/unit/test_x.py``)."""
    return nodeid.split("::", 1)[0]


def schedule(items: Sequence[Item], file: Callable[[Item], str], waits: Callable[[Item], bool],
             durations: Mapping[str, float], workers: int = 1) -> list[Item]:
    """``items`` reordered, each file's items kept together and in their order.

    ``waits(item)``: the item uses the session's encoding. The first file with such an item runs first, those items
    before its others. The other files follow longest first by ``durations`` (a file not in it counts as the median;
    ties keep collection order), except that the files that wait for the encoding come, longest first, once the
    files before them fill the other ``workers - 1`` workers for as long as the encoding takes (the first file's
    duration): a long file then starts as soon as it can run, and the short ones fill the end."""
    files = list(dict.fromkeys(map(file, items)))
    known = [durations[f] for f in files if f in durations]
    default = statistics.median(known) if known else 0.0
    seconds = {f: durations.get(f, default) for f in files}
    users = {file(item) for item in items if waits(item)}
    first = next((file(item) for item in items if waits(item)), None)
    longest_first = sorted((f for f in files if f != first), key=lambda f: -seconds[f])  # stable: ties in order
    others = [f for f in longest_first if f not in users]
    budget, filled, cut = (workers - 1) * seconds.get(first, 0.0), 0.0, 0
    while cut < len(others) and filled < budget:
        filled += seconds[others[cut]]
        cut += 1
    order = others[:cut] + [f for f in longest_first if f in users] + others[cut:]
    rank = {f: i + 1 for i, f in enumerate(order)}

    def key(item: Item) -> tuple[int, int]:
        f = file(item)
        return (rank[f], 0) if f != first else (0, 0 if waits(item) else 1)

    return sorted(items, key=key)


def record(seconds: Mapping[str, float], base: Mapping[str, float], path: Path = RECORDED) -> None:
    """Write ``base`` updated with ``seconds`` (rounded to 0.1 s) to ``path`` (whole or not at all)."""
    merged = {**base, **{f: round(s, 1) for f, s in seconds.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def total_by_file(reports: Iterable[tuple[str, float]]) -> dict[str, float]:
    """``(node id, seconds)`` pairs summed per test file."""
    out: dict[str, float] = {}
    for nodeid, seconds in reports:
        out[file_of(nodeid)] = out.get(file_of(nodeid), 0.0) + seconds
    return out
