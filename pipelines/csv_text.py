"""CSV tables of the benchmarks, as text: written to their results folder by a script and made again from its raw
files by the same script's ``summaries`` (tests/test_committed_results.py compares the two byte for byte)."""

from __future__ import annotations

import csv
import io
from typing import Any, Mapping, Sequence


def csv_text(fields: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` as CSV: a header of ``fields``, then each row's values in that order (a missing one empty), with
    the csv module's ``\\r\\n`` line ends."""
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(fields))
    w.writeheader()
    for row in rows:
        w.writerow({k: row.get(k) for k in fields})
    return buf.getvalue()
