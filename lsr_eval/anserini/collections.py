"""Anserini collections: ``JsonCollection`` files written from a document stream (the input of a ``bm25-flat`` or
``bm25-multifield`` index), and the documents of a collection that Anserini will skip as empty."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from lsr_eval.data.types import Document
from lsr_eval.errors import ConfigError
from lsr_eval.export.jsonl import open_collection_file
from lsr_eval.settings import Setting, check

#: Documents per ``docs-NNNNN.jsonl`` file; IndexCollection gives one thread per file.
SHARD_SIZE = 500_000
#: Field Anserini indexes a document's contents into (the only one of a flat index).
CONTENTS = "contents"
#: Lucene field of each document field in a ``bm25-multifield`` index, as Anserini's ``BeirMultifieldCollection``
#: (Pyserini's BEIR "multifield" indexes): the text is the main ``contents`` field, the title a field of its own.
MULTIFIELD: dict[str, str] = {"title": "title", "text": CONTENTS}


#: The document fields a multifield BM25 searches (:data:`MULTIFIELD`).
FIELDS = Setting(help="document fields searched separately (title, text)")


def check_fields(fields: Iterable[str] | None) -> tuple[str, ...] | None:
    """Document fields to search separately, in :data:`MULTIFIELD` order (``None``: the flat contents); a
    ConfigError for an empty list, an unknown or a repeated field."""
    if fields is None:
        return None
    allowed = ", ".join(MULTIFIELD)
    if isinstance(fields, str):
        fields = [fields]
    given = list(check("fields", fields, Iterable, FIELDS))
    if not given:
        raise ConfigError(f"fields: name at least one of {allowed} (or leave it out for the flat contents)")
    for f in given:
        if f not in MULTIFIELD:
            raise ConfigError(f"fields: unknown field {f!r}; allowed: {allowed}")
        if given.count(f) > 1:
            raise ConfigError(f"fields: {f!r} is named twice")
    return tuple(f for f in MULTIFIELD if f in given)


def lucene_fields(fields: Iterable[str] | None) -> tuple[str, ...]:
    """The Lucene fields a BM25 search of these document fields reads (``None``: the flat ``contents``)."""
    checked = check_fields(fields)
    return tuple(MULTIFIELD[f] for f in checked) if checked else (CONTENTS,)


@dataclass
class CollectionCounts:
    documents: int = 0
    files: int = 0


def write_json_collection(docs: Iterable[Document], folder: str | os.PathLike,
                          shard_size: int = SHARD_SIZE, multifield: bool = False) -> CollectionCounts:
    """Write ``{"id", "contents"}`` lines (contents = title + " " + text), or with ``multifield`` ``{"id",
    "contents", "title"}`` lines (contents = text; :data:`MULTIFIELD`), blank documents included (Anserini skips
    them; :func:`lsr_eval.anserini.indexer.build_index` appends them)."""
    return write_lines(({"id": doc.id, "contents": doc.text, "title": doc.title} if multifield
                        else {"id": doc.id, "contents": doc.contents} for doc in docs), folder, shard_size)


def write_lines(objs: Iterable[dict[str, Any]], folder: str | os.PathLike,
                shard_size: int = SHARD_SIZE) -> CollectionCounts:
    """Write JSON objects as ``docs-NNNNN.jsonl`` files of ``shard_size`` lines each, one object in memory."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    counts = CollectionCounts()
    f = None
    try:
        for obj in objs:
            if counts.documents % shard_size == 0:
                if f:
                    f.close()
                f = open(out / f"docs-{counts.files:05d}.jsonl", "w", encoding="utf-8")
                counts.files += 1
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")
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


def empty_documents(folder: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """The documents (JSON objects) of a ``JsonCollection`` or ``JsonVectorCollection`` folder that Anserini skips
    as empty."""
    for path in sorted(Path(folder).iterdir()):
        if not path.is_file():
            continue
        with open_collection_file(path) as f:
            for line in f:
                if line.strip():
                    obj = json.loads(line)
                    if _is_empty(obj):
                        yield obj
