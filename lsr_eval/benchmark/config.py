"""The benchmark YAML file, validated completely before anything runs: unknown keys, missing values, system
settings, fusion methods, normalisations and parameters, measures, model paths, significance tests and sweep
values each fail with a message naming the file, the entry and the allowed values.

Design notes: docs/design.md."""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence, get_args

from lsr_eval.data.datasets import BeirFolder
from lsr_eval.data.registry import BENCHMARKS, GROUPS, expand, split_spec
from lsr_eval.efficiency.protocol import PASSES, WARMUP, LatencyProtocol
from lsr_eval.engines.registry import DEFAULT_ENGINE, check_engine, configure
from lsr_eval.errors import ConfigError, InputError, LsrEvalError
from lsr_eval.models.offline import OFFLINE_MODELS
from lsr_eval.models.options import QueryRuntime
from lsr_eval.pipeline.settings import STAGE_OF, STAGES, SpladeSettings
from lsr_eval.settings import Setting, SettingError, Validated, check, check_as, describe, section, setting, validate
from lsr_eval.settings.shared import ALPHA, DEFAULT_ALPHA, DEFAULT_FOLD_SEED, FOLD_SEED, FOLDS

SystemKind = Literal["bm25", "splade", "run"]
#: Keys of a ``kind: run`` system besides ``name`` and ``kind``.
RUN_KEYS = ("path", "display_name", "costs")
#: Costs a ``kind: run`` system may declare, and the table column each fills (the column measured rows use).
DECLARED_COSTS = {"flops": "flops", "latency_ms": "latency_mean_ms"}
#: A declared cost's value.
COST = Setting(help="a cost declared with its source (FLOPs, milliseconds)", ge=0)
#: The file's lists, entries and names (each checked by lsr_eval.settings.check where the file is read).
ENTRIES = Setting(help="the benchmark's datasets, systems, sweep values, costs: at least one", min_items=1)
NAMES = Setting(help="names of systems, datasets or measures: at least one", min_items=1)
FUSED = Setting(help="the systems a fusion fuses: at least two", min_items=2)
TEXT = Setting(help="a path, a model, a name or a source: not empty", min_items=1)
SOURCE = Setting(help="where declared costs come from: a paper, a table, a measurement on named hardware",
                 min_items=1)
TUNE = Setting(help="tune the fusion's parameters: true, false or {cv: K, seed: S}")
OPTIONS = Setting(help="an engine's options: option -> value")
STAND_INS = Setting(help="stand-ins: hub id or dataset name -> local path")


@dataclass(frozen=True)
class DatasetEntry:
    """A dataset: a registry name or group (``beir-13``), ``irds:<id>`` or a BEIR folder; ``tune_split`` names the
    split whose queries tune fusion weights (never the reported one)."""

    spec: str
    split: str | None = None
    tune_split: str | None = None
    label: str | None = None
    measures: tuple[str, ...] = ()


@dataclass(frozen=True)
class SystemEntry:
    """A retrieval system: ``bm25`` (``k1``, ``b``), ``splade`` (``model`` and the flat names of its settings,
    :data:`lsr_eval.pipeline.settings.STAGE_OF`, read by :meth:`~lsr_eval.pipeline.settings.SpladeSettings.from_flat`)
    or ``run`` (:data:`RUN_KEYS`; ``path`` resolved against the YAML file's folder)."""

    name: str
    kind: SystemKind
    params: dict[str, Any] = field(default_factory=dict)
    sweep: str | None = None  #: the sweep this system is a point of (``<system>:<keys>``)
    point: str | None = None  #: its short label on a curve (``d64``)


@dataclass(frozen=True)
class CrossValidation(Validated):
    """``tune: {cv: K, seed: S}``: K-fold cross-validation over the reported queries, folds drawn with ``seed``."""

    cv: int = setting(like=FOLDS)
    seed: int = setting(DEFAULT_FOLD_SEED, like=FOLD_SEED)


@dataclass(frozen=True)
class FusionEntry:
    name: str
    method: str
    runs: tuple[str, ...]
    norm: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    tune: bool | CrossValidation = False
    metric: str = "nDCG@10"

    @property
    def tune_on_split(self) -> bool:
        """Weights chosen on the dataset's ``tune_split`` (``tune: true``)."""
        return self.tune is True


