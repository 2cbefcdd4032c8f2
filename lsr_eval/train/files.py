"""Readers for the training-side files: hard negatives and teacher scores. Errors name the file and line.

* Hard negatives: a TREC run (``qid Q0 docid rank score tag``; ranked as trec_eval does: score descending, ties
  by docid descending) or lines ``qid<TAB>docid,docid,...`` (in the given order). The format is told from the
  first content line. Blank and ``#`` lines are skipped.
* Teacher scores: lines ``qid docid score`` (whitespace separated), e.g. cross-encoder scores of candidates.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from lsr_eval.data.trec_files import iter_text_lines
from lsr_eval.errors import InputError
from lsr_eval.runs.trec import RUN_FIELDS, read_run, trec_ranking

TeacherScores = dict[str, dict[str, float]]


def _content_lines(path: str | os.PathLike):
    for lineno, line in iter_text_lines(path):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield lineno, line


def hard_negatives_format(path: str | os.PathLike) -> str:
    """``trec`` or ``list`` (``qid<TAB>docid,...``), from the first content line."""
    for lineno, line in _content_lines(path):
        if len(line.split()) == RUN_FIELDS:
            return "trec"
        if len(line.split("\t")) == 2:
            return "list"
        raise InputError(f"{path}:{lineno}: neither a TREC run line ('qid Q0 docid rank score tag') nor "
                         f"'qid<TAB>docid,docid,...'")
    raise InputError(f"{path}: no hard negatives (the file is empty)")


def read_hard_negatives(path: str | os.PathLike, top_k: int | None = None) -> dict[str, list[str]]:
    """``{qid: [docid, ...]}`` best first, at most ``top_k`` per query (all when None)."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file")
    if hard_negatives_format(path) == "trec":
        return {qid: [d for d, _ in trec_ranking(hits, qid)[:top_k]] for qid, hits in read_run(path).items()}
    out: dict[str, list[str]] = {}
    for lineno, line in _content_lines(path):
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip():
            raise InputError(f"{path}:{lineno}: expected 'qid<TAB>docid,docid,...', got {len(fields)} "
                             f"tab-separated fields")
        qid = fields[0].strip()
        if qid in out:
            raise InputError(f"{path}:{lineno}: query {qid!r} listed twice")
        docids = [d.strip() for d in fields[1].split(",") if d.strip()]
        if len(set(docids)) != len(docids):
            dup = next(d for d in docids if docids.count(d) > 1)
            raise InputError(f"{path}:{lineno}: document {dup!r} listed twice for query {qid!r}")
        out[qid] = docids[:top_k]
    return out


def read_teacher_scores(path: str | os.PathLike) -> TeacherScores:
    """``{qid: {docid: score}}`` from lines ``qid docid score``; a repeated pair or a non-finite score is an
    error naming the line."""
    out: TeacherScores = {}
    for lineno, line in _content_lines(path):
        fields = line.split()
        if len(fields) != 3:
            raise InputError(f"{path}:{lineno}: expected 'qid docid score', got {len(fields)} fields")
        qid, docid, text = fields
        try:
            score = float(text)
        except ValueError:
            raise InputError(f"{path}:{lineno}: score {text!r} is not a number") from None
        if not math.isfinite(score):
            raise InputError(f"{path}:{lineno}: score {text!r} is not finite")
        scores = out.setdefault(qid, {})
        if docid in scores:
            raise InputError(f"{path}:{lineno}: teacher score for ({qid!r}, {docid!r}) given twice")
        scores[docid] = score
    if not out:
        raise InputError(f"{path}: no teacher scores (the file is empty)")
    return out
