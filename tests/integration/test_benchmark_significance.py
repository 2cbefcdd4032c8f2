"""The benchmark's significance columns recomputed independently: per-query nDCG@10 by pytrec_eval from the run
files, scipy's paired t-test, Bonferroni over the table's comparisons, and the marker rule (``†`` significantly
better, ``↓`` significantly worse, else empty). The corpus is built so that each outcome occurs: BM25's length
normalisation (b = 1) beats the default b = 0.4 on the queries with a long distractor, and a 1-hit run loses them."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import yaml
from conftest import write_beir

from lsr_eval.cli import main

N_QUERIES = 16
ALPHA = 0.05


def _corpus():
    docs, queries, qrels = [], [], []
    for i in range(N_QUERIES):
        term = f"zorb{chr(97 + i)}qu"  # one made-up word per query
        docs.append({"_id": f"rel{i}", "title": "", "text": f"{term} short note"})
        if i % 2 == 0:  # a long non-relevant document repeating the query word
            docs.append({"_id": f"long{i}", "title": "", "text": " ".join([term] * 3 + ["filler"] * 60)})
        queries.append({"_id": f"q{i}", "text": term})
        qrels.append((f"q{i}", f"rel{i}", 1))
    return docs, queries, qrels


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("sig")
    data = write_beir(root / "data", *_corpus())
    systems = [{"name": "default", "kind": "bm25"},                   # k1 .9, b .4: the long document first
               {"name": "lennorm", "kind": "bm25", "k1": 1.2, "b": 1.0},  # the short relevant one first
               {"name": "one-hit", "kind": "bm25", "hits": 1},         # loses the relevant one behind a long one
               {"name": "twin", "kind": "bm25", "k1": 1.0}]            # same rankings as the default
    cfg = {"name": "sig", "out": str(root / "results"),
           "datasets": [{"spec": str(data), "split": "test", "label": "syn", "measures": ["nDCG@10", "RR@10"]}],
           "systems": systems, "significance": {"baseline": "default", "test": "t-test", "alpha": ALPHA}}
    (root / "bench.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["benchmark", str(root / "bench.yaml"), "--work-dir", str(root / "work"), "--threads", "1"]) == 0
    table = pd.read_csv(root / "results" / "table.csv", keep_default_na=False)
    return root, data, table.set_index("system"), [s["name"] for s in systems]


def _per_query(data, run_file) -> dict[str, dict[str, float]]:
    """pytrec_eval's ndcg_cut_10 and recip_rank (cut at 10 by hand) for every judged query (0 when unanswered)."""
    import pytrec_eval

    qrels = {}
    for line in (data / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        q, d, r = line.split("\t")
        qrels.setdefault(q, {})[d] = int(r)
    run = {}
    for line in run_file.read_text().splitlines():
        q, _, d, rank, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    ndcg = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    out = {"nDCG@10": {}, "RR@10": {}}
    for q in qrels:
        out["nDCG@10"][q] = ndcg.get(q, {}).get("ndcg_cut_10", 0.0)
        ranked = sorted(run.get(q, {}).items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        first = next((i for i, (d, _) in enumerate(ranked, 1) if qrels[q].get(d, 0) > 0), None)
        out["RR@10"][q] = 1 / first if first else 0.0
    return out


def test_p_values_and_markers_match_an_independent_computation(bench):
    from scipy import stats

    root, data, table, names = bench
    runs = root / "work" / "benchmarks" / "sig" / "runs"
    scores = {s: _per_query(data, runs / s / "syn" / "run.trec") for s in names}
    measures = ["nDCG@10", "RR@10"]
    m = (len(names) - 1) * len(measures)  # Bonferroni over the table: every (system, measure) against the baseline
    for system in names[1:]:
        for measure in measures:
            qids = sorted(scores["default"][measure])
            base = [scores["default"][measure][q] for q in qids]
            mine = [scores[system][measure][q] for q in qids]
            assert table.loc[system, measure] == pytest.approx(sum(mine) / len(mine), abs=1e-12)
            p = stats.ttest_rel(mine, base).pvalue
            p = 1.0 if math.isnan(p) else p  # identical scores: scipy's NaN, p = 1 by the documented convention
            expected_p = min(1.0, p * m)
            assert float(table.loc[system, f"{measure}_p"]) == pytest.approx(expected_p, rel=1e-9, abs=1e-15)
            diff = sum(mine) / len(mine) - sum(base) / len(base)
            marker = "" if not expected_p < ALPHA else ("†" if diff > 0 else "↓")
            assert table.loc[system, f"{measure}_sig"] == marker, (system, measure, expected_p, diff)
    # the corpus makes each outcome occur
    assert table.loc["lennorm", "nDCG@10_sig"] == "†" and table.loc["one-hit", "nDCG@10_sig"] == "↓"
    assert table.loc["twin", "nDCG@10_sig"] == "" and float(table.loc["twin", "nDCG@10_p"]) == 1.0
    assert table.loc["default", "nDCG@10_sig"] == "" and table.loc["default", "nDCG@10_p"] == ""
    manifest = json.loads((root / "results" / "manifest.json").read_text())
    assert set(manifest["significance_markers"]) == {"†", "↓"}