def _tests() -> tuple[str, ...]:
    """The paired tests (read when checked: the significance package loads numpy)."""
    from lsr_eval.significance.compare import TESTS

    return TESTS


def _corrections() -> tuple[str, ...]:
    from lsr_eval.significance.correction import CORRECTIONS

    return CORRECTIONS


@dataclass(frozen=True)
class SignificanceEntry(Validated):
    baseline: str | tuple[str, ...]  #: one system, or several (each tested on its own)
    test: str = setting("t-test", choices=_tests, help="the paired test (lsr_eval.significance.compare)")
    alpha: float = setting(DEFAULT_ALPHA, like=ALPHA)
    measures: tuple[str, ...] = ()
    correction: str = setting("bonferroni", choices=_corrections, help="the multiple-comparison correction "
                                                        "(lsr_eval.significance.correction)")
    across_datasets: bool = setting(False, help="the family: each dataset's table (false), or every dataset's "
                                                "(system, measure) pairs together, pooled rows tested over the "
                                                "datasets' means (true)")

    @property
    def baselines(self) -> tuple[str, ...]:
        return (self.baseline,) if isinstance(self.baseline, str) else tuple(self.baseline)


@dataclass(frozen=True)
class EfficiencyEntry:
    """Latency protocol: ``latency_queries`` queries after ``warmup`` unmeasured ones, ``hits`` per query, timed by
    ``protocol`` (:data:`~lsr_eval.efficiency.protocol.LatencyProtocol`): ``fastest``, in ``rounds`` rounds over all
    systems (each query keeps its fastest time; see ``benchmark.run``), or ``pisa``, PISA's queries tool (one
    untimed pass, then ``passes`` timed passes of the engine's own call, pooled: :mod:`lsr_eval.efficiency.passes`).
    SPLADE queries encoded on ``query_runtime`` (``torch``, or ``onnx``: :mod:`lsr_eval.models.onnx_query`).
    ``latency_datasets``: the datasets (their spec or label, a group's members by name) whose queries are timed; the
    others get FLOPs and index sizes only (empty, the default: every dataset)."""

    latency_queries: int = setting(100, ge=1, unit="queries", help="queries timed per dataset")
    warmup: int = setting(10, like=WARMUP)
    hits: int = setting(1000, ge=1, help="hits per timed query")
    rounds: int = setting(1, ge=1, help="rounds over all systems (each query keeps its fastest time; protocol: "
                                        "fastest only)")
    protocol: LatencyProtocol = setting("fastest", help="how queries are timed: fastest (each query's fastest time "
                                                        "over the rounds) or pisa (PISA's queries tool: pooled passes)")
    passes: int = setting(2, like=PASSES)
    query_runtime: QueryRuntime = setting("torch", help="where SPLADE queries are encoded (torch, or onnx: "
                                                        "lsr_eval.models.onnx_query)")
    latency_datasets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        validate(self)
        if self.protocol == "pisa" and self.rounds != 1:  # the pisa protocol's passes replace the rounds
            raise SettingError("rounds", "1 with protocol pisa (it times its own passes)", self.rounds)

    @property
    def timed_passes(self) -> int | None:
        """The pooled passes of the ``pisa`` protocol (None: ``fastest``)."""
        return self.passes if self.protocol == "pisa" else None

    def times(self, entry: DatasetEntry, label: str) -> bool:
        """Whether the dataset of ``entry`` (labelled ``label``) has its queries timed."""
        return not self.latency_datasets or entry.spec in self.latency_datasets or label in self.latency_datasets


#: Sweep keys -> (the SpladeSettings field each sets, whose declaration checks its values; point-label prefix).
SWEEP_KEYS: dict[str, tuple[str, str]] = {
    "doc_top_k": ("prune_doc_top_k", "d"),
    "doc_threshold": ("prune_doc_threshold", "dt"),
    "query_top_k": ("query_top_k", "q"),
    "query_threshold": ("query_threshold", "qt"),
}


