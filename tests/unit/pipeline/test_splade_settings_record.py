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
    return SpladeSettings.from_flat(**{**kwargs, "model": settings["model"]}), settings


@pytest.mark.parametrize("machine", ["host", "bf16-cpu", "cuda"])
def test_the_default_keeps_the_committed_identity_on_any_machine(machine, monkeypatch):
    if machine == "bf16-cpu":
        simulate_bf16_cpu(monkeypatch)
    elif machine == "cuda":
        simulate_cuda(monkeypatch)
    settings, recorded = _committed_settings()
    assert settings.load.precision == "fp32" and settings.resolved_precision().name == "fp32"
    assert settings_record(settings) == recorded  # the committed run is reused, not recomputed


def test_explicit_fp32_and_auto_on_a_cpu_without_bf16_share_that_identity(monkeypatch):
    from lsr_eval import hardware

    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    record = settings_record(SpladeSettings.from_flat(model="m"))
    assert "precision" not in record and record["bf16"] is False
    assert record == settings_record(SpladeSettings.from_flat(model="m", precision="fp32"))
    assert record == settings_record(SpladeSettings.from_flat(model="m", precision="auto", device="cpu"))


def test_auto_resolving_to_bf16_is_another_experiment(monkeypatch):
    fp32 = settings_record(SpladeSettings.from_flat(model="m", precision="auto", device="cpu"))
    simulate_bf16_cpu(monkeypatch)
    bf16 = settings_record(SpladeSettings.from_flat(model="m", precision="auto", device="cpu"))
    assert bf16["precision"] == "bf16" and bf16["bf16"] is True and bf16 != fp32
    assert bf16 == settings_record(SpladeSettings.from_flat(model="m", precision="bf16"))   # the resolved name
    # one spelling: bf16 is recorded (the resolved precision); asked for, it still works for one release, warned
    with pytest.warns(DeprecationWarning, match="precision='bf16'"):
        assert settings_record(SpladeSettings.from_flat(model="m", bf16=True)) == bf16
    assert settings_record(SpladeSettings.from_record({"model": "m", "bf16": True})) == bf16
    assert settings_record(SpladeSettings.from_record({"model": "m", "bf16": True, "precision": None})) == bf16


def test_auto_on_cuda_is_bf16_but_the_device_is_not_identity(monkeypatch):
    simulate_cuda(monkeypatch)
    assert settings_record(SpladeSettings.from_flat(model="m", precision="auto"))["precision"] == "bf16"
    assert (settings_record(SpladeSettings.from_flat(model="m", device="cuda"))
            == settings_record(SpladeSettings.from_flat(model="m", device="cpu")))
    assert "device" not in settings_record(SpladeSettings.from_flat(model="m", device="cuda:0"))


