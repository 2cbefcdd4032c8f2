"""A SPLADE system's settings, one typed dataclass per stage: how the model is loaded (:class:`LoadOptions`), how it
encodes (:class:`EncodeOptions`), how the vectors are exported (:class:`ExportOptions`) and how they are indexed and
searched (:class:`SearchOptions`). Each validates its values when made (a ConfigError lists what is allowed), and
each setting has one spelling.

Benchmark YAML files, the command line and committed manifests name the settings flat (``doc_top_k: 1024``):
:meth:`SpladeSettings.from_flat` files each flat name under its stage and :meth:`SpladeSettings.flat` gives them back
in the order manifests have always recorded them, so run identities and cache keys are the same as before the split.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping

from lsr_eval.defaults import DEFAULT_SCALE, LUCENE_MAX_CLAUSES
from lsr_eval.engines.registry import DEFAULT_ENGINE, check_engine, configure
from lsr_eval.errors import ConfigError
from lsr_eval.models.options import (
    DEFAULT_DEVICE,
    DEFAULT_PRECISION,
    HEAD_INIT_RULES,
    PRECISIONS,
    HeadInitRule,
    check_choice,
    check_device,
)

#: A forward pass's precision: fp32 (the default of every reported number), bf16, or auto (bf16 on CUDA and on CPUs
#: with avx512_bf16 or AMX): :data:`lsr_eval.models.options.PRECISIONS`.
Precision = Literal["auto", "fp32", "bf16"]

__all__ = ["LoadOptions", "EncodeOptions", "ExportOptions", "SearchOptions", "SpladeSettings", "STAGE_OF"]


def _count(owner: str, name: str, value: Any, optional: bool) -> None:
    """An integer >= 1 (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{owner} {name}={value!r}: expected an integer >= 1{' or None' if optional else ''}")


def _number(owner: str, name: str, value: Any, optional: bool, positive: bool = False) -> None:
    """A finite number >= 0 (> 0 when ``positive``; None allowed when ``optional``)."""
    if value is None and optional:
        return
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0
            or (positive and value == 0)):
        raise ConfigError(f"{owner} {name}={value!r}: expected a finite number {'> 0' if positive else '>= 0'}"
                          f"{' or None' if optional else ''}")


def _flag(owner: str, name: str, value: Any, optional: bool = False) -> None:
    if not (isinstance(value, bool) or (optional and value is None)):
        raise ConfigError(f"{owner} {name}={value!r}: expected true or false{' or None' if optional else ''}")


@dataclass(frozen=True)
class LoadOptions:
    """How the model is loaded and where it runs: a separate query encoder (a folder, hub id or offline alias, or
    an inference-free one: ``idf``, ``static:<folder>``), the head's initialisation rule, the MLM-head rescaling
    ``rescale_k``, the forward pass's precision and the device (``auto``: CUDA when present). The device is
    recorded in manifests, never in a run's identity."""

    query_model: str | None = None
    head_init: HeadInitRule = "auto"
    rescale_k: float | None = None
    trust_remote_code: bool = False
    precision: Precision = DEFAULT_PRECISION  # type: ignore[assignment]
    device: str = DEFAULT_DEVICE

    def __post_init__(self) -> None:
        if isinstance(self.query_model, os.PathLike):
            object.__setattr__(self, "query_model", os.fspath(self.query_model))
        if self.query_model is not None and not isinstance(self.query_model, str):
            raise ConfigError(f"LoadOptions query_model={self.query_model!r}: expected a folder, hub id or alias")
        check_choice("head_init", self.head_init, HEAD_INIT_RULES)
        _number("LoadOptions", "rescale_k", self.rescale_k, optional=True, positive=True)
        _flag("LoadOptions", "trust_remote_code", self.trust_remote_code)
        check_choice("precision", self.precision, PRECISIONS)
        check_device(self.device)


