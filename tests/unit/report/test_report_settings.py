"""The settings note of a table: shared settings once, the rows that share others, "rows differ in" each setting
whose values differ, and "settings unknown" for a row without a manifest; read from the runs' manifests."""

from __future__ import annotations

import json

from lsr_eval.report.settings import UNKNOWN, row_settings, run_manifest, settings_notes, table_settings_notes


def _splade(max_length_q=None, model_q=256, engine=None):
    return {"stage": "splade", "experiment": {"remove_query": True, "settings": {
        "max_length_q": max_length_q, "max_length_d": 128, "query_top_k": 64, "doc_top_k": 256, "threshold": 0.0,
        "scale": 100.0, "bf16": False, "hits": 1000, **({"engine": engine} if engine else {})}},
        "model": {"encoders": {"query": {"max_length": model_q}, "document": {"max_length": 512}}}}


def test_rows_that_differ_in_query_max_length_are_flagged():
    notes = settings_notes({"a": row_settings(_splade(256)), "b": row_settings(_splade(512)),
                            "c": row_settings(_splade(None, model_q=512))})   # the model's own 512
    assert "rows differ in query max length: 256 (a) vs 512 (b, c)" in notes
    shared = notes[0]
    assert shared.startswith("settings of every row: ") and "document max length 128" in shared
    assert "self hits removed yes" in shared and "quantisation scale 100" in shared


def test_settings_unknown_is_said_and_partial_settings_name_their_rows():
    bm25 = {"stage": "bm25", "experiment": {"method": "bm25-flat", "k1": 0.9, "b": 0.4, "hits": 1000,
                                            "remove_query": True}}
    notes = settings_notes({"bm25": row_settings(bm25), "splade": row_settings(_splade(64)), "theirs": None})
    assert notes[0].startswith("settings of every row with a manifest: engine anserini; depth 1000; "
                               "self hits removed yes")
    assert "settings of bm25: bm25 bm25-flat k1 0.9 b 0.4" in notes
    assert any(n.startswith("settings of splade: query encoder the model's; query max length 64") for n in notes)
    assert notes[-1].startswith(f"{UNKNOWN}: theirs")
    assert settings_notes({"x": None}) == [f"{UNKNOWN}: x (no lsr-eval manifest: a run made elsewhere, or none "
                                           "beside it)"]
    assert row_settings({"stage": "run-file", "experiment": {}}) is None


def test_a_benchmark_folder_and_a_run_file_find_their_manifests(tmp_path):
    for system, engine in (("s1", None), ("s2", "pisa")):
        folder = tmp_path / "runs" / system / "d"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps(_splade(64, engine=engine)))
    notes = table_settings_notes(tmp_path, [("d", "s1"), ("d", "s2"), ("d", "gone")])
    assert "rows differ in engine: anserini (s1) vs pisa (s2)" in notes and notes[-1].startswith(f"{UNKNOWN}: gone")
    run = tmp_path / "x.trec"
    run.write_text("q Q0 d 1 1.0 t\n")
    assert run_manifest(run) is None
    (tmp_path / "x.trec.manifest.json").write_text(json.dumps({"stage": "bm25"}))
    assert run_manifest(run) == {"stage": "bm25"}
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.trec").write_text("q Q0 d 1 1.0 t\n")
    (out / "manifest.json").write_text(json.dumps({"stage": "splade", "outputs": ["run.trec"]}))
    assert run_manifest(out / "run.trec")["stage"] == "splade"


def test_bm25_on_pisa_names_its_engine():
    flat = {"stage": "bm25", "experiment": {"method": "bm25-flat", "k1": 0.9, "b": 0.4, "hits": 1000}}
    pisa = {"stage": "bm25", "experiment": {**flat["experiment"], "engine": "pisa",
                                            "engine_options": {"query_algorithm": "block_max_wand"}}}
    notes = settings_notes({"bm25": row_settings(flat), "bm25-pisa": row_settings(pisa)})
    assert 'rows differ in engine: anserini (bm25) vs pisa {"query_algorithm": "block_max_wand"} (bm25-pisa)' in notes