@pytest.mark.parametrize("kwargs, message", [
    ({"precision": "fp16"}, "^precision must be one of auto, fp32, bf16, got 'fp16'$"),
    ({"device": "gpu"}, "^device must be one of auto, cpu, cuda, cuda:N, got 'gpu'$"),
    ({"device": "cuda:x"}, "^device must be one of auto, cpu, cuda, cuda:N, got 'cuda:x'$"),
])
def test_bad_precision_or_device_is_refused_at_construction(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SpladeSettings.from_flat(model="m", **kwargs)


def test_committed_manifests_still_name_their_settings():
    """Guard of the guard: the committed run read above exists and was made by the fp32 default."""
    path = COMMITTED / "runs" / "splade-tiny" / "scifact" / "manifest.json"
    assert Path(path).is_file()
    assert "precision" not in json.loads(path.read_text())["experiment"]["settings"]


def _committed_records() -> list[tuple[Path, dict]]:
    """Every committed SPLADE run's recorded settings (the experiments' identities)."""
    found = []
    for path in sorted((REPO / "results").rglob("manifest.json")):
        experiment = json.loads(path.read_text()).get("experiment")
        if isinstance(experiment, dict) and experiment.get("method") == "splade":
            found.append((path, experiment["settings"]))
    return found


@pytest.mark.precision_sensitive
def test_every_committed_identity_reads_back_byte_for_byte(cpu_kind):
    """The typed stages changed no run's identity: each committed record, read back into settings, is recorded again
    as the same JSON (manifests and cache keys sort their keys), so no cached run, encoding or index is recomputed."""
    records = _committed_records()
    assert len(records) >= 20, "the committed results hold SPLADE runs"
    assert any("prune_doc_top_k" in r for _, r in records) and any("engine_options" in r for _, r in records)
    for path, recorded in records:
        again = settings_record(SpladeSettings.from_record(recorded))
        # one committed run predates trust_remote_code (its identity gained the field then, not now)
        expected = {"trust_remote_code": False, **recorded}
        assert json.dumps(again, sort_keys=True) == json.dumps(expected, sort_keys=True), path


def test_each_flat_setting_has_one_stage_and_reads_back():
    from lsr_eval.pipeline.settings import STAGE_OF, STAGES

    flat = {"query_model": "q", "head_init": "identity", "rescale_k": 4.0, "trust_remote_code": True,
            "precision": "bf16", "device": "cpu", "max_length_q": 8, "max_length_d": 16, "doc_top_k": 5,
            "query_top_k": 3, "threshold": 0.1, "query_threshold": 0.2, "drop_special": False, "batch_size": 4,
            "shard_size": 10, "scale": 50, "prune_doc_top_k": 2, "prune_doc_threshold": 0.3, "engine": "pisa",
            "engine_options": {"block_size": 32}, "hits": 7, "max_clauses": 99, "remove_query": False}
    assert sorted(flat) == sorted(STAGE_OF)      # every setting is named here once
    s = SpladeSettings.from_flat(model="m", **flat)
    for name, value in flat.items():
        assert getattr(getattr(s, STAGE_OF[name]), name) == value
    assert isinstance(s.export.scale, int)   # as given: an integer scale keeps the cache slots it always had
    assert SpladeSettings.from_flat(model="m").export.scale == 100.0   # the default, a float as keys hold it
    assert s.flat() == {"model": "m", **flat} and list(s.flat())[0] == "model"
    assert s.replace(doc_top_k=9, hits=3).encode.doc_top_k == 9 and s.replace(hits=3).search.hits == 3
    assert set(STAGES) == {"load", "encode", "export", "search"}


@pytest.mark.parametrize("flat, message", [
    ({"doc_top_k": 0}, "^doc_top_k must be >= 1, got 0$"),
    ({"batch_size": 2.5}, "^batch_size must be an integer >= 1, got 2.5$"),
    ({"threshold": -1}, "^threshold must be >= 0, got -1$"),
    ({"drop_special": "yes"}, "^drop_special must be true or false, got 'yes'$"),
    ({"scale": 0}, "^scale must be > 0, got 0$"),
    ({"rescale_k": float("nan")}, "^rescale_k must be a number > 0 or null, got nan$"),
    ({"head_init": "zeros"}, "^head_init must be one of auto, identity, random, error, got 'zeros'$"),
    ({"engine": "faiss"}, "^engine must be one of anserini, pisa, seismic, bmp, qdrant, got 'faiss'$"),
    ({"hits": True}, "^hits must be an integer >= 1, got True$"),
    ({"remove_query": 1}, "^remove_query must be true, false or null, got 1$"),
    ({"doc_topk": 3}, "unknown setting 'doc_topk'; known: "),
])
def test_each_stage_refuses_a_bad_value_when_made(flat, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SpladeSettings.from_flat(model="m", **flat)


def test_every_committed_bm25_identity_reads_back_byte_for_byte():
    """The typed BM25 settings changed no run's identity: each committed BM25 experiment (flat, multifield, on PISA
    with its engine options) read back through ``Bm25Settings.from_record``, as ``lsr-eval reproduce`` replays it,
    is recorded again as the same JSON."""
    from types import SimpleNamespace

    from lsr_eval.pipeline.settings import Bm25Settings

    records = []
    for path in sorted((REPO / "results").rglob("manifest.json")):
        experiment = json.loads(path.read_text()).get("experiment")
        if isinstance(experiment, dict) and str(experiment.get("method", "")).startswith("bm25"):
            records.append((path, experiment))
    assert len(records) >= 10
    assert any("fields" in r for _, r in records) and any(r.get("engine_options") for _, r in records)
    for path, recorded in records:
        settings = Bm25Settings.from_record(recorded)
        again = {"method": settings.method, **settings.resolved(SimpleNamespace(remove_query=None))}
        expected = {k: v for k, v in recorded.items() if k != "dataset"}
        assert json.dumps(again, sort_keys=True) == json.dumps(expected, sort_keys=True), path
