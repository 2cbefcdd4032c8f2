"""Device strings and ``auto``: checked, resolved with and without CUDA, passed by every command that runs a
model (encode, splade, benchmark, train) and recorded in manifests."""

from __future__ import annotations

import argparse
import json

import pytest
import torch
from conftest import simulate_cuda

from lsr_eval.errors import ConfigError
from lsr_eval.models.device import resolve_device
from lsr_eval.models.options import check_device


@pytest.mark.parametrize("name", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_device_strings_accepted(name):
    assert check_device(name) == name


@pytest.mark.parametrize("name", ["gpu", "cuda:", "cuda:-1", "CPU", "cuda0", "", None, 0])
def test_device_strings_refused_with_the_forms(name):
    with pytest.raises(ConfigError, match="device must be one of auto, cpu, cuda, cuda:N, got "):
        check_device(name)


def test_auto_is_the_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ConfigError, match="device='cuda': CUDA is not available"):
        resolve_device("cuda")


def test_auto_picks_cuda_local_rank_when_cuda_is_reported(monkeypatch):
    simulate_cuda(monkeypatch, count=2)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert resolve_device("auto") == torch.device("cuda", 0)
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert resolve_device("auto") == torch.device("cuda", 1) == resolve_device("cuda")
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ConfigError, match=r"cuda:2 does not exist \(2 CUDA device"):
        resolve_device("cuda:2")


def test_auto_precision_follows_the_device(monkeypatch):
    from lsr_eval.models.precision import resolve_precision

    simulate_cuda(monkeypatch)
    assert resolve_precision("auto", resolve_device("auto")).name == "bf16"
    assert resolve_precision(device=resolve_device("auto")).name == "fp32"  # the default is fp32 everywhere


def _parse(module, argv):
    p = argparse.ArgumentParser()
    module.add_arguments(p)
    return p.parse_args(argv)


@pytest.mark.parametrize("command", ["encode", "splade"])
def test_model_commands_take_a_device(command):
    import importlib

    from lsr_eval.commands._model_args import settings_from_args

    module = importlib.import_module(f"lsr_eval.commands.{command}")
    args = _parse(module, ["splade-tiny", "scifact", "--out", "x", "--device", "cpu"])
    assert settings_from_args(args).load.device == "cpu"
    assert settings_from_args(_parse(module, ["splade-tiny", "scifact", "--out", "x"])).load.device == "auto"
    assert settings_from_args(_parse(module, ["splade-tiny", "scifact", "--out", "x"])).load.precision == "fp32"
    with pytest.raises(SystemExit):
        _parse(module, ["splade-tiny", "scifact", "--out", "x", "--device", "tpu"])


def test_benchmark_takes_a_device_and_yaml_device_is_checked(tmp_path):
    from lsr_eval.benchmark.config import load_config
    from lsr_eval.commands import benchmark

    assert _parse(benchmark, ["c.yaml", "--device", "cuda:1"]).device == "cuda:1"
    with pytest.raises(SystemExit):
        _parse(benchmark, ["c.yaml", "--device", "gpu"])
    config = tmp_path / "b.yaml"
    for device, ok in (("cpu", True), ("cuda:0", True), ("gpu0", False)):
        config.write_text(f"name: t\nout: {tmp_path / 'out'}\ndatasets: [{{spec: scifact}}]\nsystems:\n"
                          f"  - {{name: s, kind: splade, model: splade-tiny, device: '{device}'}}\n")
        if ok:
            assert load_config(config).systems[0].params["device"] == device
        else:
            with pytest.raises(ConfigError, match=r"b\.yaml: systems\[0\]: device must be one of auto, cpu, cuda, "
                                                  r"cuda:N, got 'gpu0'$"):
                load_config(config)


def test_train_device_resolves_through_the_same_rule(monkeypatch):
    from lsr_eval.train.config import TrainConfig
    from lsr_eval.train.distributed import DistInfo
    from lsr_eval.train.trainer import pick_device, training_precision

    info = DistInfo(0, 1, 0, False, False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = pick_device("auto", info)
    assert cpu == torch.device("cpu")
    train = TrainConfig(steps=1, batch_size=1)
    assert train.bf16 is None
    assert training_precision(train, cpu).name == "fp32"  # this CPU's native bf16 decides, never forced


def test_splade_run_records_device_and_precision(tiny_beir, tmp_path):
    from tiny_models import tiny_model

    from lsr_eval.data.datasets import load_dataset
    from lsr_eval.pipeline.splade import SpladeSettings, run_splade

    s = SpladeSettings.from_flat(model=tiny_model("bert"), device="cpu", max_length_d=32, max_length_q=16)
    run_splade(load_dataset(str(tiny_beir), "test"), tmp_path / "out", tmp_path / "work", s, threads=1)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["inference"]["device"] == "cpu"
    assert manifest["inference"]["precision"]["documents"]["name"] == "fp32"
    assert manifest["inference"]["precision"]["queries"]["requested"] == "fp32"
    hw = manifest["machine"]
    assert hw["cpu"] and isinstance(hw["cpu_flags"], list) and hw["cores"] >= 1 and hw["memory_bytes"] > 0
    assert isinstance(hw["cpu_bf16_native"], bool)