@dataclass(frozen=True)
class SweepEntry:
    """Sparsity settings of one SPLADE ``system``, every combination of the listed values a point."""

    system: str
    doc_top_k: tuple[int, ...] = ()
    doc_threshold: tuple[float, ...] = ()
    query_top_k: tuple[int, ...] = ()
    query_threshold: tuple[float, ...] = ()

    @property
    def keys(self) -> list[str]:
        return [k for k in SWEEP_KEYS if getattr(self, k)]

    @property
    def name(self) -> str:
        return f"{self.system}:{'+'.join(self.keys)}"

    def points(self, base: SystemEntry) -> list[SystemEntry]:
        out = []
        for values in itertools.product(*(getattr(self, k) for k in self.keys)):
            label = "-".join(f"{SWEEP_KEYS[k][1]}{v:g}" for k, v in zip(self.keys, values))
            params = {**base.params, **{SWEEP_KEYS[k][0]: v for k, v in zip(self.keys, values)}}
            out.append(SystemEntry(f"{base.name}-{label}", base.kind, params, self.name, label))
        return out


@dataclass(frozen=True)
class BenchmarkConfig:
    name: str
    out: str
    datasets: tuple[DatasetEntry, ...]
    systems: tuple[SystemEntry, ...]
    fusion: tuple[FusionEntry, ...] = ()
    significance: SignificanceEntry | None = None
    efficiency: EfficiencyEntry | None = None
    source: str = ""
    sweep: tuple[SweepEntry, ...] = ()
    #: Hub ids and dataset names run on local stand-ins (``--map ID=PATH``), as applied: id -> path.
    stand_ins: dict[str, str] = field(default_factory=dict)

    def all_systems(self) -> list[SystemEntry]:
        """The declared systems, then every sweep point."""
        by_name = {s.name: s for s in self.systems}
        return [*self.systems, *(p for w in self.sweep for p in w.points(by_name[w.system]))]


def load_config(path: str | os.PathLike) -> BenchmarkConfig:
    """Read and validate a benchmark YAML file; relative paths are taken from the current directory."""
    import yaml

    where = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{where}: {e}") from None
    section(BenchmarkConfig, raw, where)
    for key in ("datasets", "systems"):
        check(key, raw[key], list, ENTRIES, where)
    datasets = []
    for i, d in enumerate(raw["datasets"]):
        w = f"{where}: datasets[{i}]"
        d = section(DatasetEntry, d if isinstance(d, dict) else {"spec": d}, w)
        measures = _measures(d.get("measures"), f"{w}: measures")
        _check_registry_splits(d, w)
        datasets.append(DatasetEntry(**{**d, "measures": measures}))
    systems = []
    for i, s in enumerate(raw["systems"]):
        w = f"{where}: systems[{i}]"
        s = dict(check("entry", s, dict, ENTRIES, w))
        if "name" not in s or "kind" not in s:
            raise ConfigError(f"{w}: needs 'name' and 'kind'")
        if s["kind"] not in get_args(SystemKind):
            raise ConfigError(f"{w}: kind {s['kind']!r}; allowed: {', '.join(get_args(SystemKind))}")
        params = {k: v for k, v in s.items() if k not in ("name", "kind")}
        if s["kind"] == "run":
            params = _run_params(params, Path(where).parent, f"{w} ({s['name']})")
        else:
            _check_system_params(s["kind"], params, w)
        systems.append(SystemEntry(str(s["name"]), s["kind"], params))
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: duplicate system names {names}")
    sweeps = tuple(_sweep(w, {s.name: s for s in systems}, f"{where}: sweep[{i}]")
                   for i, w in enumerate(raw.get("sweep") or []))
    cfg = BenchmarkConfig(raw["name"], raw["out"], tuple(datasets), tuple(systems), (), None, None, where, sweeps)
    all_names = [s.name for s in cfg.all_systems()]
    clash = sorted({n for n in all_names if all_names.count(n) > 1})
    if clash:
        raise ConfigError(f"{where}: sweep points named like other systems or points: {', '.join(clash)}")
    fusion = []
    for i, f in enumerate(raw.get("fusion") or []):
        fusion.append(_fusion(f, all_names, datasets, f"{where}: fusion[{i}]"))
    fusion_names = [f.name for f in fusion]
    taken = sorted(set(fusion_names) & set(all_names)) or sorted({n for n in fusion_names if fusion_names.count(n) > 1})
    if taken:
        raise ConfigError(f"{where}: fusion names must differ from each other and from systems: {', '.join(taken)}")
    sig = raw.get("significance")
    if sig is not None:
        sig = section(SignificanceEntry, sig, f"{where}: significance")
        baseline = sig["baseline"]
        if isinstance(baseline, list):
            check("baseline", baseline, list[str], NAMES, f"{where}: significance")
            if len(set(baseline)) != len(baseline):
                raise ConfigError(f"{where}: significance baseline must name distinct systems, got {baseline!r}")
            baseline = tuple(baseline)
        sig = _make(SignificanceEntry, {**sig, "baseline": baseline,
                                        "measures": _measures(sig.get("measures"), f"{where}: significance")},
                    f"{where}: significance")
        for b in sig.baselines:
            if b not in all_names + fusion_names:
                raise ConfigError(f"{where}: significance baseline {b!r} is not a system; systems: "
                                  f"{', '.join(all_names + fusion_names)}")
    eff = raw.get("efficiency")
    if eff is not None:
        eff = _make(EfficiencyEntry, section(EfficiencyEntry, eff, f"{where}: efficiency"), f"{where}: efficiency")
        eff = dataclasses.replace(eff, latency_datasets=_latency_datasets(eff.latency_datasets, cfg.datasets,
                                                                          where))
    return dataclasses.replace(cfg, fusion=tuple(fusion), significance=sig, efficiency=eff)


