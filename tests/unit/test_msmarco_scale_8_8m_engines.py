"""D5 (studies/msmarco_scale/full_engines.py): the plan's rule by hand and the committed plan made again from D4's
committed result; the collection's shards drawn from recorded random states equal one continuous draw and are
checked by digest; the committed outputs made again from their rows, Anserini's top k equal to PISA's at 8.8M, and
the run following its registration."""

from __future__ import annotations

import hashlib
import json
import lzma
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies" / "msmarco_scale"))
import full_engines  # noqa: E402
from test_msmarco_scale_memory import _close, _descends_from_registration  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "results" / "studies" / "msmarco-scale-8.8m-engines"
D4 = REPO / "results" / "studies" / "msmarco-scale-engines" / "engines.json"


def _d4(index_mib_per_million: dict[str, float]) -> dict:
    """A D4 result whose index stages use ``fixed 100 MiB + slope MiB per million postings`` exactly (2M 10% above
    the line for BMP) and take 1 s per million postings; searches 50 MiB; 100 postings a document."""
    stages, tuning = {}, {"2000000/q256": {"chosen": {"query_cut": 8, "heap_factor": 0.9}}}
    for n in (*full_engines.FIT_SIZES, full_engines.CHECK_SIZE):
        posts = 100 * n
        stages[f"{n}/generate"] = {"status": "ok", "postings": posts, "collection_bytes": 10 * posts}
        for engine in full_engines.ENGINES:
            mib = 100 + index_mib_per_million[engine] * posts / 1e6
            if engine == "bmp" and n == full_engines.CHECK_SIZE:
                mib *= 1.1
            stages[f"{n}/index-{engine}"] = {"status": "ok", "peak_rss_bytes": mib * 2**20,
                                              "seconds": posts / 1e6, "index_bytes": 2 * posts}
            stages[f"{n}/{full_engines.MODEL_STAGE[engine]}"] = {"status": "ok", "peak_rss_bytes": 50 * 2**20,
                                                                  "seconds": 1.0}
    return {"stages": stages, "tuning": tuning}


def test_the_rule_runs_each_engine_at_the_largest_size_that_fits():
    # 8.8M = 884M postings: at 20 MiB per million a build needs 17.3 GiB (refused), 4M 7.9 GiB (fits)
    # BMP at 90 MiB per million: 17.7 GiB at 2M, whose low end (the 2M check measured 10% above the line) is 16.2
    p = full_engines.plan(_d4({"pisa": 1, "anserini": 1, "bmp": 90, "seismic": 20}))
    assert p["runs_at"] == {"pisa": [full_engines.SIZE, 4_000_000], "anserini": [full_engines.SIZE],
                            "seismic": [4_000_000]}
    rows = {(r["engine"], r["stage"], r["size"]): r for r in p["rows"]}
    bmp2 = rows[("bmp", "index", 2_000_000)]
    # BMP's 2M was measured 10% above its line: the low end divides by 1 + |error| = 1 + 0.1 / 1.1
    assert bmp2["memory_error_at_2m"] == pytest.approx(0.1 / 1.1)
    assert bmp2["low_peak_rss_bytes"] == pytest.approx(bmp2["predicted_peak_rss_bytes"] / (1 + 0.1 / 1.1))
    assert rows[("seismic", "index", full_engines.SIZE)]["refused"].startswith("low end of the predicted peak")
    assert rows[("seismic", "index", 4_000_000)]["refused"] is None
    assert p["steps"][0] == f"index-anserini-{full_engines.SIZE}"      # the build that cannot resume goes first
    assert p["steps"].index("index-pisa-4000000") < p["steps"].index("search-seismic-default-4000000")
    assert p["seismic_tuned"] == {"query_cut": 8, "heap_factor": 0.9}


def test_the_rule_refuses_a_stage_predicted_over_the_time_limit():
    d4 = _d4({"pisa": 1, "anserini": 1, "bmp": 1, "seismic": 1})
    for n in (*full_engines.FIT_SIZES, full_engines.CHECK_SIZE):   # Anserini's build: 12 s per million postings
        d4["stages"][f"{n}/index-anserini"]["seconds"] = 12 * 100 * n / 1e6
    p = full_engines.plan(d4)
    assert p["runs_at"]["anserini"] == [4_000_000]          # 8.8M: 884M postings x 12 s = 2.9 h
    refused = next(r for r in p["rows"] if (r["engine"], r["stage"], r["size"]) == ("anserini", "index",
                                                                                     full_engines.SIZE))
    assert refused["refused"] == "predicted 2.95 h >= 2.5 h"


