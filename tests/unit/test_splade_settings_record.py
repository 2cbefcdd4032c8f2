"""The run identity of a SPLADE experiment (``settings_record``) is made of the *resolved* precision: the fp32
default keeps the identity of every fp32 run made before precisions were resolved (the committed ones included),
whatever the CPU or GPU; ``auto`` resolving to bf16 is another experiment; the device is never part of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO, simulate_bf16_cpu, simulate_cuda

from lsr_eval.errors import ConfigError
from lsr_eval.pipeline.splade import SpladeSettings, settings_record

COMMITTED = REPO / "results" / "benchmarks" / "scifact-splade-tiny"


def _committed_settings() -> tuple[SpladeSettings, dict]:
    """The splade-tiny system of the committed quickstart benchmark, and the settings its run recorded."""
    cfg = yaml.safe_load((REPO / "pipelines" / "benchmarks" / "scifact-splade-tiny.yaml").read_text())
    params = next(s for s in cfg["systems"] if s["kind"] == "splade")
    recorded = json.loads((COMMITTED / "runs" / params["name"] / "scifact" / "manifest.json").read_text())
    settings = recorded["experiment"]["settings"]
    kwargs = {k: v for k, v in params.items() if k not in ("name", "kind")}
    return SpladeSettings(**{**kwargs, "model": settings["model"]}), settings


@pytest.mark.parametrize("machine", ["host", "bf16-cpu", "cuda"])
def test_the_default_keeps_the_committed_identity_on_any_machine(machine, monkeypatch):
    if machine == "bf16-cpu":
        simulate_bf16_cpu(monkeypatch)
    elif machine == "cuda":
        simulate_cuda(monkeypatch)
    settings, recorded = _committed_settings()
    assert settings.precision == "fp32" and settings.resolved_precision().name == "fp32"
    assert settings_record(settings) == recorded  # the committed run is reused, not recomputed


def test_explicit_fp32_and_auto_on_a_cpu_without_bf16_share_that_identity(monkeypatch):
    from lsr_eval import hardware

    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    record = settings_record(SpladeSettings(model="m"))
    assert "precision" not in record and record["bf16"] is False
    assert record == settings_record(SpladeSettings(model="m", precision="fp32"))
    assert record == settings_record(SpladeSettings(model="m", precision="auto", device="cpu"))


def test_auto_resolving_to_bf16_is_another_experiment(monkeypatch):
    fp32 = settings_record(SpladeSettings(model="m", precision="auto", device="cpu"))
    simulate_bf16_cpu(monkeypatch)
    bf16 = settings_record(SpladeSettings(model="m", precision="auto", device="cpu"))
    assert bf16["precision"] == "bf16" and bf16["bf16"] is True and bf16 != fp32
    assert bf16 == settings_record(SpladeSettings(model="m", precision="bf16"))   # the resolved name, not the alias
    assert bf16 == settings_record(SpladeSettings(model="m", bf16=True))


def test_auto_on_cuda_is_bf16_but_the_device_is_not_identity(monkeypatch):
    simulate_cuda(monkeypatch)
    assert settings_record(SpladeSettings(model="m", precision="auto"))["precision"] == "bf16"
    assert (settings_record(SpladeSettings(model="m", device="cuda"))
            == settings_record(SpladeSettings(model="m", device="cpu")))
    assert "device" not in settings_record(SpladeSettings(model="m", device="cuda:0"))


@pytest.mark.parametrize("kwargs, message", [
    ({"precision": "fp16"}, "precision='fp16': expected one of auto, fp32, bf16"),
    ({"device": "gpu"}, "device='gpu': expected one of auto, cpu, cuda, cuda:N"),
    ({"device": "cuda:x"}, "device='cuda:x'"),
])
def test_bad_precision_or_device_is_refused_at_construction(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SpladeSettings(model="m", **kwargs)


def test_committed_manifests_still_name_their_settings():
    """Guard of the guard: the committed run read above exists and was made by the fp32 default."""
    path = COMMITTED / "runs" / "splade-tiny" / "scifact" / "manifest.json"
    assert Path(path).is_file()
    assert "precision" not in json.loads(path.read_text())["experiment"]["settings"]
