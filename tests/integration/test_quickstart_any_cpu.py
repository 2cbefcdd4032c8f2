"""The README's SciFact number on any machine: the quickstart's splade-tiny row, on this CPU and on it with native
bf16 simulated (what AVX-512 BF16 / AMX servers and GPUs report), equals the committed result to four decimals.
With ``precision: auto`` as the default, the simulated run would compute in bf16 and print 0.6427 instead of 0.6436;
the test refuses that before any work."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import REPO, quickstart_measures, simulate_bf16_cpu

COMMITTED = REPO / "results" / "benchmarks" / "scifact-splade-tiny" / "runs" / "splade-tiny" / "scifact"


@pytest.mark.slow
@pytest.mark.parametrize("cpu", ["no-bf16-cpu", "bf16-cpu"])
def test_quickstart_splade_row_equals_the_committed_one(cpu, scifact_impact, monkeypatch, tmp_path):
    from lsr_eval.pipeline.splade import run_splade

    if cpu == "bf16-cpu":
        simulate_bf16_cpu(monkeypatch)
    settings = scifact_impact.settings
    assert settings.resolved_precision().name == "fp32", "the quickstart would not compute in fp32 on this CPU"
    committed = json.loads((COMMITTED / "metrics.json").read_text())
    dataset = copy.copy(scifact_impact.dataset)
    dataset.measures = quickstart_measures()   # what the benchmark evaluates, as it sets them
    result = run_splade(dataset, tmp_path / "run", scifact_impact.work, settings, threads=2)
    assert set(committed) <= set(result.metrics)
    assert {m: round(result.metrics[m], 4) for m in committed} == {m: round(v, 4) for m, v in committed.items()}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["inference"]["precision"]["documents"]["name"] == "fp32"
    if cpu == "bf16-cpu":
        assert manifest["machine"]["cpu_bf16_native"]   # the manifest names the CPU it ran on
