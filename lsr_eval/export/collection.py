"""The one check of a ``JsonVectorCollection`` folder and of a query file, whoever wrote them (docs/collections.md).

Every engine's build runs :func:`check_collection` before the engine sees a line
(:class:`lsr_eval.engines.registry.CheckedEngine`), and the engines read their documents through
:func:`iter_collection`; :func:`lsr_eval.export.queries.read_query_jsonl` reads query files through
:func:`parse_vector`. One rule, one owner: each line a JSON object with a string ``id`` and an object ``vector`` of
term -> weight, weights finite numbers >= 0 within what the engine stores (:class:`Weights`, declared per engine in
the registry), integers for an integer engine, terms non-empty without whitespace, ids non-empty without line
breaks and not repeated. A refusal is one :class:`~lsr_eval.errors.InputError` line naming the file, the line (and
the document or query id) and what to do.

The check streams: memory holds one line, plus 8 bytes per document for the repeated-id test (a 64-bit hash of each
id, sorted at the end; only when two hashes are equal is the collection read again to name both lines)."""

from __future__ import annotations

import json
import math
import os
import re
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from lsr_eval.errors import InputError
from lsr_eval.export.jsonl import open_collection_file

#: Where the format is written down; every refusal points there.
FORMAT_DOC = "docs/collections.md"
#: Suffixes of the files of a collection folder that are read (Anserini's ``JsonVectorCollection`` reads these).
SUFFIXES = (".jsonl", ".json", ".gz")
BOM = b"\xef\xbb\xbf"
_WHITESPACE = re.compile(r"\s")
_NUMBERS = frozenset({int, float})


@dataclass(frozen=True)
class Weights:
    """The weights an engine stores: integers (``integer``) or any finite numbers, from 0 to ``maximum``; ``why``
    says what the maximum is (for the message)."""

    integer: bool
    maximum: int | float
    why: str


#: Anserini reads a weight with ``JsonNode.asInt()`` and a query weight as a Java ``Integer``.
JAVA_INT = Weights(True, 2**31 - 1, "the largest Java int: Anserini reads weights as Java ints")
#: PISA's and BMP's postings hold unsigned 32-bit integers.
UINT32 = Weights(True, 2**32 - 1, "the largest unsigned 32-bit integer, what the engine stores")
#: Seismic stores float16 values.
FLOAT16_MAX = 65504
FLOAT16 = Weights(False, FLOAT16_MAX, "the largest float16, what Seismic stores")
#: What lsr-eval's own exports hold (the default for readers not tied to an engine).
EXPORTED = JAVA_INT