def test_the_committed_plan_is_made_from_d4s_committed_result():
    if not (RESULT / "plan.json").is_file():
        pytest.skip("D5's plan has not been committed")
    made = json.loads(json.dumps(full_engines.plan(json.loads(D4.read_text()))))
    committed = json.loads((RESULT / "plan.json").read_text())
    assert _close(made, committed)
    assert full_engines.plan_md(committed) == (RESULT / "plan.md").read_text()


def _fake_generator(work: Path) -> None:
    rng = np.random.default_rng(3)
    real = {f"r{i}": {f"t{j}": int(rng.integers(1, 9)) for j in rng.choice(40, 6, replace=False)} for i in range(30)}
    (work / "real.json").write_text(json.dumps(real))


def test_shards_drawn_from_recorded_states_equal_one_continuous_draw(tmp_path, monkeypatch):
    from scale import stage_generate

    _fake_generator(tmp_path)
    monkeypatch.setattr(full_engines, "SIZE", 25)
    monkeypatch.setattr(full_engines, "FILE_DOCS", 10)
    monkeypatch.setattr("scale.FILE_DOCS", 10)
    state = np.random.default_rng(full_engines.SEED).bit_generator.state
    shards = []
    for j in range(full_engines.shard_count()):
        shards.append({**full_engines.stage_shard(tmp_path, j, state), "state": state})
        state = shards[-1]["next_state"]
    assert [s["documents"] for s in shards] == [10, 10, 5]
    drawn = tmp_path / "drawn"
    (tmp_path / "collection-25").rename(drawn)
    stage_generate(tmp_path, 25)                                  # D2's and D4's stage: one draw, files of 10
    for j, s in enumerate(shards):
        name = f"docs-{j:05d}.jsonl"
        assert (drawn / name).read_bytes() == (tmp_path / "collection-25" / name).read_bytes(), name
        assert hashlib.sha256((drawn / name).read_bytes()).hexdigest() == s["sha256"]
    # shard 1 alone, drawn again from its recorded state: the same digest
    again = full_engines.stage_shard(tmp_path, 1, shards[1]["state"])
    assert again["sha256"] == shards[1]["sha256"] and again["next_state"] == shards[2]["state"]


def _committed() -> dict:
    if not (RESULT / "d5.json").is_file():
        pytest.skip("D5 has not run")
    return json.loads((RESULT / "d5.json").read_text())


def test_the_committed_collection_record_is_whole():
    if not (RESULT / "collection.json").is_file():
        pytest.skip("D5's collection has not been drawn")
    doc = json.loads((RESULT / "collection.json").read_text())
    shards = doc["shards"]
    assert [s["shard"] for s in shards] == list(range(len(shards)))
    assert all(b["state"] == a["next_state"] for a, b in zip(shards, shards[1:]))
    assert shards[0]["state"] == np.random.default_rng(full_engines.SEED).bit_generator.state
    assert [s["first"] for s in shards] == [j * full_engines.FILE_DOCS for j in range(len(shards))]
    assert doc["documents"] == sum(s["documents"] for s in shards)
    if len(shards) == full_engines.shard_count():
        assert doc["documents"] == full_engines.SIZE


def test_the_committed_result_is_made_again_from_its_rows():
    doc = _committed()
    assert full_engines.summary_md(doc) == (RESULT / "summary.md").read_text()
    assert _descends_from_registration(RESULT / "manifest.json", "## D5: every engine at 8,841,823 documents")


