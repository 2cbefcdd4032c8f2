"""Readers for the plain-text relevance files: qrels (TREC or BEIR TSV) and topics TSV (``qid<TAB>text``).

Every error names the file and the line at fault. Blank lines and ``#`` comment lines are skipped, as trec_eval does.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterator

from lsr_eval.data.types import Qrels, Query
from lsr_eval.errors import InputError

#: Header line of a BEIR ``qrels/*.tsv`` file (tab separated).
BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes (read in 1 MiB blocks): names a topics, qrels or run file in a manifest."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def iter_text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, line end removed) for every line of a UTF-8 text file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    lineno = 0
    try:
        with p.open(encoding="utf-8", newline="") as f:
            for lineno, line in enumerate(f, start=1):
                yield lineno, line.rstrip("\r\n")
    except UnicodeDecodeError as e:
        raise InputError(f"{p}:{lineno + 1}: not UTF-8 text ({e.reason})") from None


def _is_skipped(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _grade(value: str, where: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError(f"{where}: relevance grade {value!r} is not an integer") from None


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read qrels as ``{qid: {docid: grade}}``, in file order.

    Two formats, told apart by the first content line: a BEIR TSV file starts with the header
    ``query-id<TAB>corpus-id<TAB>score`` and has three tab-separated fields a line; otherwise the file is TREC qrels,
    ``qid iter docid grade`` separated by whitespace (``iter`` is ignored). Grades are integers; zero and negative
    grades are kept (trec_eval treats them as non-relevant judged documents). A repeated (qid, docid) pair is an error,
    and so is a file without a judgment (every run would score 0 against it).
    """
    qrels: Qrels = {}
    beir: bool | None = None
    n = 0
    for lineno, line in iter_text_lines(path):
        if _is_skipped(line):
            continue
        where = f"{path}:{lineno}"
        if beir is None:
            beir = tuple(f.strip() for f in line.split("\t")) == BEIR_QRELS_HEADER
            if beir:
                continue
        if beir:
            fields = [f.strip() for f in line.split("\t")]
            if len(fields) != 3 or not all(fields):
                raise InputError(f"{where}: expected 3 tab-separated fields (query-id, corpus-id, score), "
                                 f"got {line!r}")
            qid, docid, grade = fields
        else:
            fields = line.split()
            if len(fields) != 4:
                hint = " (a BEIR TSV file needs the header 'query-id<TAB>corpus-id<TAB>score')" \
                    if len(fields) == 3 else ""
                raise InputError(f"{where}: expected 4 fields 'qid iter docid grade', got {len(fields)}{hint}")
            qid, _, docid, grade = fields
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise InputError(f"{where}: duplicate judgment for query {qid!r}, document {docid!r}")
        judged[docid] = _grade(grade, where)
        n += 1
    if n == 0:
        raise InputError(f"{path}: no judgments (the file is empty, or holds only a header, blank or # lines): "
                         "nothing to evaluate against; give a qrels file with 'qid iter docid grade' lines")
    return qrels


def read_topics_tsv(path: str | os.PathLike) -> list[Query]:
    """Read topics from ``qid<TAB>text`` lines (Anserini's TSV topics), in file order.

    The text is everything after the first tab. Errors on a line without a tab, an empty id or text, or an id seen
    before (naming both lines).
    """
    first_line: dict[str, int] = {}
    queries: list[Query] = []
    for lineno, line in iter_text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        qid, tab, text = line.partition("\t")
        qid = qid.strip()
        if not tab:
            raise InputError(f"{where}: expected 'qid<TAB>text', found no tab")
        if not qid:
            raise InputError(f"{where}: empty query id")
        if not text.strip():
            raise InputError(f"{where}: empty text for query {qid!r}")
        if qid in first_line:
            raise InputError(f"{where}: duplicate query id {qid!r} (first at line {first_line[qid]})")
        first_line[qid] = lineno
        queries.append(Query(qid, text))
    if not queries:
        raise InputError(f"{path}: no topics")
    return queries
