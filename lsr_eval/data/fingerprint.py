"""Fingerprints of the data a result is computed on: the corpus, the queries and the qrels, each as a count and a
sha256, so that ``lsr-eval reproduce`` can refuse to rerun a committed result on other data (a different corpus
with the same name would otherwise give a silent "differs").

The queries and qrels are hashed as loaded (canonical text of the records, in a fixed order), so the same judgments
in TREC or BEIR layout, with CRLF or LF line ends, have one fingerprint. A corpus file is hashed as bytes (one pass
at disk speed, cached per process by path, size and time); an ``ir_datasets`` corpus is named by its ``docs_id``
(hashing MS MARCO's download on every run would cost more than the run).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Iterable, Mapping

from lsr_eval.data.trec_files import file_sha256
from lsr_eval.data.types import Qrels, Query


def _digest(lines: Iterable[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8") + b"\n")
    return h.hexdigest()


def queries_fingerprint(queries: list[Query]) -> dict[str, Any]:
    """Count and sha256 of ``id<TAB>text`` lines, in the dataset's order (the order runs are searched in)."""
    return {"count": len(queries), "sha256": _digest(f"{q.id}\t{q.text}" for q in queries)}


def qrels_fingerprint(qrels: Qrels) -> dict[str, Any]:
    """Judged queries, judgments and sha256 of ``qid<TAB>docid<TAB>grade`` lines sorted by query then document."""
    lines = [f"{q}\t{d}\t{g}" for q in sorted(qrels) for d, g in sorted(qrels[q].items())]
    return {"queries": len(qrels), "judgments": len(lines), "sha256": _digest(lines)}


@functools.lru_cache(maxsize=16)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:  # size and time: a changed file is hashed again
    return file_sha256(path)


def corpus_fingerprint(key: Mapping[str, Any]) -> dict[str, Any]:
    """A dataset's ``corpus_key()`` without its file time (a copy of the same bytes is the same corpus), with the
    sha256 of the file when the corpus is one."""
    out = {k: v for k, v in key.items() if k != "mtime"}
    if "path" in key and Path(key["path"]).is_file():
        st = Path(key["path"]).stat()
        out["sha256"] = _file_sha256(str(key["path"]), st.st_size, st.st_mtime_ns)
    return out
