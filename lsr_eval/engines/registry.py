"""Engines by name, imported only when asked for (PISA, Seismic and BMP are optional packages)."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Mapping

from lsr_eval.engines.base import Engine
from lsr_eval.errors import ConfigError


@dataclass(frozen=True)
class EngineSpec:
    module: str
    cls: str
    #: the pip requirement that provides the engine (None: a core dependency)
    package: str | None
    summary: str
    #: exact top-k, returned as the reference engine's run bit for bit (lsr_eval.engines.ties); else the benchmark
    #: measures its recall of an exact engine's top-k
    exact: bool = True


ENGINES: dict[str, EngineSpec] = {
    "anserini": EngineSpec("lsr_eval.engines.anserini", "AnseriniEngine", None,
                           "Lucene impact index through Anserini (the reference; exact)"),
    "pisa": EngineSpec("lsr_eval.engines.pisa", "PisaEngine", "pyterrier-pisa==0.4.9",
                       "PISA quantized index (or BM25 over term frequencies), MaxScore by default (exact)"),
    "seismic": EngineSpec("lsr_eval.engines.seismic", "SeismicEngine", "pyseismic-lsr==0.5.4",
                          "Seismic blocked inverted index (approximate by design)", exact=False),
    # exact at its safe setting (alpha = beta = 1), approximate below: the recall of the exact top-k is reported
    # for every setting (1.0 at the safe one)
    "bmp": EngineSpec("lsr_eval.engines.bmp", "BmpEngine", "bmp==0.2.8",
                      "BMP block-max pruning (exact at alpha = beta = 1, approximate below)", exact=False),
}
DEFAULT_ENGINE = "anserini"
#: the exact engine an approximate engine's runs are compared with
REFERENCE_ENGINE = "anserini"


def check_engine(name: str) -> str:
    """``name`` when it is a known engine; otherwise an error listing the known ones."""
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; known engines: {', '.join(ENGINES)}")
    return name


def get_engine(name: str = DEFAULT_ENGINE, **settings: Any) -> Engine:
    """The engine called ``name``, built with its ``settings`` (validated by the engine)."""
    spec = ENGINES[check_engine(name)]
    module = importlib.import_module(spec.module)
    return getattr(module, spec.cls)(**settings)


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
              ) -> tuple[Engine, dict[str, Any], dict[str, Any]]:
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
