"""Stand-ins (``lsr-eval benchmark --map ID=PATH``, ``--map-file``) and a model that cannot load failing once per
benchmark, named on every row it would have filled."""

from __future__ import annotations

import json

import huggingface_hub
import pytest
import yaml
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir

from lsr_eval.benchmark import run as bench_run
from lsr_eval.benchmark.config import apply_stand_ins, load_config, read_stand_ins
from lsr_eval.data.registry import BENCHMARKS, GROUPS
from lsr_eval.errors import ConfigError
from lsr_eval.runs.trec import write_run

MISSING = "nobody-here/no-such-model"


def _write(tmp_path, cfg: dict) -> str:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_read_stand_ins_file_relative_and_items_win(tmp_path):
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "m.yaml").write_text("org/a: models/a\nscifact: data/scifact\n")
    got = read_stand_ins(["org/a=/abs/a"], tmp_path / "maps" / "m.yaml")
    assert got == {"org/a": "/abs/a", "scifact": str(tmp_path / "maps" / "data" / "scifact")}
    with pytest.raises(ConfigError, match="expected ID=PATH"):
        read_stand_ins(["org/a"])
    (tmp_path / "bad.yaml").write_text("- a\n")
    with pytest.raises(ConfigError, match="bad.yaml: stand-ins must be a mapping of strings to strings"):
        read_stand_ins((), tmp_path / "bad.yaml")


def test_apply_stand_ins_models_datasets_and_groups(tmp_path):
    cfg = load_config(_write(tmp_path, {
        "name": "x", "out": str(tmp_path / "out"),
        "datasets": [{"spec": "msmarco-dev"}, {"spec": "beir-13", "measures": ["nDCG@10"]}],
        "systems": [{"name": "s", "kind": "splade", "model": "org/doc", "query_model": "org/query"}]}))
    mapped = apply_stand_ins(cfg, {"org/query": "/m/q", "msmarco-dev": "/d/dev", "scifact": "/d/scifact"})
    assert mapped.systems[0].params["model"] == "org/doc" and mapped.systems[0].params["query_model"] == "/m/q"
    dev = mapped.datasets[0]
    assert (dev.spec, dev.label, dev.measures) == ("/d/dev", "msmarco-dev", BENCHMARKS["msmarco-dev"].measures)
    beir = mapped.datasets[1:]
    assert [d.label or d.spec for d in beir] == list(GROUPS["beir-13"])   # the group became its 13 members
    assert [(d.spec, d.label) for d in beir if d.spec.startswith("/")] == [("/d/scifact", "scifact")]
    assert all(d.measures == ("nDCG@10",) for d in beir)
    assert mapped.stand_ins == {"org/query": "/m/q", "msmarco-dev": "/d/dev", "scifact": "/d/scifact"}
    assert apply_stand_ins(cfg, {}) is cfg
    with pytest.raises(ConfigError, match="--map names org/typo, which the benchmark does not use"):
        apply_stand_ins(cfg, {"org/typo": "/m"})
    # a map file's other entries (a whole mirror) are not refused, and only what was used is recorded
    mirror = apply_stand_ins(cfg, {"org/doc": "/m/d", "org/other": "/m/o"}, must_use=[])
    assert mirror.stand_ins == {"org/doc": "/m/d"} and mirror.systems[0].params["model"] == "/m/d"


def test_a_model_that_cannot_load_is_tried_once(tmp_path, monkeypatch):
    for name in ("one", "two"):
        write_beir(tmp_path / name, TINY_DOCS, TINY_QUERIES, TINY_QRELS)
    write_run({"q1": {"d1": 2.0}, "q2": {"d2": 1.0}, "q3": {"d3": 1.0}}, tmp_path / "a.trec")
    cfg = load_config(_write(tmp_path, {
        "name": "fail-once", "out": str(tmp_path / "results"),
        "datasets": [{"spec": str(tmp_path / n), "label": n, "measures": ["nDCG@10"]} for n in ("one", "two")],
        "systems": [{"name": "a", "kind": "run", "path": "a.trec"},
                    {"name": "pair", "kind": "splade", "model": "splade-tiny", "query_model": MISSING},
                    {"name": "alone", "kind": "splade", "model": MISSING}],
        "fusion": [{"name": "rrf", "method": "rrf", "runs": ["a", "pair"]}]}))
    calls = []
    real = huggingface_hub.hf_hub_download

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", counting)
    monkeypatch.setattr(bench_run, "_hub_reachable", lambda: False)   # this machine has no network anyway
    table = bench_run.run_benchmark(cfg, tmp_path / "work", threads=1)
    assert calls == [MISSING]    # one try for the benchmark: two systems x two datasets use it
    rows = {(r["dataset"], r["system"]): r for r in table.to_dict("records")}
    for d in ("one", "two"):
        assert rows[(d, "a")]["status"] == "ok"
        for s in ("pair", "alone"):
            status = rows[(d, s)]["status"]
            assert status.startswith(f"failed: model {MISSING} cannot be loaded: not in the local hub cache")
            assert "(tried once, on one)" in status and f"--map {MISSING}=FOLDER" in status
        assert rows[(d, "rrf")]["status"] == "not run: inputs failed (pair)"
    assert json.loads((tmp_path / "results" / "manifest.json").read_text())["counts"]["failed"] == 4
