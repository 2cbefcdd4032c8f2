"""A BM25 run replayed from its manifest (``lsr-eval reproduce``) is the same experiment: BM25 on PISA and the
multifield run keep their engine, engine options and fields (lsr_eval/reproduce/stage.py through
``Bm25Settings.from_record``), and every recorded setting reads back into the same settings."""

from __future__ import annotations

import json

import pytest
from conftest import tiny_beir  # noqa: F401  (fixture)

from lsr_eval.data.datasets import load_dataset
from lsr_eval.pipeline.bm25 import Bm25Settings, run_bm25
from lsr_eval.reproduce.compare import REPRODUCED
from lsr_eval.reproduce.jobs import Options, reproduce_result
from lsr_eval.reproduce.results import load_result

SETTINGS = {
    "flat": Bm25Settings(),
    "multifield": Bm25Settings(fields=("title", "text"), k1=1.2, b=0.75, hits=10),
    "pisa": Bm25Settings(engine="pisa", engine_options={"query_algorithm": "wand"}, remove_query=False),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_every_recorded_setting_reads_back(name, tiny_beir):  # noqa: F811
    settings = SETTINGS[name]
    record = settings.resolved(load_dataset(str(tiny_beir), "test"))
    again = Bm25Settings.from_record(record)
    assert again.resolved(load_dataset(str(tiny_beir), "test")) == record
    assert (again.engine, again.fields, dict(again.engine_options or {})) == \
        (settings.engine, settings.fields, dict(settings.engine_options or {}))


@pytest.mark.parametrize("name", ["multifield", "pisa"])
def test_a_replayed_bm25_run_is_the_same_experiment(name, tiny_beir, tmp_path):  # noqa: F811
    folder = tmp_path / f"bm25-{name}"
    run_bm25(load_dataset(str(tiny_beir), "test"), folder, tmp_path / "work", SETTINGS[name], threads=1)
    outcomes = reproduce_result(load_result(folder), Options(out=tmp_path / "repro", work_dir=tmp_path / "work2"))
    assert [o.status for o in outcomes] == [REPRODUCED], [(o.row, o.status, o.detail) for o in outcomes]
    recorded = json.loads((folder / "manifest.json").read_text())["experiment"]
    replayed = [json.loads(p.read_text())["experiment"] for p in (tmp_path / "repro").rglob("manifest.json")
                if json.loads(p.read_text()).get("stage") == "bm25"]
    assert replayed and all(r == recorded for r in replayed)
    assert recorded.get("engine", "anserini") == SETTINGS[name].engine
