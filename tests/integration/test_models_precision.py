"""Run-time precision choice: bf16 only where the hardware does it natively."""

from __future__ import annotations

import pytest
import torch
from conftest import simulate_bf16_cpu
from tiny_models import tiny_model

from lsr_eval import hardware
from lsr_eval.errors import ConfigError
from lsr_eval.hardware import cpu_flags
from lsr_eval.models.encoder import SpladeEncoder
from lsr_eval.models.precision import resolve_precision


@pytest.mark.parametrize("flags, expected", [
    ({"avx2", "avx512f", "avx512_vnni"}, "fp32"),
    ({"avx2", "avx512f", "avx512_bf16"}, "bf16"),
    ({"avx2", "amx_bf16", "amx_tile"}, "bf16"),
    (set(), "fp32"),
])
def test_auto_on_cpu_reads_the_flags(flags, expected):
    p = resolve_precision("auto", "cpu", frozenset(flags))
    assert p.name == expected and p.requested == "auto" and p.dtype == {"fp32": torch.float32,
                                                                         "bf16": torch.bfloat16}[expected]
    assert ("lacks" in p.reason) == (expected == "fp32")


def test_explicit_choice_wins():
    assert resolve_precision("bf16", "cpu", frozenset()).name == "bf16"
    assert resolve_precision("fp32", "cpu", frozenset({"amx_bf16"})).to_dict() == {
        "name": "fp32", "requested": "fp32", "reason": "requested"}


def test_unknown_precision_is_refused():
    with pytest.raises(ConfigError, match="^precision must be one of auto, fp32, bf16, got 'fp16'$"):
        resolve_precision("fp16")
    with pytest.raises(ConfigError, match="^precision must be one of auto, fp32, bf16, got 'half'$"):
        SpladeEncoder.from_pretrained(tiny_model("bert"), 16, precision="half")


def test_cpu_flags_of_this_machine_and_a_missing_file(tmp_path):
    assert isinstance(cpu_flags(), frozenset)
    assert cpu_flags(tmp_path / "absent") == frozenset()
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_bf16\n")
    assert cpu_flags(f) == frozenset({"fpu", "avx2", "amx_bf16"})


@pytest.mark.parametrize("cpu", ["no-bf16-cpu", "bf16-cpu"])
def test_encoder_default_is_fp32_on_any_cpu_and_bf16_is_an_alias(cpu, monkeypatch):
    if cpu == "bf16-cpu":
        simulate_bf16_cpu(monkeypatch)
        assert resolve_precision("auto", "cpu").name == "bf16"  # the simulation took: auto would be bf16 here
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 16)
    assert enc.precision == "fp32" and not enc.bf16 and enc.resolved_precision().name == "fp32"
    assert enc.describe()["precision"] == "fp32"
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 16, bf16=True)
    assert enc.precision == "bf16" and enc.bf16 and enc.describe()["precision"] == "bf16"


def test_the_default_is_owned_once():
    import inspect

    from lsr_eval.models.options import DEFAULT_PRECISION
    from lsr_eval.models.splade import SpladeModel
    from lsr_eval.pipeline.splade import SpladeSettings

    assert DEFAULT_PRECISION == "fp32"
    assert SpladeSettings.from_flat(model="m").load.precision == DEFAULT_PRECISION
    for fn in (SpladeEncoder.__init__, SpladeEncoder.from_pretrained, SpladeModel.from_pretrained, resolve_precision):
        assert inspect.signature(fn).parameters["precision" if fn is not resolve_precision else "requested"
                                                ].default == DEFAULT_PRECISION


def test_hardware_describes_flags_and_bf16(monkeypatch):
    record = hardware.describe()
    assert set(record["cpu_flags"]) <= set(hardware.RELEVANT_FLAGS) and record["cores"] >= 1
    simulate_bf16_cpu(monkeypatch)
    record = hardware.describe()
    assert record["cpu_bf16_native"] and "avx512_bf16" in record["cpu_flags"] and "amx_bf16" in record["cpu_flags"]


NATIVE_BF16 = bool(set(hardware.CPU_BF16_FLAGS) & cpu_flags())


@pytest.mark.skipif(not NATIVE_BF16, reason="this CPU emulates bf16 (no avx512_bf16/amx_bf16): splade-tiny's bf16 "
                                            "tolerance is checked where bf16 is native (tiny models: everywhere)")
def test_splade_tiny_bf16_within_bf16_tolerance_of_fp32(scifact_dir):
    """splade-tiny, 64 SciFact documents: bf16 moved weights (up to ~2.5) by at most 0.052 and by 6.5e-5 on
    average where measured (emulated bf16 on an AVX2 EPYC; the same roundings as native bf16, sums in fp32)."""
    import json

    from lsr_eval.models.offline import resolve_model

    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line, _ in zip(f, range(64))]
    enc = SpladeEncoder.from_pretrained(resolve_model("splade-tiny"), 256)
    fp32 = enc.encode(texts, precision="fp32").weights
    diff = (enc.encode(texts, precision="bf16").weights - fp32).abs()
    assert 0 < float(diff.max()) < 2 ** -3 and float(diff.mean()) < 5e-4


@pytest.mark.precision_sensitive
def test_the_simulated_cpu_decides_not_the_host(cpu_kind):
    """Every test runs on a simulated CPU (tests/conftest.py): ``auto`` follows the simulation on any host."""
    expected = "bf16" if cpu_kind == "bf16-cpu" else "fp32"
    assert bool(hardware.native_bf16_flags()) is (cpu_kind == "bf16-cpu")
    assert resolve_precision("auto", "cpu").name == expected
    assert hardware.describe()["cpu_bf16_native"] is (cpu_kind == "bf16-cpu")
