"""The SPLADE chain end to end on a tiny BERT: `lsr-eval splade` and the single-stage commands give the same run,
counts match at every stage, and awkward documents (empty, very long, special tokens only) are kept and counted."""

from __future__ import annotations

import json

import pytest
from conftest import TINY_DOCS, TINY_QRELS, TINY_QUERIES, write_beir
from tiny_models import tiny_bert

from lsr_eval.cli import main

AWKWARD = [
    {"_id": "empty", "title": "", "text": ""},
    {"_id": "long", "title": "Long", "text": " ".join(["retrieval sparse vectors cats"] * 200)},
    {"_id": "special", "title": "", "text": "[CLS] [SEP] [PAD]"},
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("splade")
    data = write_beir(root / "data", TINY_DOCS + AWKWARD, TINY_QUERIES, TINY_QRELS)
    return root, data, tiny_bert()


def _common(model):
    return [str(model), "--max-length-d", "32", "--max-length-q", "16", "--doc-top-k", "20", "--query-top-k", "8",
            "--batch-size", "4"]


@pytest.fixture(scope="module")
def chain(setup):
    """``lsr-eval splade`` on the tiny data: (its command line, its output folder), shared by the tests that
    compare with it (each test may run alone)."""
    root, data, model = setup
    out = root / "chain"
    argv = ["splade", *_common(model), str(data), "--out", str(out), "--work-dir", str(root / "work"),
            "--threads", "1"]
    assert main(argv) == 0
    return argv, out


def test_splade_chain_counts_and_awkward_documents(setup, chain):
    root, data, model = setup
    argv, out = chain
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["counts"]
    n_docs = len(TINY_DOCS) + len(AWKWARD)
    assert counts["encoding"]["documents_in"] == counts["encoding"]["documents_out"] == n_docs
    assert counts["export"]["documents_out"] == counts["index"]["documents_indexed"] == n_docs
    assert counts["index"]["documents_read"] == n_docs and counts["index"]["engine"] == "anserini"
    assert counts["encoding"]["truncated_documents"] >= 1  # the long document
    # whatever became an empty vector was exported, then appended to the index without postings
    lucene = counts["index"]["anserini"]
    assert counts["export"]["empty_vectors"] == lucene["empty"] == lucene["empty_appended"]
    assert counts["search"]["queries"] == len(TINY_QUERIES)
    assert manifest["quantization"]["scale"] == 100
    assert len(manifest["evaluation"]["sources_sha256"]) == 64  # which evaluation code computed the metrics
    assert set(json.loads((out / "metrics.json").read_text())) == {"nDCG@10", "R@100", "R@1000"}
    # a second run reuses every cached stage and gives the same run
    again = root / "chain2"
    assert main(argv[:-6] + ["--out", str(again), "--work-dir", str(root / "work"), "--threads", "1"]) == 0
    assert (again / "run.trec").read_text() == (out / "run.trec").read_text()


def test_single_stage_commands_match_the_chain(setup, chain):
    root, data, model = setup
    _, chain = chain
    s = root / "stages"
    assert main(["encode", *_common(model), str(data), "--out", str(s / "enc")]) == 0
    assert main(["export", str(s / "enc"), "--out", str(s / "coll")]) == 0
    assert main(["index", str(s / "coll"), "--out", str(s / "idx"), "--threads", "1"]) == 0
    assert main(["search", str(s / "idx"), str(chain / "queries" / "queries.jsonl"), "--out", str(s / "run"),
                 "--remove-query", "--dataset", str(data)]) == 0
    assert (s / "run" / "run.trec").read_text().replace("impact", "splade") == (chain / "run.trec").read_text()
    assert json.loads((s / "run" / "metrics.json").read_text()) == json.loads((chain / "metrics.json").read_text())


def test_all_vectors_empty_still_index_every_document(setup):
    root, data, model = setup
    out = root / "empty"
    assert main(["splade", *_common(model), "--threshold", "1e9", str(data), "--out", str(out),
                 "--work-dir", str(root / "work"), "--threads", "1"]) == 0
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    n_docs = len(TINY_DOCS) + len(AWKWARD)
    assert counts["export"]["empty_vectors"] == counts["index"]["anserini"]["empty_appended"] == n_docs
    assert counts["index"]["documents_indexed"] == n_docs
    assert counts["search"]["queries"] == 3 and counts["search"]["queries_without_hits"] == 3
    assert counts["evaluation"]["judged_without_results"] == 3


def test_invalid_option_is_a_clear_error(setup, capsys):
    root, data, model = setup
    assert main(["splade", str(model), str(data), "--out", str(root / "bad"), "--head-init", "magic"]) == 2
    err = capsys.readouterr().err
    assert "magic" in err and "identity" in err


def test_reused_run_gets_metrics_recomputed(setup, chain):
    """A finished output folder is reused (no retrieval), but its metrics come from its run.trec again, computed by
    the evaluation code that runs now (recorded by hash), not from the old manifest."""
    argv, out = chain
    truth = json.loads((out / "metrics.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    stale = {m: v / 2 for m, v in truth.items()}  # as if computed by an evaluation since fixed
    (out / "manifest.json").write_text(json.dumps({**manifest, "metrics": stale}))
    (out / "metrics.json").write_text(json.dumps(stale))
    run_before = (out / "run.trec").stat().st_mtime_ns
    assert main(argv) == 0
    assert (out / "run.trec").stat().st_mtime_ns == run_before  # reused, not searched again
    again = json.loads((out / "manifest.json").read_text())
    assert json.loads((out / "metrics.json").read_text()) == again["metrics"] == truth
    assert again["previous_metrics"] == stale
    assert again["commit"] == manifest["commit"] and again["created"] == manifest["created"]  # who made the run
    from lsr_eval.evaluation.provenance import sources_sha256

    assert again["evaluation"]["sources_sha256"] == sources_sha256() and again["evaluation"]["reused_run"]


def test_no_eval_writes_a_compressed_run_and_no_number(setup, chain, capsys):
    """``--no-eval --run-file run.trec.xz``: the same ranking as the evaluated chain, compressed, with no metric
    anywhere (no metrics.json, none in the manifest, none printed), and rerunning reuses the run without
    evaluating it."""
    from lsr_eval.runs.trec import read_run

    root, data, model = setup
    argv, out = chain
    sealed = root / "sealed"
    argv = ["splade", *_common(model), str(data), "--out", str(sealed), "--work-dir", str(root / "work"),
            "--threads", "1", "--no-eval", "--run-file", "run.trec.xz"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "not evaluated (--no-eval)" in printed and "nDCG" not in printed
    assert read_run(sealed / "run.trec.xz") == read_run(out / "run.trec")
    assert not (sealed / "metrics.json").exists()
    manifest = json.loads((sealed / "manifest.json").read_text())
    assert manifest["metrics"] == {} and manifest["evaluation"]["evaluated"] is False
    assert manifest["counts"]["evaluation"] is None and manifest["outputs"] == ["run.trec.xz", "queries/"]
    stamp = (sealed / "run.trec.xz").stat().st_mtime_ns
    assert main(argv) == 0                                  # reused: not searched again, still no number
    assert (sealed / "run.trec.xz").stat().st_mtime_ns == stamp and not (sealed / "metrics.json").exists()
    assert json.loads((sealed / "manifest.json").read_text())["metrics"] == {}


def test_reproducing_an_unevaluated_run_keeps_it_unevaluated(setup, capsys):
    """``lsr-eval reproduce`` reruns a ``--no-eval`` run as recorded: the same run file, still no number."""
    root, data, model = setup
    sealed = root / "sealed-reproduce"
    argv = ["splade", *_common(model), str(data), "--out", str(sealed), "--work-dir", str(root / "work"),
            "--threads", "1", "--no-eval", "--run-file", "run.trec.xz"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["reproduce", str(sealed), "--out", str(root / "rerun"), "--work-dir", str(root / "work")]) == 0
    printed = capsys.readouterr().out
    assert ": reproduced (" in printed, printed
    rerun = [p for p in (root / "rerun").rglob("manifest.json") if p.parent.name != "queries"
             and json.loads(p.read_text()).get("stage") == "splade"]
    assert rerun and all(json.loads(p.read_text())["metrics"] == {} for p in rerun)
    assert all((p.parent / "run.trec.xz").read_bytes() == (sealed / "run.trec.xz").read_bytes() for p in rerun)
    assert not any((p.parent / "metrics.json").exists() for p in rerun)


def test_an_unevaluated_folder_is_never_evaluated_by_a_later_call(setup, capsys):
    """Rerunning ``splade`` without ``--no-eval`` on a folder written with it is refused (one line), and a run file
    name that is not a plain run name is refused before any work."""
    root, data, model = setup
    sealed = root / "sealed-refuse"
    base = ["splade", *_common(model), str(data), "--out", str(sealed), "--work-dir", str(root / "work"),
            "--threads", "1"]
    assert main([*base, "--no-eval"]) == 0
    capsys.readouterr()
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "written unevaluated (--no-eval)" in err and str(sealed) in err and "Traceback" not in err
    assert not (sealed / "metrics.json").exists()
    for bad in ("../run.trec", "manifest.json", "metrics.json"):
        assert main([*base[:-4], "--out", str(root / "bad-name"), "--run-file", bad]) == 2
        assert "expected a file name ending in .trec" in capsys.readouterr().err