def test_anserini_returns_pisa_top_k_for_every_query_at_8_8m():
    doc = _committed()
    with lzma.open(RESULT / "digests.json.xz", "rt") as f:
        digests = json.load(f)
    compared = 0
    for qset, k in (("q256", 10), ("q256", 1000), ("all", 10)):
        n = full_engines.SIZE
        pisa, anserini = digests.get(f"{n}/pisa-exact/{qset}/k{k}"), digests.get(f"{n}/anserini-exact/{qset}/k{k}")
        if pisa is None or anserini is None:
            continue
        assert pisa.keys() == anserini.keys()
        differ = [q for q in pisa if pisa[q] != anserini[q]]
        assert differ == [], f"{qset}, k={k}: Anserini differs from PISA on {differ[:5]}"
        compared += 1
    ran = {r["engine"] for r in doc["rows"] if r["size"] == full_engines.SIZE}
    assert compared == (3 if {"pisa", "anserini"} <= ran else 0)


def test_the_page_table_and_the_figure_data_are_made_again(tmp_path):
    from report import d5_figure, d5_tables_md

    doc = _committed()
    assert d5_tables_md(doc) == (RESULT / "tables.md").read_text()
    drawn = d5_figure(json.loads(D4.read_text()), doc, tmp_path)
    assert full_engines.SIZE in set(drawn["documents"]) or not any(r["size"] == full_engines.SIZE
                                                                   for r in doc["rows"])
    name = "figures/latency-by-size"
    assert (tmp_path / name / "figure.csv").read_text() == (RESULT / name / "figure.csv").read_text()
    assert (RESULT / name / "figure.png").is_file()


def test_a_lost_work_folder_keeps_the_committed_rows_and_the_references_hits(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    (work / "full-engines").mkdir(parents=True)
    (out / "hits").mkdir(parents=True)
    exact = {"k10": {"hits": {"q1": [["d1", 9], ["d2", 7]]}, "ms": [1.0]}}
    with lzma.open(out / "hits" / "hits-pisa-exact-4000000.json.xz", "wt") as f:     # committed reference
        json.dump(exact, f)
    approx = {"k10": {"hits": {"q1": [["d1", 9], ["d3", 5]]}, "ms": [0.5]}}
    with lzma.open(work / "full-engines" / "hits-seismic-default-4000000.json.xz", "wt") as f:
        json.dump(approx, f)
    rec = {"status": "ok", "knobs": {}, "seconds": 1, "cpu_seconds": 1, "peak_rss_bytes": 1, "load_at_start": 0}
    stages = {"search-pisa-exact-4000000": rec, "search-seismic-default-4000000": rec,
              "search-seismic-tuned-4000000": rec}          # the tuned stage's hits went with the lost work/
    lost = {"size": 4_000_000, "engine": "seismic", "setting": "tuned", "qset": "q256", "k": 10}
    (out / "d5.json").write_text(json.dumps({"rows": [lost], "stages": stages}))
    with lzma.open(out / "digests.json.xz", "wt") as f:
        json.dump({"4000000/seismic-tuned/q256/k10": {"q1": "abc"}}, f)
    rows, digests = full_engines.measure(work, out, stages)
    got = {(r["engine"], r["setting"]): r for r in rows}
    assert got[("seismic", "default")]["recall_at_10"] == 0.5           # against the committed reference's hits
    assert got[("seismic", "tuned")] == lost and digests["4000000/seismic-tuned/q256/k10"] == {"q1": "abc"}
    assert "recall_at_10" not in got[("pisa", "exact")]


def test_the_inputs_are_committed_once_and_restored_or_refused_after(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    for name in full_engines.INPUTS:
        (work / name).write_text(json.dumps({"name": name}))
    assert full_engines.inputs(work, out) is None                        # first time: committed copies made
    (work / "real.json").unlink()
    assert full_engines.inputs(work, out) is None                        # a lost work/: restored
    assert json.loads((work / "real.json").read_text()) == {"name": "real.json"}
    (work / "queries.json").write_text("{}")                             # made again on another machine
    assert "queries.json differs from the committed" in full_engines.inputs(work, out)


def test_the_committed_inputs_are_those_the_collection_was_drawn_from():
    if not (RESULT / "inputs" / "real.json.xz").is_file():
        pytest.skip("D5's inputs have not been committed")
    doc = json.loads((RESULT / "collection.json").read_text())
    with lzma.open(RESULT / "inputs" / "real.json.xz", "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == doc["real_sha256"]
