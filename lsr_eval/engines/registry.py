"""Engines by name, imported only when asked for (PISA, Seismic and BMP are optional packages)."""

from __future__ import annotations

import importlib
import inspect
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.engines.base import BuildCounts, Engine
from lsr_eval.errors import ConfigError, LsrEvalError
from lsr_eval.export.collection import FLOAT16, JAVA_INT, UINT32, Weights, check_collection, iter_collection


@dataclass(frozen=True)
class EngineSpec:
    module: str
    cls: str
    #: the pip requirement that provides the engine (None: a core dependency)
    package: str | None
    summary: str
    #: the weights it stores, of documents and queries (:func:`lsr_eval.export.collection.check_collection`)
    weights: Weights
    #: exact top-k, returned as the reference engine's run bit for bit (lsr_eval.search.ties); else the benchmark
    #: measures its recall of an exact engine's top-k
    exact: bool = True


ENGINES: dict[str, EngineSpec] = {
    "anserini": EngineSpec("lsr_eval.engines.anserini", "AnseriniEngine", None,
                           "Lucene impact index through Anserini (the reference; exact)", JAVA_INT),
    "pisa": EngineSpec("lsr_eval.engines.pisa", "PisaEngine", "pyterrier-pisa==0.4.9",
                       "PISA quantized index (or BM25 over term frequencies), MaxScore by default (exact)", UINT32),
    "seismic": EngineSpec("lsr_eval.engines.seismic", "SeismicEngine", "pyseismic-lsr==0.5.4",
                          "Seismic blocked inverted index (approximate by design)", FLOAT16, exact=False),
    # exact at its safe setting (alpha = beta = 1), approximate below: the recall of the exact top-k is reported
    # for every setting (1.0 at the safe one)
    "bmp": EngineSpec("lsr_eval.engines.bmp", "BmpEngine", "bmp==0.2.8",
                      "BMP block-max pruning (exact at alpha = beta = 1, approximate below)", UINT32,
                      exact=False),
    "qdrant": EngineSpec("lsr_eval.engines.qdrant", "QdrantEngine", "qdrant-client==1.20.0",
                         "Qdrant sparse vectors, embedded (local mode) or a server by url= (exact)",
                         Weights(True, 2**24 - 1, "the largest integer below 2^24: Qdrant stores and scores float32")),
}
DEFAULT_ENGINE = "anserini"
#: the exact engine an approximate engine's runs are compared with
REFERENCE_ENGINE = "anserini"


def check_engine(name: str) -> str:
    """``name`` when it is a known engine; otherwise an error listing the known ones."""
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; known engines: {', '.join(ENGINES)}")
    return name


def get_engine(name: str = DEFAULT_ENGINE, **settings: Any) -> CheckedEngine:
    """The engine called ``name``, built with its ``settings`` (validated by the engine), behind the collection
    check (:class:`CheckedEngine`)."""
    spec = ENGINES[check_engine(name)]
    module = importlib.import_module(spec.module)
    return CheckedEngine(getattr(module, spec.cls)(**settings), spec.weights)