class VectorError(ValueError):
    """Why a line is refused (``id``: its document or query id when it has one), and what to do."""

    def __init__(self, reason: str, hint: str, id: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.hint, self.id = reason, hint, id

    def message(self, path: Path | str, line: int, noun: str = "document") -> str:
        """One line: ``file:line: [noun 'id': ]reason; hint (see docs/collections.md)``."""
        who = f"{noun} {self.id!r}: " if self.id is not None else ""
        return f"{path}:{line}: {who}{self.reason}; {self.hint} (the format: {FORMAT_DOC})"


def _loader() -> Callable[[bytes], Any]:
    try:
        import orjson
    except ImportError:
        return json.loads
    return orjson.loads


_loads = _loader()


def _kind(value: Any) -> str:
    return {str: "a string", bool: "a boolean", type(None): "null", list: "an array", dict: "an object",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _parse(line: bytes) -> Any:
    """The JSON value of one line. The standard library is asked again when the fast parser refuses one: it reads
    NaN, Infinity and integers beyond 64 bits, which are then named as such rather than as bad JSON."""
    if line.startswith(BOM):
        raise VectorError("the line starts with a UTF-8 byte-order mark", "save the file as UTF-8 without one")
    try:
        return _loads(line)
    except ValueError:
        pass
    try:
        return json.loads(line)
    except ValueError as e:
        raise VectorError(f"not valid JSON ({e})", "write one JSON object per line") from None


def parse_vector(line: bytes, weights: Weights, round_weights: bool = False
                 ) -> tuple[str, dict[str, int | float], int]:
    """``(id, {term: weight > 0}, weights rounded)`` of one line ``{"id": "...", "vector": {term: weight}}``;
    zero weights are dropped, integral floats of an integer engine become ints, and with ``round_weights`` its
    fractional ones are rounded half to even (counted). A line that breaks the rule raises :class:`VectorError`."""
    obj = _parse(line)
    if not isinstance(obj, dict):
        raise VectorError(f"not a JSON object but {_kind(obj)}", 'write {"id": "...", "vector": {...}} per line')
    docid = obj.get("id")
    if not isinstance(docid, str):
        if "id" not in obj:
            raise VectorError('the line has no "id"', 'give every line a string "id"')
        raise VectorError(f"its id {json.dumps(docid)} is {_kind(docid)}, not a string",
                          f"write it as a string: \"id\": {json.dumps(str(docid))}")
    if not docid or "\n" in docid or "\r" in docid:
        raise VectorError(f"its id {docid!r} is empty or holds a line break", "give it a one-line, non-empty id")
    vector = obj.get("vector")
    if not isinstance(vector, dict):
        if "vector" not in obj:
            raise VectorError('the line has no "vector"', 'give every line a "vector": {term: weight} (an empty '
                              "one, {}, for a document without terms)", docid)
        raise VectorError(f'its "vector" is {_kind(vector)}, not an object', "write {term: weight, ...}", docid)
    if not vector:
        return docid, vector, 0
    values = vector.values()
    types = set(map(type, values))
    if types <= _NUMBERS and not _WHITESPACE.search("".join(vector)) and "" not in vector:
        try:
            finite = float not in types or all(map(math.isfinite, values))
        except OverflowError:  # an integer beyond a float's range
            finite = False
        if finite and min(values) >= 0 and max(values) <= weights.maximum and \
                (float not in types or not weights.integer):
            return docid, ({t: w for t, w in vector.items() if w} if 0 in values else vector), 0
    return _checked(docid, vector, weights, round_weights)


def _checked(docid: str, vector: dict[str, Any], weights: Weights, round_weights: bool
             ) -> tuple[str, dict[str, int | float], int]:
    """:func:`parse_vector`'s weight by weight path: names the first weight or term that breaks the rule."""
    out: dict[str, int | float] = {}
    rounded = 0
    for term, w in vector.items():
        if not term or _WHITESPACE.search(term):
            raise VectorError(f"term {term!r} is empty or holds whitespace (Anserini's pretokenized analyzer would "
                              "split or drop it)", "write terms without spaces", docid)
        shown = f"weight of {term!r} is {json.dumps(w)}"
        if type(w) not in _NUMBERS:
            raise VectorError(f"{shown}, {_kind(w)}, not a number", "write weights as JSON numbers", docid)
        if isinstance(w, float) and not math.isfinite(w):
            raise VectorError(f"{shown}, not a finite number", "write finite weights >= 0", docid)
        if w < 0:
            raise VectorError(f"{shown}, negative", "weights must be >= 0 (drop the term, or shift the weights "
                              "before export)", docid)
        if w > weights.maximum:
            raise VectorError(f"{shown}, above {weights.maximum} ({weights.why})",
                              "quantise with a smaller scale (`lsr-eval export --scale`)", docid)
        if weights.integer and isinstance(w, float):
            if not w.is_integer():
                if not round_weights:
                    raise VectorError(f"{shown}, not an integer, and this engine indexes integers",
                                      "quantise the vectors to integers (`lsr-eval export --scale`, as lsr-eval's "
                                      "exports are), or pass --round-weights (round_weights=True) to round them "
                                      "half to even and count the weights changed", docid)
                rounded += 1
                w = round(w)
            w = int(w)
        if w:
            out[term] = w
    return docid, out, rounded


def collection_files(collection: Path) -> list[Path]:
    """The collection files of a folder (:data:`SUFFIXES`), in name order; an error when there are none."""
    collection = Path(collection)
    if not collection.is_dir():
        raise InputError(f"{collection} is not a folder of JsonVectorCollection files (the format: {FORMAT_DOC})")
    files = sorted(p for p in collection.iterdir() if p.is_file() and p.suffix in SUFFIXES)
    if not files:
        raise InputError(f"{collection} holds no .jsonl/.json/.gz collection files (the format: {FORMAT_DOC})")
    return files


def _lines(files: list[Path]) -> Iterator[tuple[Path, int, bytes]]:
    """``(file, line number, line)`` of every non-blank line."""
    for path in files:
        with open_collection_file(path, "rb") as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    yield path, number, line


def iter_collection(collection: Path, weights: Weights = EXPORTED, round_weights: bool = False
                    ) -> Iterator[tuple[str, dict[str, int | float]]]:
    """``(docid, {term: weight > 0})`` for every document of a collection folder, in file order, each line checked
    (:func:`parse_vector`); the first bad line is an :class:`InputError` naming the file and line. Repeated ids
    are :func:`check_collection`'s test (it needs the whole pass)."""
    for path, number, line in _lines(collection_files(collection)):
        try:
            docid, vector, _ = parse_vector(line, weights, round_weights)
        except VectorError as e:
            raise InputError(e.message(path, number)) from None
        yield docid, vector


@dataclass
class CollectionCheck:
    """What :func:`check_collection` read: documents (lines), those without a term, postings, files, weights
    rounded (``round_weights``), seconds."""

    collection: str
    documents: int = 0
    empty: int = 0
    postings: int = 0
    files: int = 0
    weights_rounded: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "documents_without_terms": self.empty, "postings": self.postings,
                "files": self.files, "weights_rounded": self.weights_rounded, "seconds": round(self.seconds, 3)}


def check_collection(collection: str | os.PathLike, weights: Weights = EXPORTED,
                     round_weights: bool = False) -> CollectionCheck:
    """Read every line of the collection folder once and refuse the first that breaks the format (or ``weights``),
    and a repeated id (naming both lines); returns the counts. An empty vector is a document without terms
    (counted, indexed); a folder without a document is refused."""
    start = time.perf_counter()
    files = collection_files(Path(collection))
    counts = CollectionCheck(str(collection), files=len(files))
    hashes = array("q")
    for path, number, line in _lines(files):
        try:
            docid, vector, rounded = parse_vector(line, weights, round_weights)
        except VectorError as e:
            raise InputError(e.message(path, number)) from None
        hashes.append(hash(docid))
        counts.documents += 1
        counts.postings += len(vector)
        counts.empty += not vector
        counts.weights_rounded += rounded
    if not counts.documents:
        raise InputError(f"{collection} holds no documents (the format: {FORMAT_DOC})")
    _refuse_repeated_ids(files, hashes)
    counts.seconds = time.perf_counter() - start
    return counts


def _refuse_repeated_ids(files: list[Path], hashes: array) -> None:
    """An error naming the first repeated id and both its lines, when two ids hash alike and are equal."""
    import numpy as np

    ordered = np.sort(np.frombuffer(hashes, dtype=np.int64))
    same = ordered[1:][ordered[1:] == ordered[:-1]]
    if not same.size:
        return
    suspects, first = set(same.tolist()), {}
    for path, number, line in _lines(files):
        docid = _parse(line)["id"]
        if hash(docid) in suspects:
            if docid in first:
                where = first[docid]
                raise InputError(f"{path}:{number}: document {docid!r} repeats the id of {where[0]}:{where[1]}; "
                                 "give every document its own id: an engine keeps only one of them (the format: "
                                 f"{FORMAT_DOC})")
            first[docid] = (path, number)