def _make(cls, data: dict[str, Any], where: str):
    """``cls(**data)``, a setting's error said of ``where`` (the file and entry)."""
    try:
        return cls(**data)
    except SettingError as e:
        raise e.at(where) from None


def _latency_datasets(names: Any, datasets: tuple[DatasetEntry, ...], where: str) -> tuple[str, ...]:
    """``efficiency.latency_datasets`` as a tuple, each name a dataset of the benchmark (spec, label or a group's
    member)."""
    if names in ((), None):
        return ()
    check("latency_datasets", names, tuple[str, ...], NAMES, f"{where}: efficiency")
    known = {n for e in datasets for n in (e.spec, e.label) if n}
    known |= {m for e in datasets if e.spec in GROUPS for m in expand(e.spec)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"{where}: efficiency latency_datasets names {unknown[0]!r}, not a dataset of this "
                          f"benchmark ({', '.join(sorted(known))})")
    return tuple(names)


def _measures(names: Any, where: str) -> tuple[str, ...]:
    """Measure names as given, each checked by :func:`lsr_eval.evaluation.measures.parse_measure`."""
    if not names:
        return ()
    check("measures", names, list[str], NAMES, where)
    from lsr_eval.evaluation.measures import parse_measure

    for m in names:
        try:
            parse_measure(m)
        except LsrEvalError as e:
            raise ConfigError(f"{where}: {e}") from None
    return tuple(names)


def _fusion(f: Any, systems: list[str], datasets: list[DatasetEntry], where: str) -> FusionEntry:
    """A fusion entry with its method, normalisation, parameters and metric checked against the fusion registry."""
    from lsr_eval.fusion.methods import check_norm, get_method, resolve_params

    f = section(FusionEntry, f, where)
    check("runs", f["runs"], list[str], FUSED, where)
    unknown_runs = [r for r in f["runs"] if r not in systems]
    if unknown_runs:
        raise ConfigError(f"{where}: fuses unknown systems {unknown_runs}; systems: {systems}")
    tune = _tune(f.get("tune", False), f"{where} ({f['name']}): tune")
    try:
        method = get_method(f["method"])
        if f.get("norm") is not None:
            check_norm(f["norm"])
        if not tune:
            resolve_params(method, f.get("params"), len(f["runs"]))
        elif f.get("params"):
            raise ConfigError(f"tuning chooses {method.name}'s parameters: drop params {f['params']!r}")
        elif not method.tunable:
            raise ConfigError(f"{method.name} has no parameter to tune")
    except LsrEvalError as e:
        raise ConfigError(f"{where} ({f['name']}): {e}") from None
    if tune is True and not any(d.tune_split for d in datasets):
        raise ConfigError(f"{where} ({f['name']}): tune: true needs a tune_split on the datasets (on those without "
                          "one the fusion is not run); none has one (or tune: {cv: K} cross-validates on the "
                          "reported queries)")
    metric = f.get("metric", "nDCG@10")
    _measures([metric], f"{where}: metric")
    return FusionEntry(**{**f, "runs": tuple(f["runs"]), "tune": tune})