class CheckedEngine:
    """An engine as :func:`get_engine` hands it out: the same engine (every attribute is the engine's), whose
    ``build`` first checks the whole collection against the weights the registry declares for it
    (:func:`~lsr_eval.export.collection.check_collection`: a bad line is refused before the engine sees one and
    before the index folder is made), then checks that the engine indexed every document checked, and removes what
    a failed build left. An engine added to :data:`ENGINES` gets all of it without code of its own."""

    def __init__(self, engine: Engine, weights: Weights) -> None:
        self.engine, self.weights = engine, weights

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def build(self, collection: Path, index: Path, threads: int = 2, round_weights: bool = False) -> BuildCounts:
        """Check ``collection`` and index it into the new folder ``index`` (:meth:`Engine.build`); with
        ``round_weights``, fractional weights of an integer engine are rounded half to even into a temporary copy
        of the collection that the engine indexes (their number: ``collection.weights_rounded`` in the counts)."""
        collection, index = Path(collection), Path(index)
        if index.exists() and (not index.is_dir() or any(index.iterdir())):  # before a pass over the collection
            raise ConfigError(f"index folder {index} already exists and is not empty; remove it or choose another")
        checked = check_collection(collection, self.weights, round_weights)
        created = not index.exists()
        source = None
        try:
            if checked.weights_rounded:
                index.parent.mkdir(parents=True, exist_ok=True)
                source = Path(tempfile.mkdtemp(prefix=f".{index.name}-rounded-", dir=index.parent))
                _write_collection(iter_collection(collection, self.weights, True), source)
            counts = self.engine.build(source or collection, index, threads=threads)
            if not counts.documents_read == counts.documents_indexed == checked.documents:
                raise LsrEvalError(f"{collection} holds {checked.documents} documents, but {counts.engine} read "
                                   f"{counts.documents_read} and indexed {counts.documents_indexed}")
        except BaseException:
            _discard(index, created)
            raise
        finally:
            if source is not None:
                shutil.rmtree(source, ignore_errors=True)
        counts.details["collection"] = checked.to_dict()
        return counts


def _write_collection(docs: Any, folder: Path) -> None:
    """``(docid, vector)`` pairs as one ``JsonVectorCollection`` file in ``folder``."""
    from lsr_eval.export.jsonl import json_dumper

    _, dumps = json_dumper()
    with open(folder / "docs-00000.jsonl", "wb") as f:
        for docid, vector in docs:
            f.write(dumps({"id": docid, "vector": vector}) + b"\n")


def _discard(index: Path, created: bool) -> None:
    """Remove what a failed build left in the folder ``index`` (empty before): the folder when the build made it,
    else its contents."""
    if created:
        shutil.rmtree(index, ignore_errors=True)
    elif index.is_dir():
        for p in index.iterdir():
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def require(module: str, engine: str) -> Any:
    """Import an engine's optional package, or say which pip package provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(f"engine {engine!r} needs the package {ENGINES[engine].package} "
                          "(`pip install 'lsr-eval[engines]'`, "
                          f"or `pip install {ENGINES[engine].package}`): {e}") from e


def split_options(name: str, options: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` of engine ``name`` split into build settings (its constructor's keywords) and search knobs
    (its ``open`` keywords), each then validated by the engine; an option neither takes is an error listing both
    sets."""
    spec = ENGINES[check_engine(name)]
    cls = getattr(importlib.import_module(spec.module), spec.cls)

    def keywords(fn) -> list[str]:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "index")]

    # an engine taking **options names them in ``build_options``/``search_options``; a name in both is a build
    # setting (the default its searchers start from)
    build_keys = list(getattr(cls, "build_options", None) or keywords(cls.__init__))
    search_keys = list(getattr(cls, "search_options", None) or keywords(cls.open))
    build, search = {}, {}
    for key, value in (options or {}).items():
        if key in build_keys:
            build[key] = value
        elif key in search_keys:
            search[key] = value
        else:
            raise ConfigError(f"engine {name!r} has no option {key!r}; build options: {', '.join(build_keys) or '-'}; "
                              f"search options: {', '.join(search_keys) or '-'}")
    return build, search


def configure(name: str, options: Mapping[str, Any] | None = None, max_clauses: int | None = None
              ) -> tuple[CheckedEngine, dict[str, Any], dict[str, Any]]:
    """Engine ``name`` built with the build settings among ``options``, and its search knobs (Anserini's clause
    limit ``max_clauses`` unless the knobs give one), both validated before any index is touched: a bad option fails
    here, not when an index is opened. Returns (engine, build settings, search knobs)."""
    build, search = split_options(name, dict(options or {}))
    if name == "anserini" and max_clauses is not None:
        search.setdefault("max_clauses", max_clauses)
    engine = get_engine(name, **build)
    engine.check_search(**search)
    return engine, build, search


def parse_option(text: str) -> tuple[str, Any]:
    """``key=value`` from the command line, the value read as YAML (``10`` int, ``0.9`` float, ``true``)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"engine option {text!r} is not key=value")
    return key.strip(), yaml.safe_load(value)
