"""Anserini ``JsonCollection`` files written from a document stream (the input of a ``bm25-flat`` index)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from lsr_eval.data.types import Document

#: Documents per ``docs-NNNNN.jsonl`` file; IndexCollection gives one thread per file.
SHARD_SIZE = 500_000


@dataclass
class CollectionCounts:
    documents: int = 0
    files: int = 0
    empty_ids: list[str] = field(default_factory=list)


def write_json_collection(docs: Iterable[Document], folder: str | os.PathLike,
                          shard_size: int = SHARD_SIZE) -> CollectionCounts:
    """Write ``{"id", "contents"}`` lines (contents = title + " " + text); blank documents are listed in
    ``empty_ids`` (Anserini skips them; :func:`lsr_eval.anserini.indexer.build_index` appends them)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    counts = CollectionCounts()
    f = None
    try:
        for doc in docs:
            if counts.documents % shard_size == 0:
                if f:
                    f.close()
                f = open(out / f"docs-{counts.files:05d}.jsonl", "w", encoding="utf-8")
                counts.files += 1
            contents = doc.contents
            if not contents.strip():
                counts.empty_ids.append(doc.id)
            f.write(json.dumps({"id": doc.id, "contents": contents}, ensure_ascii=False) + "\n")
            counts.documents += 1
    finally:
        if f:
            f.close()
    return counts
