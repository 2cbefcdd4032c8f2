"""Anserini collections: ``JsonCollection`` files written from a document stream (the input of a ``bm25-flat``
index), and the documents of a collection that Anserini will skip as empty."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from lsr_eval.data.types import Document
from lsr_eval.export.jsonl import open_collection_file

#: Documents per ``docs-NNNNN.jsonl`` file; IndexCollection gives one thread per file.
SHARD_SIZE = 500_000


@dataclass
class CollectionCounts:
    documents: int = 0
    files: int = 0


def write_json_collection(docs: Iterable[Document], folder: str | os.PathLike,
                          shard_size: int = SHARD_SIZE) -> CollectionCounts:
    """Write ``{"id", "contents"}`` lines (contents = title + " " + text), blank documents included (Anserini skips
    them; :func:`lsr_eval.anserini.indexer.build_index` appends them)."""
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
            f.write(json.dumps({"id": doc.id, "contents": doc.contents}, ensure_ascii=False) + "\n")
            counts.documents += 1
    finally:
        if f:
            f.close()
    return counts


def _is_empty(obj: dict) -> bool:
    """What Anserini's ``DefaultLuceneDocumentGenerator`` rejects: blank contents, and for ``JsonVectorCollection``
    (whose contents are the vector's terms repeated by weight) a vector without a positive weight."""
    if "vector" in obj:
        vector = obj["vector"] or {}
        return not any(float(w) >= 1 for w in vector.values())
    return not str(obj.get("contents", "")).strip()


def empty_document_ids(folder: str | os.PathLike) -> Iterator[str]:
    """Ids of the documents of a ``JsonCollection`` or ``JsonVectorCollection`` folder that Anserini skips as empty."""
    for path in sorted(Path(folder).iterdir()):
        if not path.is_file():
            continue
        with open_collection_file(path) as f:
            for line in f:
                if line.strip():
                    obj = json.loads(line)
                    if _is_empty(obj):
                        yield str(obj["id"])