@dataclass(frozen=True)
class EncodeOptions:
    """How texts become sparse vectors: token limits (None: the model's), the encoders' term budgets (top-k terms
    and a weight threshold; ``query_threshold`` None: ``threshold``), whether special tokens are dropped, and the
    batch and shard sizes (documents per cached shard: what a crash loses)."""

    max_length_q: int | None = None
    max_length_d: int | None = None
    doc_top_k: int | None = None
    query_top_k: int | None = None
    threshold: float = 0.0
    query_threshold: float | None = None
    drop_special: bool = True
    batch_size: int = 32
    shard_size: int = 50_000

    def __post_init__(self) -> None:
        for name in ("max_length_q", "max_length_d", "doc_top_k", "query_top_k"):
            _count("EncodeOptions", name, getattr(self, name), optional=True)
        _number("EncodeOptions", "threshold", self.threshold, optional=False)
        _number("EncodeOptions", "query_threshold", self.query_threshold, optional=True)
        _flag("EncodeOptions", "drop_special", self.drop_special)
        _count("EncodeOptions", "batch_size", self.batch_size, optional=False)
        _count("EncodeOptions", "shard_size", self.shard_size, optional=False)


@dataclass(frozen=True)
class ExportOptions:
    """How document vectors become an engine's collection: the quantisation ``scale`` (impact = round(w x scale);
    kept as given: the default is a float, and an integer from a YAML file keeps the cache slots it always had) and
    the pruning applied at export (the encoding is reused: a sparsity sweep encodes once;
    :mod:`lsr_eval.export.prune`)."""

    scale: float = float(DEFAULT_SCALE)
    prune_doc_top_k: int | None = None
    prune_doc_threshold: float = 0.0

    def __post_init__(self) -> None:
        _number("ExportOptions", "scale", self.scale, optional=False, positive=True)
        _count("ExportOptions", "prune_doc_top_k", self.prune_doc_top_k, optional=True)
        _number("ExportOptions", "prune_doc_threshold", self.prune_doc_threshold, optional=False)


@dataclass(frozen=True)
class SearchOptions:
    """How the collection is indexed and searched: the engine (:data:`lsr_eval.engines.registry.ENGINES`) with its
    build settings and search knobs by name, hits per query, Lucene's clause limit, and whether a query's own id is
    dropped from its hits (None: the dataset's default, on for BEIR)."""

    engine: str = DEFAULT_ENGINE
    engine_options: Mapping[str, Any] | None = None
    hits: int = 1000
    max_clauses: int = LUCENE_MAX_CLAUSES
    remove_query: bool | None = None

    def __post_init__(self) -> None:
        check_engine(self.engine)
        if self.engine_options is not None and not isinstance(self.engine_options, Mapping):
            raise ConfigError(f"SearchOptions engine_options={self.engine_options!r}: expected a mapping of "
                              "option: value")
        _count("SearchOptions", "hits", self.hits, optional=False)
        _count("SearchOptions", "max_clauses", self.max_clauses, optional=False)
        _flag("SearchOptions", "remove_query", self.remove_query, optional=True)


#: The stages' fields (attribute of :class:`SpladeSettings` -> its options class).
STAGES = {"load": LoadOptions, "encode": EncodeOptions, "export": ExportOptions, "search": SearchOptions}
#: Each flat setting's stage (``doc_top_k`` -> ``encode``): the one map from the flat names of YAML files, the
#: command line and manifests to the typed stages.
STAGE_OF: dict[str, str] = {f.name: stage for stage, cls in STAGES.items() for f in fields(cls)}
#: Flat names kept for one release, each read as its one spelling (with a DeprecationWarning).
DEPRECATED = {"bf16": "precision: bf16"}


def without_deprecated(flat: Mapping[str, Any], stacklevel: int = 3) -> dict[str, Any]:
    """``flat`` with a deprecated name read as its one spelling: ``bf16: true`` forces ``precision: bf16`` (as it
    always did), ``bf16: false`` adds nothing."""
    out = dict(flat)
    if "bf16" in out:
        warnings.warn("the bf16 setting is deprecated: give precision='bf16' (YAML: precision: bf16; command line: "
                      "--precision bf16)", DeprecationWarning, stacklevel=stacklevel)
        if out.pop("bf16"):
            out["precision"] = "bf16"
    return out