def _tune(value: Any, where: str) -> bool | CrossValidation:
    """``tune``: ``true``/``false``, or ``{cv: K, seed: S}`` (K >= 2 folds; seed an integer, default 0)."""
    if isinstance(check("tune", value, bool | dict, TUNE, where), bool):
        return value
    return _make(CrossValidation, section(CrossValidation, value, where), where)


def _run_params(params: dict[str, Any], folder: Path, where: str) -> dict[str, Any]:
    """A ``kind: run`` system's settings: ``path`` (resolved against ``folder``, the YAML file's; whether it exists
    is checked by :func:`check_on_disk`), ``display_name``, declared ``costs``."""
    unknown = sorted(set(params) - set(RUN_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} for a run system; allowed: {', '.join(RUN_KEYS)}")
    path = params.get("path")
    check("path", path, str, TEXT, where)   # a TREC run file, relative to the YAML file's folder
    out = {**params, "path": str((folder / path).resolve())}
    if "display_name" in params:
        check("display_name", params["display_name"], str, TEXT, where)
    costs = params.get("costs")
    if costs is not None:
        allowed = [*DECLARED_COSTS, "source"]
        check("costs", costs, dict, ENTRIES, where)
        unknown = sorted(set(costs) - set(allowed))
        if unknown:
            raise ConfigError(f"{where}: costs: unknown key {unknown[0]!r}; allowed: {', '.join(allowed)}")
        declared = [k for k in DECLARED_COSTS if k in costs]
        if not declared:
            raise ConfigError(f"{where}: costs declares none of {', '.join(DECLARED_COSTS)}")
        try:
            for k in declared:
                check(k, costs[k], float, COST)
        except SettingError as e:
            raise e.at(f"{where}: costs") from None
        if not check("source", costs.get("source"), str, SOURCE, f"{where}: costs").strip():
            raise SettingError("source", describe(str, SOURCE), costs["source"], f"{where}: costs")
    return out


def _check_registry_splits(entry: dict[str, Any], where: str) -> None:
    """A registry dataset's ``split`` and ``tune_split`` are splits it has (checked before anything runs)."""
    spec = entry.get("spec")
    if not isinstance(spec, str) or spec.startswith("irds:"):
        return
    try:
        named = split_spec(spec)
        if named is None:
            return
        for key in ("split", "tune_split"):
            if entry.get(key) is not None:
                named[0].irds_for(entry[key])
    except InputError as e:
        raise ConfigError(f"{where} ({spec}): {e}") from None


def _sweep(raw: Any, systems: dict[str, SystemEntry], where: str) -> SweepEntry:
    """A sweep entry: a SPLADE system, and for each key a non-empty list of distinct valid values."""
    data = section(SweepEntry, raw, where)
    base = systems.get(data["system"])
    if base is None or base.kind != "splade":
        splade = [n for n, s in systems.items() if s.kind == "splade"]
        raise ConfigError(f"{where}: sweeps a {'non-splade' if base else 'unknown'} system {data['system']!r}; "
                          f"splade systems: {', '.join(splade) or 'none'}")
    values: dict[str, tuple] = {}
    for key in SWEEP_KEYS:
        given = data.get(key)
        if given is None:
            continue
        check(key, given, list, ENTRIES, where)
        target = SWEEP_KEYS[key][0]
        for v in given:   # each value as the setting it sets declares it
            try:
                check_as(STAGES[STAGE_OF[target]], target, v, name=key, null=False)
            except SettingError as e:
                raise e.at(where) from None
        if len(set(given)) != len(given):
            raise ConfigError(f"{where}: {key} repeats a value: {given}")
        values[key] = tuple(given)
    if not values:
        raise ConfigError(f"{where}: nothing to sweep; give one or more of {', '.join(SWEEP_KEYS)}")
    cap = base.params.get("doc_top_k")
    over = [v for v in values.get("doc_top_k", ()) if cap is not None and v > cap]
    if over:
        raise ConfigError(f"{where}: doc_top_k {over} above the {cap} terms per document that {base.name}'s "
                          f"encoding keeps (its doc_top_k): pruning cannot add terms; raise its doc_top_k")
    floor = base.params.get("threshold", 0.0)
    under = [v for v in values.get("doc_threshold", ()) if v < floor]
    if under:
        raise ConfigError(f"{where}: doc_threshold {under} below {base.name}'s threshold {floor}: pruning cannot "
                          "add terms")
    return SweepEntry(data["system"], **values)


#: A hub id: ``name`` or ``org/name`` (letters, digits, ``-_.``), not a relative or absolute path.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def check_model(name: Any, where: str, on_disk: bool = False, *, query: bool = False) -> None:
    """A model name is a non-empty string; with ``on_disk`` (before running, on this machine) it must be an offline
    alias, an existing folder, or shaped like a hub id (``name`` or ``org/name``), else a ConfigError naming the
    aliases. (Without ``on_disk`` a config may name a folder that an earlier step, e.g. training, writes.)"""
    check("model", name, str, TEXT, where)   # a folder, a hub id or an alias
    if query:      # a query encoder may also be the corpus IDF, the binary bag of tokens, or static:<folder or hub id>
        from lsr_eval.models.static_query import BINARY, IDF, STATIC_PREFIX

        if name in (IDF, BINARY):
            return
        if name.startswith(STATIC_PREFIX):
            return check_model(name[len(STATIC_PREFIX):], where, on_disk)
    if not on_disk or name in OFFLINE_MODELS or Path(name).is_dir():
        return
    if Path(name).exists() or not _HUB_ID.match(name):   # a hub id: name or org/name
        raise ConfigError(f"{where}: model {name!r} is not a folder here (nor an offline alias: "
                          f"{', '.join(sorted(OFFLINE_MODELS))}; nor a hub id org/name)")


def check_on_disk(cfg: BenchmarkConfig) -> None:
    """What only this machine can tell, checked before anything runs: every model folder, run file and dataset
    folder (with its split's and tune split's qrels) exists."""
    for i, s in enumerate(cfg.systems):
        for key in ("model", "query_model"):
            if s.kind == "splade" and s.params.get(key) is not None:
                check_model(s.params[key], f"{cfg.source}: systems[{i}] ({s.name}): {key}", on_disk=True,
                            query=key == "query_model")
        if s.kind == "run" and not Path(s.params["path"]).is_file():
            raise ConfigError(f"{cfg.source}: systems[{i}] ({s.name}): run file {s.params['path']} does not exist "
                              f"(a path is relative to the YAML file's folder, {Path(cfg.source).parent})")
    for i, d in enumerate(cfg.datasets):
        _check_dataset_on_disk(d, f"{cfg.source}: datasets[{i}] ({d.spec})")


def _check_dataset_on_disk(entry: DatasetEntry, where: str) -> None:
    """A dataset given as a folder is a BEIR folder with the qrels of its split and tune split; registry names,
    groups and ``irds:`` ids are resolved by their loaders."""
    if entry.spec.startswith("irds:") or entry.spec in GROUPS or split_spec(entry.spec) is not None:
        return
    if not Path(entry.spec).is_dir():
        raise ConfigError(f"{where}: no such folder (relative paths are taken from the current directory, "
                          f"{Path.cwd()}), nor a registry name or irds:<id>")
    try:
        for split in dict.fromkeys((entry.split or "test", entry.tune_split)):
            if split is not None:
                BeirFolder(entry.spec, split)
    except InputError as e:
        raise ConfigError(f"{where}: {e}") from None


def _check_engine(params: dict[str, Any], where: str) -> None:
    """``engine`` is a known engine, installed, and ``engine_options`` a mapping of options it takes; its build
    settings are validated by constructing it, its search knobs by its ``check_search`` (before any run)."""
    engine, options = params.get("engine", DEFAULT_ENGINE), params.get("engine_options")
    check("engine_options", options, dict | None, OPTIONS, where)
    try:
        configure(check_engine(engine), options)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from e


def _check_system_params(kind: str, params: dict[str, Any], where: str) -> None:
    """Known keys for the kind, and values its settings accept (model path, term budgets, BM25 parameters)."""
    if kind == "bm25":
        from lsr_eval.pipeline.bm25 import Bm25Settings

        allowed = {f.name for f in dataclasses.fields(Bm25Settings)}
    else:
        from lsr_eval.pipeline.settings import DEPRECATED, STAGE_OF

        allowed = {"model", *STAGE_OF, *DEPRECATED}
        if "model" not in params:
            raise ConfigError(f"{where}: a splade system needs 'model'")
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} for a {kind} system; "
                          f"allowed: {', '.join(sorted(allowed))}")
    if kind == "bm25":
        try:
            settings = Bm25Settings(**params)
            if settings.engine == "pisa":
                settings.pisa_engine()   # PISA checks its options' values
        except SettingError as e:
            raise e.at(where) from None
        except (ConfigError, TypeError) as e:
            raise ConfigError(f"{where}: {e}") from e
        return
    for key in ("model", "query_model"):
        if params.get(key) is not None:
            check_model(params[key], f"{where}: {key}", query=key == "query_model")

    try:   # the stages' own validation (types, ranges, choices), then the engine's options
        SpladeSettings.from_flat(**params)
    except SettingError as e:
        raise e.at(where) from None
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    _check_engine(params, where)


