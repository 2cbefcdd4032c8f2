"""Run-time precision choice: bf16 only where the hardware does it natively."""

from __future__ import annotations

import pytest
import torch

from lsr_eval.errors import ConfigError
from lsr_eval.models.encoder import SpladeEncoder
from lsr_eval.models.precision import cpu_flags, resolve_precision
from tiny_models import tiny_model


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
    with pytest.raises(ConfigError, match="precision='fp16': expected one of auto, fp32, bf16"):
        resolve_precision("fp16")
    with pytest.raises(ConfigError, match="precision='half'"):
        SpladeEncoder.from_pretrained(tiny_model("bert"), 16, precision="half")


def test_cpu_flags_of_this_machine_and_a_missing_file(tmp_path):
    assert isinstance(cpu_flags(), frozenset)
    assert cpu_flags(tmp_path / "absent") == frozenset()
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_bf16\n")
    assert cpu_flags(f) == frozenset({"fpu", "avx2", "amx_bf16"})


def test_encoder_bf16_flag_is_an_alias():
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 16, bf16=True)
    assert enc.precision == "bf16" and enc.bf16
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 16)
    assert enc.precision == "auto" and enc.bf16 == resolve_precision("auto", "cpu").bf16


def test_every_precision_but_auto_has_a_dtype():
    from lsr_eval.models.options import PRECISIONS
    from lsr_eval.models.precision import DTYPES

    assert PRECISIONS == ("auto", *DTYPES)
