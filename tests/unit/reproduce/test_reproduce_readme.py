"""Every number of the result tables of the README and docs/results.md is backed by a committed result: a table follows
a ``<!-- backed-by: RESULT... -->`` comment naming the committed benchmarks (under results/) it comes from, and each of
its rows must equal one row of those tables in every numeric cell, to the decimals the README prints, and a significance
marker it shows must be the committed one. A README number that no committed result backs fails here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

README = REPO / "README.md"
RESULTS_DOC = REPO / "docs" / "results.md"
#: Pages whose result tables are checked once their results are committed (the study writes its page with them).
STUDY_DOCS = [REPO / "docs" / "studies" / "confirm-rescale-nfcorpus-results.md"]
MARKER = re.compile(r"<!--\s*backed-by:\s*(.+?)\s*-->")
#: README column headers that differ from the committed table's column names.
COLUMNS = {"R@1000 (grade ≥ 2)": "R@1000(rel=2)", "FLOPs": "flops", "query terms": "avg_q_dims",
           "document terms": "avg_d_dims", "query encoding p50": "latency_encode_p50_ms",
           "latency mean": "latency_mean_ms", "retrieval mean": "latency_search_mean_ms",
           "latency / same-engine BM25": "latency_ratio_bm25",
           "retrieval / same-engine BM25": "latency_search_ratio_bm25",
           "postings in the query's lists": "postings_per_query", "query encoder GFLOP": "query_encoder_gflop"}
NUMBER = re.compile(r"^\s*(?:\*\*)?(-?\d+(?:\.(\d+))?)(?:\*\*)?\s*(ms)?\s*([†↓])?\s*$")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def backed_tables(text: str) -> list[tuple[list[str], list[str], list[list[str]], int]]:
    """(results named, header, rows, line number) of every table after a backed-by comment."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = MARKER.search(line)
        if not m:
            continue
        j = i + 1
        header = _cells(lines[j])
        body = []
        j += 2  # the |---| line
        while j < len(lines) and lines[j].startswith("|"):
            body.append(_cells(lines[j]))
            j += 1
        out.append((m.group(1).split(), header, body, i + 1))
    return out


def _parse(cell: str) -> tuple[float, int, str] | None:
    """(value, decimals printed, significance marker) of a numeric cell; None for text."""
    m = NUMBER.match(cell)
    if not m:
        return None
    return float(m.group(1)), len(m.group(2) or ""), m.group(4) or ""


def _agrees(cell: tuple[float, int, str], value, marker) -> bool:
    number, decimals, sig = cell
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    marker = "" if marker is None or (isinstance(marker, float) and math.isnan(marker)) else str(marker)
    return (f"{float(value):.{decimals}f}" == f"{number:.{decimals}f}"
            and sig in ("", marker))  # a marker shown is a claim


def unbacked_rows(text: str, results: Path) -> list[str]:
    """README rows (with the line of their table) that no committed row of their named results equals."""
    problems = []
    for names, header, body, line in backed_tables(text):
        tables = []
        for name in names:
            path = results / name / "table.csv"
            if not path.is_file():
                problems.append(f"line {line}: {name} is not a committed result ({path} missing)")
                continue
            tables.append(pd.read_csv(path))
        columns = [COLUMNS.get(h, h) for h in header[1:]]
        for t in tables:
            missing = [c for c in columns if c not in t.columns]
            if missing:
                problems.append(f"line {line}: {', '.join(missing)} not in the committed tables {names}")
        committed = [r for t in tables for r in t.to_dict("records")]
        for row in body:
            cells = {c: _parse(v) for c, v in zip(columns, row[1:])}
            numbers = {c: v for c, v in cells.items() if v is not None}
            if not any(all(_agrees(v, r.get(c), r.get(f"{c}_sig")) for c, v in numbers.items()) for r in committed):
                problems.append(f"line {line}: row {row[0]!r} ({', '.join(row[1:])}) equals no row of "
                                f"{', '.join(names)}")
    return problems


@pytest.mark.parametrize("page, tables", [(README, 2), (RESULTS_DOC, 9), *((p, 2) for p in STUDY_DOCS)],
                         ids=["README", "docs-results", *(p.stem for p in STUDY_DOCS)])
def test_result_tables_are_backed_by_committed_results(page, tables):
    if page in STUDY_DOCS and not page.exists():
        pytest.skip(f"{page.name} is written with its study's results")
    text = page.read_text(encoding="utf-8")
    assert len(backed_tables(text)) >= tables, f"{page.name}'s result tables lost their backed-by comments"
    assert unbacked_rows(text, REPO / "results") == []


@pytest.mark.parametrize("change, expected", [
    ("| 0.6789 | 0.6457 | 0.9253 | 0.9767 |", "BM25 flat (Pyserini"),          # unchanged: backed
    ("| 0.6790 | 0.6457 | 0.9253 | 0.9767 |", "BM25 flat (Pyserini"),          # one number moved
    ("| 0.6789 † | 0.6457 | 0.9253 | 0.9767 |", "BM25 flat (Pyserini"),        # a significance claim not committed
])
def test_a_number_no_committed_result_backs_fails(change, expected):
    text = RESULTS_DOC.read_text(encoding="utf-8")
    original = "| 0.6789 | 0.6457 | 0.9253 | 0.9767 |"
    assert original in text
    problems = unbacked_rows(text.replace(original, change), REPO / "results")
    assert any(expected in p for p in problems) == (change != original)


def test_a_table_naming_no_committed_result_fails():
    text = "<!-- backed-by: benchmarks/no-such -->\n| x | nDCG@10 |\n|---|---|\n| a | 0.5 |\n"
    problems = unbacked_rows(text, REPO / "results")
    assert problems and "no-such is not a committed result" in problems[0]