def read_stand_ins(items: Sequence[str] = (), map_file: str | os.PathLike | None = None) -> dict[str, str]:
    """Stand-ins, id -> local path: a YAML ``map_file`` (a mapping ``ID: PATH``, paths relative to its folder), then
    ``items`` (``ID=PATH``, relative to the current directory), which win over the file's."""
    out: dict[str, str] = {}
    if map_file is not None:
        import yaml

        try:
            raw = yaml.safe_load(Path(map_file).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{map_file}: {e}") from None
        check("stand-ins", raw, dict[str, str], STAND_INS, str(map_file))   # ID: PATH, one a line
        out.update({k: str(Path(map_file).parent / v) for k, v in raw.items()})
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"--map {item!r}: expected ID=PATH, e.g. naver/efficient-splade-V-large-query=models/q")
        out[key] = value
    return out


def apply_stand_ins(cfg: BenchmarkConfig, stand_ins: dict[str, str],
                    must_use: Sequence[str] | None = None) -> BenchmarkConfig:
    """``cfg`` with each model (``model``, ``query_model``) and dataset named in ``stand_ins`` replaced by its local
    path: a dataset keeps its name as label (tables and reports read the same) and its registry measures; a group
    (``beir-13``) with a mapped member becomes its members. A key of ``must_use`` (default: every key; the command
    passes its ``--map`` items, a map file may hold a whole mirror) that the config does not name is refused: a typo
    would otherwise run the real thing."""
    if not stand_ins:
        return cfg
    used: set[str] = set()
    systems = []
    for s in cfg.systems:
        params = dict(s.params)
        for key in ("model", "query_model"):
            if s.kind == "splade" and params.get(key) in stand_ins:
                used.add(params[key])
                params[key] = stand_ins[params[key]]
        systems.append(dataclasses.replace(s, params=params))
    datasets: list[DatasetEntry] = []
    for d in cfg.datasets:
        members = GROUPS.get(d.spec, ())
        if any(m in stand_ins for m in members):
            entries = [DatasetEntry(m, d.split, d.tune_split, None, d.measures) for m in members]
        else:
            entries = [d]
        for e in entries:
            if e.spec in stand_ins:
                used.add(e.spec)
                bench = BENCHMARKS.get(e.spec)
                e = DatasetEntry(stand_ins[e.spec], e.split, e.tune_split, e.label or e.spec,
                                 e.measures or (bench.measures if bench else ()))
            datasets.append(e)
    unused = sorted(set(stand_ins if must_use is None else must_use) - used)
    if unused:
        raise ConfigError(f"{cfg.source}: --map names {', '.join(unused)}, which the benchmark does not use; its "
                          "models and datasets: " + ", ".join(dict.fromkeys(
                              [str(s.params[k]) for s in cfg.systems for k in ("model", "query_model")
                               if s.kind == "splade" and s.params.get(k)] + [d.spec for d in cfg.datasets])))
    return dataclasses.replace(cfg, systems=tuple(systems), datasets=tuple(datasets),
                               stand_ins={k: stand_ins[k] for k in stand_ins if k in used})
