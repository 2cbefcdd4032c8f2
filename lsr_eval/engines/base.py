"""The engine seam: what every retrieval engine offers, and what all of them share.

Ranking contract: hits best first, ties by docid ascending, the cut at rank k made in that order; the exact
engines also report Anserini's tie-adjusted scores, so that their runs are bit-identical.

Design notes: docs/design.md."""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Protocol

from lsr_eval.data.types import Run
from lsr_eval.errors import InputError
from lsr_eval.manifest import read_json_object
from lsr_eval.search.counts import SearchCounts

#: File written into every index folder lsr-eval builds: ``{"engine": name, ...}``.
MARKER = "lsr_eval_engine.json"

QueryWeights = Mapping[str, int]


@dataclass
class BuildCounts:
    """Documents read from the collection and documents in the built index (they must be equal)."""

    engine: str
    documents_read: int
    documents_indexed: int
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "documents_read": self.documents_read,
                "documents_indexed": self.documents_indexed, "seconds": round(self.seconds, 3), **self.details}


class Searcher(Protocol):
    """An open index answering integer-weighted queries."""

    engine: str

    def search(self, weights: QueryWeights, k: int = 1000, qid: str = "query") -> list[tuple[str, float]]:
        """One query's top ``k`` hits, best first (ties by docid; scores per the module's ranking contract)."""

    def batch_search(self, queries: Mapping[str, QueryWeights], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Every query's top ``k`` into an in-memory run; memory bounded by a chunk of queries, not the set."""

    def describe(self) -> dict[str, Any]:
        """Engine, version and search knobs, for the manifest."""

    def close(self) -> None: ...

    def __enter__(self) -> Searcher: ...

    def __exit__(self, *exc) -> None: ...


class Engine(Protocol):
    """A retrieval engine: builds an index from a ``JsonVectorCollection`` folder and opens searchers over it.

    Obtained through :func:`lsr_eval.engines.registry.get_engine`, whose wrapper checks the whole collection before
    ``build`` reads a line (docs/collections.md), refuses an index folder that is not empty and removes what a failed
    build wrote: an engine reads its documents with :func:`lsr_eval.export.collection.iter_collection` and checks
    neither again.

    Build settings are the constructor's keyword arguments, search knobs ``open``'s; an engine that takes
    ``**options`` instead names them in the class attributes ``build_options`` and ``search_options`` (read by
    :func:`lsr_eval.engines.registry.split_options`)."""

    name: str

    def build(self, collection: Path, index: Path, threads: int = 2) -> BuildCounts:
        """Index every document of ``collection`` into the new folder ``index`` (marker written last)."""

    def open(self, index: Path, **knobs: Any) -> Searcher:
        """A searcher over an index this engine built (another engine's index is refused)."""

    def check_search(self, **knobs: Any) -> dict[str, Any]:
        """The search knobs ``open`` would take, validated without an index (a config is checked before any run);
        a bad value is a :class:`~lsr_eval.errors.ConfigError` naming the allowed ones."""

    def describe(self) -> dict[str, Any]:
        """Engine name, package and version, build settings, for the manifest."""


def write_marker(index: Path, engine: str, /, **info: Any) -> None:
    """Record which engine built ``index`` (and with what: ``info``, e.g. the engine's ``describe()``), written
    after the index is complete."""
    record = {**info, "engine": engine}
    (Path(index) / MARKER).write_text(json.dumps(record, indent=2, default=str) + "\n")


def read_marker(index: Path) -> dict[str, Any] | None:
    """The engine marker of ``index`` (:func:`write_marker`), None when it has none."""
    return read_json_object(Path(index) / MARKER)


def check_index_engine(index: Path, engine: str, detected: str | None = None) -> dict[str, Any]:
    """The marker of ``index`` when ``engine`` built it; a clear error naming both engines otherwise.

    ``detected`` is the engine an unmarked folder looks like (a Lucene index built before markers existed)."""
    index = Path(index)
    if not index.is_dir():
        raise InputError(f"index {index} does not exist (build it with `lsr-eval index --engine {engine}`)")
    marker = read_marker(index)
    built_by = marker["engine"] if marker else detected
    if built_by is None:
        raise InputError(f"{index} is not an index lsr-eval built (no {MARKER}); build it with "
                         f"`lsr-eval index --engine {engine}`")
    if built_by != engine:
        raise InputError(f"index {index} was built by engine {built_by!r}; it cannot be searched with engine "
                         f"{engine!r} (use --engine {built_by}, or build a {engine} index)")
    return marker or {"engine": built_by}


@contextlib.contextmanager
def rust_panics(engine: str, what: str, error: type[Exception] = RuntimeError) -> Iterator[None]:
    """A panic inside an engine's Rust library (``pyo3_runtime.PanicException``, a BaseException) as one ``error``
    naming the engine and what it was doing."""
    try:
        yield
    except BaseException as e:
        if type(e).__name__ == "PanicException":
            raise error(f"{engine} failed while {what}: {e}") from e
        raise


class ClosingSearcher:
    """``with`` support for a searcher with a ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def query_weight(qid: str, term: str, w: Any) -> float:
    """A query term's weight as an engine takes it: a finite number (else one line naming the query and term). A
    plain test, not a declaration: it runs for every term of every query."""
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
        raise InputError(f"query {qid}: weight of {term!r} is {w!r}, not a number")
    return w