def by_stage(flat: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Flat settings filed by stage (``{"encode": {"doc_top_k": 1024}}``; only the stages named); an unknown name
    is refused."""
    unknown = sorted(set(flat) - set(STAGE_OF))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r}; known: {', '.join(sorted(STAGE_OF))}")
    parts: dict[str, dict[str, Any]] = {}
    for name, value in flat.items():
        parts.setdefault(STAGE_OF[name], {})[name] = value
    return parts


#: The order in which manifests have recorded the flat settings (the single dataclass's before the split; ``bf16``
#: is where the record puts the resolved precision's flag).
RECORD_ORDER = ("model", "query_model", "head_init", "rescale_k", "trust_remote_code", "max_length_q", "max_length_d",
                "doc_top_k", "query_top_k", "threshold", "drop_special", "bf16", "precision", "device", "batch_size",
                "scale", "hits", "max_clauses", "remove_query", "shard_size", "prune_doc_top_k",
                "prune_doc_threshold", "query_threshold", "engine", "engine_options")


@dataclass(frozen=True)
class SpladeSettings:
    """A SPLADE system: the model (a folder, hub id or offline alias, resolved) and its settings by stage (all
    recorded in the manifests)."""

    model: str
    load: LoadOptions = field(default_factory=LoadOptions)
    encode: EncodeOptions = field(default_factory=EncodeOptions)
    export: ExportOptions = field(default_factory=ExportOptions)
    search: SearchOptions = field(default_factory=SearchOptions)

    def __post_init__(self) -> None:
        if isinstance(self.model, os.PathLike):
            object.__setattr__(self, "model", os.fspath(self.model))
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError(f"SpladeSettings model={self.model!r}: expected a folder, hub id or offline alias")
        for name, cls in STAGES.items():
            if not isinstance(getattr(self, name), cls):
                raise ConfigError(f"SpladeSettings {name}={getattr(self, name)!r}: expected {cls.__name__}(...)")

    @classmethod
    def from_flat(cls, model: str, **flat: Any) -> SpladeSettings:
        """Settings from flat names (a YAML system's keys, a manifest's record): each filed under its stage
        (:data:`DEPRECATED` names read as their one spelling, with a warning)."""
        parts = by_stage(without_deprecated(flat))
        return cls(model, **{stage: options(**parts.get(stage, {})) for stage, options in STAGES.items()})

    @classmethod
    def from_record(cls, record: Mapping[str, Any], **overrides: Any) -> SpladeSettings:
        """The settings a manifest recorded (:func:`lsr_eval.pipeline.splade.settings_record`), with
        ``overrides`` (flat names; ``model`` too): the recorded ``bf16`` flag is the resolved precision, read as
        the precision asked for when the record names none (records made before precisions were resolved)."""
        flat = {k: v for k, v in record.items() if k != "bf16"}
        if flat.get("precision") is None:
            flat["precision"] = "bf16" if record.get("bf16") else DEFAULT_PRECISION
        flat.update(overrides)
        return cls.from_flat(**flat)

    def flat(self) -> dict[str, Any]:
        """The settings by flat name, in the order manifests record them (``model`` first)."""
        values = {"model": self.model, **{k: v for stage in STAGES for k, v in asdict(getattr(self, stage)).items()}}
        return {k: values[k] for k in RECORD_ORDER if k in values}

    def replace(self, **flat: Any) -> SpladeSettings:
        """A copy with some settings changed, by flat name (a sweep point: ``replace(prune_doc_top_k=64)``)."""
        model = flat.pop("model", self.model)
        changed = {stage: replace(getattr(self, stage), **values) for stage, values in by_stage(flat).items()}
        return replace(self, model=model, **changed)

    def resolved_precision(self):
        """The precision the model runs in on the settings' device (:class:`lsr_eval.models.precision.Precision`)."""
        from lsr_eval.models.device import resolve_device
        from lsr_eval.models.precision import resolve_precision

        return resolve_precision(self.load.precision, resolve_device(self.load.device))

    def engine_parts(self) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """(the engine with its build settings, those settings, its search knobs, validated) for these settings."""
        return configure(self.search.engine, self.search.engine_options, self.search.max_clauses)
