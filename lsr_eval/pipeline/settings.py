"""The systems' settings: BM25's (:class:`Bm25Settings`), and a SPLADE system's, one typed dataclass per stage:
how the model is loaded (:class:`LoadOptions`), how it encodes (:class:`EncodeOptions`), how the vectors are
exported (:class:`ExportOptions`) and how they are indexed and searched (:class:`SearchOptions`). Each setting is
declared once with its type and constraint (:mod:`lsr_eval.settings`), validated when made, and has one spelling.

Benchmark YAML files, the command line and committed manifests name the settings flat (``doc_top_k: 1024``):
:meth:`SpladeSettings.from_flat` files each flat name under its stage and :meth:`SpladeSettings.flat` gives them back
in the order manifests have always recorded them, so run identities and cache keys are the same as before the split.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping

from lsr_eval.anserini.collections import check_fields
from lsr_eval.defaults import DEFAULT_SCALE, LUCENE_MAX_CLAUSES
from lsr_eval.engines.registry import DEFAULT_ENGINE, ENGINES, configure, get_engine
from lsr_eval.errors import ConfigError
from lsr_eval.models.options import (
    BATCH_SIZE,
    DEFAULT_DEVICE,
    DEFAULT_PRECISION,
    DEFAULT_SHARD_SIZE,
    DEVICE,
    MAX_LENGTH,
    RESCALE_K,
    SHARD_SIZE,
    THRESHOLD,
    TOP_K,
    HeadInitRule,
)
from lsr_eval.search.params import BM25_B, BM25_K1, MAX_CLAUSES, K
from lsr_eval.settings import Setting, Validated, check, setting, validate

#: A forward pass's precision: fp32 (the default of every reported number), bf16, or auto (bf16 on CUDA and on CPUs
#: with avx512_bf16 or AMX): :data:`lsr_eval.models.options.PRECISIONS`.
Precision = Literal["auto", "fp32", "bf16"]

__all__ = ["LoadOptions", "EncodeOptions", "ExportOptions", "SearchOptions", "SpladeSettings", "STAGE_OF",
           "Bm25Settings", "BM25_ENGINES"]


#: The model a SPLADE system loads: a folder, a hub id or an offline alias.
MODEL = Setting(help="a folder, a hub id or an offline alias", min_items=1)


@dataclass(frozen=True)
class LoadOptions:
    """How the model is loaded and where it runs. The device is recorded in manifests, never in a run's
    identity."""

    query_model: str | None = setting(
        None, help="a separate query encoder: a folder, hub id or offline alias, or inference-free (idf, "
                   "static:<folder>)")
    head_init: HeadInitRule = setting("auto", help="the MLM head's initialisation rule (lsr-eval inspect-head)")
    rescale_k: float | None = setting(None, like=RESCALE_K)
    trust_remote_code: bool = setting(False, help="run model code shipped with the checkpoint")
    precision: Precision = setting(DEFAULT_PRECISION, help="forward-pass precision (fp32: the same numbers on every "
                                                           "machine; auto: bf16 on CUDA and avx512_bf16/AMX CPUs)")
    device: str = setting(DEFAULT_DEVICE, like=DEVICE)

    def __post_init__(self) -> None:
        if isinstance(self.query_model, os.PathLike):
            object.__setattr__(self, "query_model", os.fspath(self.query_model))
        validate(self)


@dataclass(frozen=True)
class EncodeOptions(Validated):
    """How texts become sparse vectors: token limits, the encoders' term budgets, special tokens, batch and shard
    sizes."""

    max_length_q: int | None = setting(None, like=MAX_LENGTH, help="query token limit (null: the model's)")
    max_length_d: int | None = setting(None, like=MAX_LENGTH, help="document token limit (null: the model's)")
    doc_top_k: int | None = setting(None, like=TOP_K, help="keep the top-k terms per document")
    query_top_k: int | None = setting(None, like=TOP_K, help="keep the top-k terms per query")
    threshold: float = setting(0.0, like=THRESHOLD, help="drop weights <= threshold")
    query_threshold: float | None = setting(None, like=THRESHOLD, help="the queries' threshold (null: threshold)")
    drop_special: bool = setting(True, help="drop special tokens ([CLS], [SEP], ...)")
    batch_size: int = setting(32, like=BATCH_SIZE)
    shard_size: int = setting(DEFAULT_SHARD_SIZE, like=SHARD_SIZE)


@dataclass(frozen=True)
class ExportOptions(Validated):
    """How document vectors become an engine's collection: quantisation and the pruning applied at export (the
    encoding is reused: a sparsity sweep encodes once; :mod:`lsr_eval.export.prune`). ``scale`` is kept as given:
    an integer from a YAML file keeps the cache slots it always had."""

    scale: float = setting(float(DEFAULT_SCALE), gt=0, help="quantisation scale: impact = round(w * scale)")
    prune_doc_top_k: int | None = setting(None, like=TOP_K, help="keep a document's top-k terms at export")
    prune_doc_threshold: float = setting(0.0, like=THRESHOLD, help="drop document weights <= this at export")


@dataclass(frozen=True)
class SearchOptions(Validated):
    """How the collection is indexed and searched (the engines: :data:`lsr_eval.engines.registry.ENGINES`)."""

    engine: str = setting(DEFAULT_ENGINE, choices=ENGINES.keys, help="retrieval engine")
    engine_options: Mapping[str, Any] | None = setting(
        None, help="the engine's build settings and search knobs, by name")
    hits: int = setting(1000, like=K)
    max_clauses: int = setting(LUCENE_MAX_CLAUSES, like=MAX_CLAUSES)
    remove_query: bool | None = setting(None, help="drop a query's own id from its hits (null: the dataset's "
                                                   "default, on for BEIR)")


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
        check("model", self.model, str, MODEL, "SpladeSettings")
        for name, cls in STAGES.items():
            check(name, getattr(self, name), cls, Setting(help=f"the {name} stage's settings"), "SpladeSettings")

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


@dataclass(frozen=True)
class Bm25Settings:
    """Pyserini's BEIR regression settings by default."""

    k1: float = setting(0.9, like=BM25_K1)
    b: float = setting(0.4, like=BM25_B)
    hits: int = setting(1000, like=K)
    remove_query: bool | None = setting(None, help="drop a query's own id from its hits (null: the dataset's "
                                                   "convention, on for BEIR)")
    #: None: flat; else document fields searched separately (multifield)
    fields: tuple[str, ...] | None = None
    engine: str = setting(DEFAULT_ENGINE, choices=lambda: BM25_ENGINES,
                          help="anserini, or pisa: the same analysed terms, k1 and b scored by PISA's BM25 (the "
                               "other engines score integer impacts)")
    engine_options: Mapping[str, Any] | None = setting(
        None, help="PISA's index_encoding, query_algorithm, block_size (engine pisa only)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", check_fields(self.fields))
        validate(self)
        if self.engine == "anserini" and self.engine_options:
            raise ConfigError("engine_options apply to BM25 on engine pisa only")
        if self.engine == "pisa" and self.fields:
            raise ConfigError("BM25 on engine pisa searches the flat contents; leave out fields")
        allowed = pisa_bm25_options() if self.engine_options else ()
        unknown = sorted(set(self.engine_options or {}) - set(allowed))
        if unknown:
            raise ConfigError(f"BM25 on pisa has no engine option {unknown[0]!r}; allowed: "
                              f"{', '.join(allowed)} (k1 and b are the system's own)")

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Bm25Settings:
        """The settings a run's manifest records (its ``experiment``, as :meth:`resolved` wrote it): every one, so
        that a replay (``lsr-eval reproduce``) is the same experiment, BM25 on PISA and multifield included."""
        fields = record.get("fields")
        return cls(**{k: record[k] for k in ("k1", "b", "hits", "remove_query", "engine", "engine_options")
                      if k in record}, fields=tuple(fields) if fields else None)

    @property
    def method(self) -> str:
        return "bm25-multifield" if self.fields else "bm25-flat"

    def resolved(self, dataset) -> dict[str, Any]:
        """The settings a run records for ``dataset`` (a :class:`lsr_eval.data.datasets.Dataset`): its
        ``remove_query`` convention resolved."""
        rq = dataset.remove_query if self.remove_query is None else self.remove_query
        out = {"k1": self.k1, "b": self.b, "hits": self.hits, "remove_query": rq}
        if self.fields:  # only then: a flat experiment keeps its identity
            out["fields"] = list(self.fields)
        if self.engine != "anserini":  # likewise
            out.update(engine=self.engine, engine_options=dict(self.engine_options or {}))
        return out

    def pisa_engine(self):
        """The PISA engine that indexes this BM25's term frequencies and searches them (engine pisa only)."""
        return get_engine("pisa", scorer="bm25", bm25_k1=float(self.k1), bm25_b=float(self.b),
                          **dict(self.engine_options or {}))


#: The engines BM25 runs on.
BM25_ENGINES = ("anserini", "pisa")


def pisa_bm25_options() -> tuple[str, ...]:
    """The options of BM25 on PISA: its build settings but the scorer's (k1 and b are the system's own); read when
    checked (the PISA module loads numpy)."""
    from lsr_eval.engines.pisa import BUILD_KEYS

    return tuple(k for k in BUILD_KEYS if k not in ("scorer", "bm25_k1", "bm25_b"))
