"""TREC run files: ``qid Q0 docid rank score tag``, one retrieved document a line.

The ranking of a query is trec_eval's: score descending, ties broken by docid descending (``strcmp`` order, which is
Python's ``str`` order for UTF-8 text); see ``comp_sim_docno`` in trec_eval's ``form_res_rels.c``. The rank column
is ignored when reading, as trec_eval ignores it.
"""

from __future__ import annotations

import gzip
import lzma
import os
import zlib
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from lsr_eval.data.types import Run
from lsr_eval.errors import InputError, on_disk_full
from lsr_eval.export.jsonl import open_compressed
from lsr_eval.settings import Setting, check

#: Number of whitespace-separated fields on a run line.
RUN_FIELDS = 6
#: Bytes of a run line besides its query id, document id and tag: `` Q0 ``, the rank, a float's ``repr`` (up to 24
#: characters), spaces and the line end (an upper estimate).
RUN_LINE_OVERHEAD = 34


#: The documents of each query a run keeps (None: all): a written run's cut, a fused run's.
DEPTH = Setting(help="documents kept per query (null: all)", ge=1)


def trec_order(docids: Sequence[str], scores: np.ndarray) -> np.ndarray:
    """Indices putting ``(docids[i], scores[i])`` in trec_eval order: score descending, then docid descending.

    Scores must not be NaN. A numpy sort on the scores, then each run of equal scores re-sorted by docid (ties are
    usually few, so the Python sort touches only them).
    """
    order = np.argsort(-scores)
    ranked = scores[order]
    tied = np.concatenate(([False], ranked[1:] == ranked[:-1], [False])).astype(np.int8)
    if tied.any():
        edges = np.diff(tied)
        for start, end in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):  # order[start:end+1] tie
            group = order[start:end + 1]
            order[start:end + 1] = sorted(group.tolist(), key=docids.__getitem__, reverse=True)
    return order


def hits_arrays(qid: str, hits: Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    """Docids and float64 scores of a query's hits; NaN is an error naming the query and document."""
    docids = list(hits)
    scores = np.fromiter(hits.values(), dtype=np.float64, count=len(docids))
    nan = np.isnan(scores)
    if nan.any():
        raise InputError(f"query {qid!r}, document {docids[int(np.flatnonzero(nan)[0])]!r}: score is NaN")
    return docids, scores


def trec_ranking(hits: Mapping[str, float], qid: str = "?") -> list[tuple[str, float]]:
    """``(docid, score)`` pairs of one query in trec_eval order (``qid`` only names the query in errors)."""
    docids, scores = hits_arrays(qid, hits)
    return [(docids[i], float(scores[i])) for i in trec_order(docids, scores).tolist()]


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run as ``{qid: {docid: score}}`` (queries in file order); ``.gz`` and ``.xz`` files are
    decompressed on the fly.

    Blank and ``#`` lines are skipped (as trec_eval). Errors name the file and line for: a line without exactly six
    fields, a score that is not a number or is NaN, and a (qid, docid) pair seen before. A file without a result
    line is refused (trec_eval would score it 0 on every query, hiding a retrieval that failed).
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    run: Run = {}
    lineno = 0
    try:
        with open_compressed(p) as f:
            for lineno, line in enumerate(f, start=1):  # hot loop (millions of lines): kept lean
                fields = line.split()
                if len(fields) != RUN_FIELDS or fields[0][0] == "#":
                    if not fields or fields[0][0] == "#":
                        continue
                    raise InputError(f"{p}:{lineno}: expected {RUN_FIELDS} fields 'qid Q0 docid rank score tag', "
                                     f"got {len(fields)}")
                qid, _, docid, _, score_text, _ = fields
                try:
                    score = float(score_text)
                except ValueError:
                    raise InputError(f"{p}:{lineno}: score {score_text!r} is not a number") from None
                if score != score:
                    raise InputError(f"{p}:{lineno}: score is NaN")
                hits = run.get(qid)
                if hits is None:
                    hits = run[qid] = {}
                n = len(hits)
                hits[docid] = score
                if len(hits) == n:
                    raise InputError(f"{p}:{lineno}: duplicate document {docid!r} for query {qid!r}")
    except UnicodeDecodeError as e:
        raise InputError(f"{p}:{lineno + 1}: not UTF-8 text ({e.reason})") from None
    except (EOFError, lzma.LZMAError, gzip.BadGzipFile, zlib.error) as e:
        raise InputError(f"{p}: damaged {p.suffix} file after line {lineno} ({e}); fetch or write it again") from None
    if not run:
        found = "empty file" if lineno == 0 else f"{lineno} blank or # lines"
        raise InputError(f"{p}: no result line ({found}): a run without results is refused (it would score 0 on "
                         "every query); rerun the retrieval that wrote it, or leave it out")
    return run


def _check_tokens(values: list[str], what: str) -> None:
    """Each value must be one non-empty token without whitespace (one C-level split for the whole list)."""
    if " ".join(values).split() != values:
        bad = next(v for v in values if v.split() != [v])
        raise InputError(f"{what} {bad!r} is empty or contains whitespace: it cannot be written to a TREC run")


def write_run(run: Run, path: str | os.PathLike, tag: str = "lsr-eval", depth: int | None = None) -> int:
    """Write ``run`` as a TREC run file and return the number of lines written (``.gz`` or ``.xz`` compressed by
    the name's suffix, with the same bytes for the same run).

    Queries keep their order in ``run``; within a query, lines are in trec_eval order (score descending, docid
    descending) with ranks from 1, cut to the first ``depth`` documents when given. Scores are written with ``repr``
    so that reading the file back gives the same floats (and hence the same ranking). Queries without documents
    write no line. The file is written under a temporary name and renamed, so an error leaves no partial run; a full
    disk is one :class:`~lsr_eval.errors.DiskFullError` naming the folder and the run's estimated size.
    """
    _check_tokens([tag], "run tag")
    check("depth", depth, int | None, DEPTH)
    _check_tokens(list(run), "query id")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with on_disk_full(path.parent, f"writing the run {path.name}", lambda: _run_bytes(run, tag, depth)):
        try:
            with open_compressed(tmp, "wt", suffix=path.suffix) as f:
                for qid, hits in run.items():
                    docids, scores = hits_arrays(qid, hits)
                    _check_tokens(docids, f"query {qid!r}: document id")
                    order = trec_order(docids, scores)[:depth].tolist()
                    f.writelines(f"{qid} Q0 {docids[i]} {rank} {s!r} {tag}\n"
                                 for rank, (i, s) in enumerate(zip(order, scores[order].tolist()), start=1))
                    n += len(order)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return n


def _run_bytes(run: Run, tag: str, depth: int | None) -> int:
    """About the bytes of ``run`` as a TREC file (for the message of a full disk)."""
    total = 0
    for qid, hits in run.items():
        docids = list(hits)[:depth]
        total += len(docids) * (len(qid) + len(tag) + RUN_LINE_OVERHEAD) + sum(map(len, docids))
    return total
