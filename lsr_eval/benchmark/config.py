"""The benchmark YAML file, validated before anything runs (an unknown key or a missing value names itself)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from lsr_eval.errors import ConfigError

SystemKind = Literal["bm25", "splade"]


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
    """A retrieval system: ``bm25`` (``k1``, ``b``) or ``splade`` (the keyword arguments of
    :class:`lsr_eval.experiments.splade.SpladeSettings`, ``model`` required)."""

    name: str
    kind: SystemKind
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FusionEntry:
    name: str
    method: str
    runs: tuple[str, ...]
    norm: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    tune: bool = False
    metric: str = "nDCG@10"


@dataclass(frozen=True)
class SignificanceEntry:
    baseline: str
    test: str = "t-test"
    alpha: float = 0.05
    measures: tuple[str, ...] = ()


@dataclass(frozen=True)
class EfficiencyEntry:
    latency_queries: int = 100
    warmup: int = 10
    hits: int = 1000


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


def _build(cls, data: Any, where: str):
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(names))}")
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [n for n in required if n not in data]
    if missing:
        raise ConfigError(f"{where}: missing required key {missing[0]!r}")
    return data


def load_config(path: str | os.PathLike) -> BenchmarkConfig:
    """Read and validate a benchmark YAML file; relative paths are taken from the current directory."""
    import yaml

    where = str(path)
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{where}: {e}") from None
    _build(BenchmarkConfig, raw, where)
    datasets = []
    for i, d in enumerate(raw["datasets"]):
        d = _build(DatasetEntry, d if isinstance(d, dict) else {"spec": d}, f"{where}: datasets[{i}]")
        if d.get("measures"):
            from lsr_eval.evaluation.measures import parse_measures

            parse_measures(d["measures"])
        datasets.append(DatasetEntry(**{**d, "measures": tuple(d.get("measures") or ())}))
    datasets = tuple(datasets)
    systems = []
    for i, s in enumerate(raw["systems"]):
        s = dict(s) if isinstance(s, dict) else s
        w = f"{where}: systems[{i}]"
        if not isinstance(s, dict) or "name" not in s or "kind" not in s:
            raise ConfigError(f"{w}: needs 'name' and 'kind'")
        if s["kind"] not in get_args(SystemKind):
            raise ConfigError(f"{w}: kind {s['kind']!r}; allowed: {', '.join(get_args(SystemKind))}")
        params = {k: v for k, v in s.items() if k not in ("name", "kind")}
        _check_system_params(s["kind"], params, w)
        systems.append(SystemEntry(s["name"], s["kind"], params))
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: duplicate system names {names}")
    fusion = []
    for i, f in enumerate(raw.get("fusion") or []):
        f = _build(FusionEntry, f, f"{where}: fusion[{i}]")
        unknown_runs = [r for r in f["runs"] if r not in names]
        if unknown_runs:
            raise ConfigError(f"{where}: fusion[{i}] fuses unknown systems {unknown_runs}; systems: {names}")
        fusion.append(FusionEntry(**{**f, "runs": tuple(f["runs"])}))
    sig = raw.get("significance")
    if sig is not None:
        sig = SignificanceEntry(**{**_build(SignificanceEntry, sig, f"{where}: significance"),
                                   "measures": tuple(sig.get("measures", ()))})
        if sig.baseline not in names + [f.name for f in fusion]:
            raise ConfigError(f"{where}: significance baseline {sig.baseline!r} is not a system")
    eff = raw.get("efficiency")
    eff = EfficiencyEntry(**_build(EfficiencyEntry, eff, f"{where}: efficiency")) if eff is not None else None
    return BenchmarkConfig(raw["name"], raw["out"], datasets, tuple(systems), tuple(fusion), sig, eff, where)


def _check_system_params(kind: str, params: dict[str, Any], where: str) -> None:
    if kind == "bm25":
        from lsr_eval.experiments.bm25 import Bm25Settings

        allowed = {f.name for f in dataclasses.fields(Bm25Settings)}
    else:
        from lsr_eval.experiments.splade import SpladeSettings

        allowed = {f.name for f in dataclasses.fields(SpladeSettings)}
        if "model" not in params:
            raise ConfigError(f"{where}: a splade system needs 'model'")
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} for a {kind} system; allowed: {', '.join(sorted(allowed))}")
