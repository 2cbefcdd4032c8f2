"""studies/scale_curve/run.py: the synthetic generator, the fits, the budget, and the whole pipeline on a tiny
collection (Anserini, plus PISA and Seismic where their packages are installed)."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lsr_eval.export.queries import read_query_jsonl
from studies.harness.agreement import run_digests
from studies.scale_curve.child import GENERATED, ensure_collection
from studies.scale_curve.curve import run_child
from studies.scale_curve.scaling import (
    MSMARCO_PASSAGES,
    STAGES,
    budget_decision,
    close_result,
    compare_exact,
    fit_stage,
    predict,
)
from studies.scale_curve.synthetic import DataSpec, ZipfSampler, doc_id, draw_vectors, query_id
from studies.scale_curve.synthetic_export import write_synthetic

REPO = Path(__file__).resolve().parents[2]
#: The script's own command line: the pipeline runs as a command, its children as the script with ``--one``.
SCRIPT = [sys.executable, str(REPO / "studies" / "scale_curve" / "run.py")]


def _main(argv: list[str]) -> int:
    """studies/scale_curve/run.py on ``argv``, in a process of its own; its status."""
    return subprocess.run([*SCRIPT, *argv], check=False).returncode

SPEC = DataSpec(queries=20, chunk=200, file_docs=300, seed=5)


def _lines(folder: Path) -> list[dict]:
    out = []
    for path in sorted((folder / "collection").glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def test_draw_vectors_distinct_terms_exact_lengths_zipf():
    sampler = ZipfSampler(2000, 1.1)
    rng = np.random.default_rng(0)
    lengths = np.array([1, 5, 120, 400, 2000, 3000, 60] * 50)
    offsets, terms, impacts = draw_vectors(rng, lengths, sampler, 20.0, 0.8)
    assert np.diff(offsets).tolist() == np.minimum(lengths, 2000).tolist()
    for i in range(len(lengths)):
        row = terms[offsets[i]:offsets[i + 1]].tolist()
        assert len(set(row)) == len(row), f"row {i} repeats a term"
    assert terms.min() >= 0 and terms.max() < 2000
    assert impacts.min() >= 1 and impacts.max() <= 255 and len(impacts) == len(terms)
    # Zipf: the head term is drawn far more often than a tail term (rows shorter than the vocabulary)
    short = np.concatenate([terms[offsets[i]:offsets[i + 1]] for i in range(len(lengths)) if lengths[i] <= 120])
    df = np.bincount(short, minlength=2000)
    assert df[0] > 10 * max(df[1500:].max(), 1)


def test_zipf_sampler_matches_a_binary_search():
    sampler = ZipfSampler(30522, 1.1)
    u = np.random.default_rng(1).random(200_000)
    u[:3] = [0.0, 0.999999999999, 0.5]
    exact = np.searchsorted(np.cumsum(sampler.probabilities()), u, side="right").clip(0, 30521)
    assert (sampler(u) == exact).all()
    assert abs(sampler.probabilities().sum() - 1) < 1e-9


def test_generate_counts_files_queries_and_determinism(tmp_path):
    meta = write_synthetic(tmp_path / "a", 500, SPEC)
    docs = _lines(tmp_path / "a")
    assert meta["documents"] == len(docs) == 500
    assert sorted(p.name for p in (tmp_path / "a" / "collection").iterdir()) == ["part-000.jsonl", "part-001.jsonl"]
    assert len((tmp_path / "a" / "collection" / "part-000.jsonl").read_text().splitlines()) == 300
    assert [d["id"] for d in docs] == [doc_id(i) for i in range(500)]
    assert meta["postings"] == sum(len(d["vector"]) for d in docs)
    for d in docs:
        assert d["contents"] == "" and d["vector"]
        assert all(isinstance(w, int) and 1 <= w <= 255 for w in d["vector"].values())
        assert all(t.startswith("t") and len(t) == 6 for t in d["vector"])
    queries = read_query_jsonl(tmp_path / "a" / "queries.jsonl")
    qrels = json.loads((tmp_path / "a" / "qrels.json").read_text())
    assert list(queries) == list(qrels) == [query_id(i) for i in range(20)]
    by_id = {d["id"]: d["vector"] for d in docs}
    for qid, vec in queries.items():
        (rel,) = qrels[qid]
        assert qrels[qid][rel] == 1 and rel in by_id
        shared = set(vec) & set(by_id[rel])
        assert len(shared) >= min(SPEC.plant_terms, len(by_id[rel])), f"{qid}: planted terms missing"
    # same seed, same bytes; a smaller collection is a prefix (same chunk size)
    write_synthetic(tmp_path / "b", 500, SPEC)
    for name in ("part-000.jsonl", "part-001.jsonl"):
        a, b = (tmp_path / "a" / "collection" / name), (tmp_path / "b" / "collection" / name)
        assert a.read_bytes() == b.read_bytes()
    write_synthetic(tmp_path / "c", 200, SPEC)
    assert [d["vector"] for d in _lines(tmp_path / "c")] == [d["vector"] for d in docs[:200]]
    other = write_synthetic(tmp_path / "d", 500, replace(SPEC, seed=6))
    assert _lines(tmp_path / "d")[0]["vector"] != docs[0]["vector"] and other["documents"] == 500


def test_ensure_collection_reuses_only_the_same_spec(tmp_path):
    first = ensure_collection(tmp_path, 100, SPEC, regenerate=False)
    assert not ensure_collection(tmp_path, 100, SPEC, regenerate=False)["reused"]  # no timing recorded: redone
    first = ensure_collection(tmp_path, 100, SPEC, regenerate=False)
    meta_path = tmp_path / "docs-100" / GENERATED
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "export_record": {"seconds": 1.0}}))
    again = ensure_collection(tmp_path, 100, SPEC, regenerate=False)
    assert not first["reused"] and again["reused"] and again["created"] == first["created"]
    changed = ensure_collection(tmp_path, 100, replace(SPEC, zipf=1.3), regenerate=False)
    assert not changed["reused"]


def test_fit_linear_and_superlinear():
    linear = fit_stage([(1000, 2.0), (10_000, 20.0), (100_000, 200.0)])
    assert linear["loglog_exponent"] == pytest.approx(1.0)
    assert linear["per_doc_ratio_largest_vs_smallest"] == pytest.approx(1.0)
    assert linear["slope_per_1k_docs"] == pytest.approx(2.0)
    assert linear["extrapolated"] == pytest.approx(2.0 * MSMARCO_PASSAGES / 1000, rel=1e-6)
    quad = fit_stage([(1000, 1.0), (10_000, 100.0)])
    assert quad["loglog_exponent"] == pytest.approx(2.0)
    assert quad["per_doc_ratio_largest_vs_smallest"] == pytest.approx(10.0)
    assert fit_stage([(1000, 1.0)]) is None


def _run(docs: int, seconds: float, peak: float, start: float = 100.0) -> dict:
    return {"docs": docs, "stages": [{"stage": s, "status": "ok", "seconds": seconds, "rss_peak_mb": peak,
                                      "rss_start_mb": start} for s in STAGES[1:]]}


def test_predict_and_budget_decision():
    pred = predict([_run(1000, 10.0, 300.0)], 100_000)  # one size: seconds x ratio, memory growth x ratio
    assert pred["seconds"] == pytest.approx(3000.0) and pred["rss_peak_mb"] == pytest.approx(100 + 200 * 100)
    # two sizes: the line through them (fixed costs not scaled)
    pred2 = predict([_run(1000, 10.0, 300.0), _run(10_000, 28.0, 400.0)], 100_000)
    assert pred2["seconds"] == pytest.approx(3 * (28 + 18 * 10)) and pred2["from_docs"] == [1000, 10_000]
    assert pred2["rss_peak_mb"] == pytest.approx(400 + 100 * 10)
    assert "budget" in budget_decision(pred, 25 * 60, None, force=False)
    assert "RSS" in budget_decision(pred, 10 ** 6, 5000.0, force=False)
    assert budget_decision(pred, 10 ** 6, 50_000.0, force=False) is None
    assert budget_decision(pred, 1.0, 1.0, force=True) is None
    incomplete = {"docs": 1000, "stages": _run(1000, 1.0, 1.0)["stages"][:1]}
    assert predict([incomplete], 2000) is None  # an incomplete run predicts nothing
    assert predict([], 2000) is None


def _engines() -> list[str]:
    engines = ["anserini"]
    if importlib.util.find_spec("pyterrier_pisa"):
        engines.append("pisa")
    if importlib.util.find_spec("seismic"):
        engines.append("seismic")
    return engines


def _table(out: Path) -> list[dict]:
    with open(out / "table.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_pipeline_end_to_end(tmp_path):
    engines = _engines()
    out, work = tmp_path / "out", tmp_path / "work"
    rc = _main(["--sizes", "400", "--queries", "20", "--k", "10", "--engines", *engines, "--chunk", "150",
                  "--file-docs", "250", "--out", str(out), "--work-dir", str(work)])
    rows = _table(out)
    assert [(r["engine"], r["stage"]) for r in rows] == [("shared", "export")] + [
        (e, s) for e in engines for s in STAGES[1:]]
    bad = [(r["engine"], r["stage"], r["status"], r["note"]) for r in rows if r["status"] != "ok"]
    assert bad == [] and rc == 0
    assert all(float(r["seconds"]) > 0 and float(r["rss_peak_mb"]) > 0 for r in rows)
    heap = {r["stage"]: r["heap_peak_mb"] for r in rows if r["engine"] == "anserini"}
    assert all(float(v) > 0 for v in heap.values()), heap
    assert all(r["heap_peak_mb"] == "" for r in rows if r["engine"] != "anserini")
    results = json.loads((out / "results.json").read_text())
    for run in results["runs"]:
        stages = {s["stage"]: s for s in run["stages"]}
        if run["engine"] == "shared":
            assert stages["export"]["documents"] == 400
            continue
        assert stages["index"]["documents_read"] == stages["index"]["documents_indexed"] == 400
        assert stages["index"]["index_mb"] > 0
        s = stages["search"]
        assert s["queries"] == s["queries_searched"] == 20
        assert s["queries_with_hits"] + s["queries_without_hits"] == 20
        assert s["queries_in_run"] <= 20 and 0 < s["hits"] <= 20 * 10
        assert set(stages["evaluate"]["metrics"]) >= {"nDCG@10"}
    assert results["collections"]["400"]["documents"] == 400
    # the exact engines return the reference engine's run: every query's hits and scores identical
    from lsr_eval.engines.registry import ENGINES

    exact = [e for e in engines if ENGINES[e].exact and e != "anserini"]
    assert [(c["docs"], c["reference"], c["engine"]) for c in results["exact_engines"]] == [
        (400, "anserini", e) for e in exact]
    for c in results["exact_engines"]:
        assert c["identical"] and c["identical_queries"] == c["queries"] == 20, c
    searches = [s for run in results["runs"] for s in run["stages"] if s["stage"] == "search"]
    assert all("query_sha256" not in s for s in searches)   # the per-query digests are not kept
    assert len({s["run_sha256"] for s in searches if s["engine"] in ["anserini", *exact]}) == 1
    assert (out / "scale.png").stat().st_size > 1000
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "bench-scale" and manifest["failed"] == []
    assert not (work / "indexes" / "anserini-400").exists()  # indexes are removed after measuring


def test_compare_exact_counts_identical_and_same_set_queries():
    """Hand-made runs: a tie residue (51.0 vs 50.999996) or another docid in the list makes a query differ; the
    approximate engine is not compared; the per-query digests are dropped."""
    ref = {"q1": {"d1": 51.0, "d2": 51.0}, "q2": {"d1": 3.0}, "q3": {"d3": 2.0}}
    other = {"q1": {"d1": 51.0, "d2": 50.999996}, "q2": {"d1": 3.0}, "q3": {"d4": 2.0}}

    def result(engine, run):
        digest, per_query = run_digests(run)
        return {"docs": 10, "engine": engine, "stages": [{"stage": "search", "status": "ok", "run_sha256": digest,
                                                          "query_sha256": per_query}]}

    runs = [result("pisa", other), result("anserini", ref), result("seismic", {"q1": {}})]
    (c,) = compare_exact(runs)
    assert (c["reference"], c["engine"], c["queries"]) == ("anserini", "pisa", 3)
    assert (c["identical_queries"], c["same_docid_set_queries"], c["identical"]) == (1, 2, False)
    assert c["differing_queries"] == ["q1", "q3"]
    assert all("query_sha256" not in r["stages"][0] for r in runs[:2])
    assert run_digests({"q": {"b": 1.0, "a": 1.0}}) == run_digests({"q": {"a": 1.0, "b": 1.0}})
    assert compare_exact([result("anserini", ref), result("pisa", dict(ref))])[0]["identical"]


def test_skips_and_failures_are_recorded(tmp_path):
    engine = "pisa" if importlib.util.find_spec("pyterrier_pisa") else "anserini"
    out, work = tmp_path / "out", tmp_path / "work"
    rc = _main(["--sizes", "100", "200", "--queries", "5", "--k", "5", "--engines", engine,
                  "--budget-minutes", "0.0001", "--out", str(out), "--work-dir", str(work)])
    rows = _table(out)
    at = {(r["docs"], r["engine"], r["stage"]): r for r in rows}
    assert at[("100", engine, "search")]["status"] == "ok"
    assert {at[("200", engine, s)]["status"] for s in STAGES[1:]} == {"skipped"}
    assert "budget" in at[("200", engine, "index")]["note"]
    assert at[("200", "shared", "export")]["status"] == "ok"
    results = json.loads((out / "results.json").read_text())
    assert [(s["docs"], s["engine"]) for s in results["skipped"]] == [(200, engine)]
    assert rc == 0  # a skip is not a failure

    # an engine that cannot start: its stages are failed, with the reason
    result = work / "runs" / "bad.json"
    res, problem = run_child(SCRIPT, ["--one", "100", "no-such-engine", "--result", str(result), "--work-dir",
                                      str(work), "--queries", "5", "--engines", engine], result, 120,
                             work / "runs" / "bad.log")
    res = close_result(res, 100, "no-such-engine", problem)
    assert problem and "status 3" in problem
    assert [s["status"] for s in res["stages"]] == ["failed"] * 3
    assert "unknown engine" in res["stages"][0]["note"]

    # a process that dies without a result: every stage failed with the problem
    res = close_result(None, 100, "anserini", "process exited with status -9")
    assert [(s["stage"], s["status"]) for s in res["stages"]] == [("index", "failed"), ("search", "failed"),
                                                                  ("evaluate", "failed")]
    assert close_result(None, 100, "anserini", "timeout: stopped")["stages"][0]["status"] == "timeout"
