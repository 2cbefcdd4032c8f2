"""The run identity of a SPLADE experiment (``settings_record``): precision ``auto`` keeps the identity of the fp32
runs made before it existed where it resolves to fp32, and gets its own where it resolves to bf16 (a cached fp32
run must not be reused for a bf16 one)."""

from __future__ import annotations

from lsr_eval.experiments.splade import SpladeSettings, settings_record
from lsr_eval.models import precision


def test_auto_on_a_cpu_without_bf16_keeps_the_fp32_identity(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    record = settings_record(SpladeSettings(model="m"))
    assert "precision" not in record and "precision_resolved" not in record
    assert record == settings_record(SpladeSettings(model="m", bf16=False))


def test_auto_resolving_to_bf16_is_another_experiment(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    record = settings_record(SpladeSettings(model="m"))
    assert record["precision_resolved"] == "bf16"
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset())
    assert settings_record(SpladeSettings(model="m")) != record
