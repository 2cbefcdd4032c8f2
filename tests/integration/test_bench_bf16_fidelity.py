"""studies/bf16_fidelity/run.py: the comparisons on hand-made runs, and the whole script on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_script  # noqa: E402
from tiny_models import tiny_model  # noqa: E402

from studies.harness.agreement import top_agreement, top_docs, weight_map_agreement


def test_top_docs_ranks_by_score_then_docid():
    assert top_docs({"b": 1.0, "a": 1.0, "c": 2.0, "d": 0.5}, 3) == ["c", "a", "b"]


def test_compare_top_counts_order_and_set_identity():
    ref = {"q1": {"a": 3.0, "b": 2.0}, "q2": {"a": 3.0, "b": 2.0}, "q3": {"a": 1.0}, "q4": {"x": 1.0}}
    other = {"q1": {"a": 3.0, "b": 2.0},          # identical
             "q2": {"a": 2.0, "b": 3.0},          # same set, swapped
             "q3": {"z": 1.0}}                    # disjoint; q4 missing
    got = top_agreement(ref, other, k=2)
    assert (got["queries"], got["identical_ordered"], got["identical_set"]) == (4, 1, 2)
    assert got["share_ordered"] == 0.25 and got["share_set"] == 0.5
    assert got["missing_in_other"] == ["q4"] and got["differing_count"] == 3
    assert got["differing"][0] == {"query": "q2", "overlap": 2, "same_set": True}
    assert got["differing"][1] == {"query": "q3", "overlap": 0, "same_set": False}


def test_compare_vectors_lists_differing_terms():
    ref = {"q1": {"a": 3, "b": 1}, "q2": {"a": 2}}
    got = weight_map_agreement(ref, {"q1": {"a": 3, "b": 1}, "q2": {"a": 1, "c": 4}})
    assert got["identical"] == 1 and got["share"] == 0.5
    assert got["differing"] == [{"query": "q2", "terms": {"a": [2, 1], "c": [0, 4]}}]


def _corpus(tmp_path: Path) -> Path:
    """40 documents (SciFact's first ones when present) and 12 queries (each a few words of a document, judged
    relevant to it): enough hits for top-10 lists that can differ."""
    from conftest import write_beir
    from tiny_models import sample_texts

    texts = sample_texts(40)
    docs = [{"_id": f"d{i}", "title": "", "text": t} for i, t in enumerate(texts)]
    queries = [{"_id": f"q{i}", "text": " ".join(texts[3 * i].split()[2:8])} for i in range(12)]
    qrels = [(f"q{i}", f"d{3 * i}", 1) for i in range(12)] + [(f"q{i}", f"d{3 * i + 1}", 2) for i in range(0, 12, 4)]
    return write_beir(tmp_path / "beir", docs, queries, qrels)


def _pytrec_metrics(beir: Path, run_file: Path) -> dict[str, float]:
    """nDCG@10, R@100, R@1000 by pytrec_eval (trec_eval's code) from the run file, averaged over the judged queries
    (a judged query without hits counts 0, as trec_eval -c)."""
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for line in (beir / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, r = line.split("\t")
        qrels.setdefault(q, {})[d] = int(r)
    run = _run(run_file)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recall.1000"}).evaluate(run)
    names = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100", "R@1000": "recall_1000"}
    return {m: sum(per_query.get(q, {}).get(key, 0.0) for q in qrels) / len(qrels) for m, key in names.items()}


def _run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    return run


def test_script_runs_both_precisions(tmp_path, capfd):
    """The whole script on a tiny model: its figures are the relations they claim, recomputed from the two runs
    it wrote (not from the script's own functions)."""
    beir = _corpus(tmp_path)
    out = tmp_path / "out"
    rc = run_script("studies/bf16_fidelity/run.py", ["--dataset", str(beir), "--model", str(tiny_model("bert")),
                     "--out", str(out), "--work-dir", str(tmp_path / "work"), "--threads", "1", "--max-length-d", "64",
                     "--max-length-q", "32", "--device", "cpu"])
    assert rc == 0
    fid = json.loads((out / "fidelity.json").read_text())
    assert fid["precision"]["fp32"]["name"] == "fp32" and fid["precision"]["bf16"]["name"] == "bf16"
    assert fid["device"] == "cpu" and fid["machine"]["cpu_flags"] is not None
    runs = {p: _run(Path(fid["folders"][p]) / "run.trec") for p in ("fp32", "bf16")}

    # metrics: an independent evaluation of each run; differences: bf16 - fp32
    for p in ("fp32", "bf16"):
        for m, value in _pytrec_metrics(beir, Path(fid["folders"][p]) / "run.trec").items():
            assert fid["metrics"][m][p] == pytest.approx(value, abs=1e-9), (p, m)
    for m, v in fid["metrics"].items():
        assert v["difference"] == v["bf16"] - v["fp32"]

    # top 10: recounted from the run files (score descending, then docid ascending, as the script defines ranks)
    def top(hits):
        return [d for d, _ in sorted(hits.items(), key=lambda h: (-h[1], h[0]))[:10]]

    qids = sorted(runs["fp32"])
    ordered = sum(top(runs["fp32"][q]) == top(runs["bf16"].get(q, {})) for q in qids)
    as_set = sum(set(top(runs["fp32"][q])) == set(top(runs["bf16"].get(q, {}))) for q in qids)
    t = fid["top10"]
    assert (t["queries"], t["identical_ordered"], t["identical_set"]) == (len(qids), ordered, as_set) == (12, ordered,
                                                                                                           as_set)
    assert t["differing_count"] == len(qids) - ordered

    # bf16 really ran: its scores, and query vectors, differ from fp32's on this model
    assert runs["fp32"] != runs["bf16"]
    vec = fid["query_vectors"]
    assert vec["queries"] == 12 and vec["identical"] < 12 and vec["differing"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "bench-bf16-fidelity"
    assert manifest["machine"]["cpu_flags"] == fid["machine"]["cpu_flags"]
    from studies.bf16_fidelity.summary import summaries

    assert summaries(out) == {"summary.md": (out / "summary.md").read_text()}
    assert "Identical top 10" in capfd.readouterr().out
