"""``significance: {across_datasets: true, correction: holm}``: each dataset's p-values are corrected together with
the other datasets' (one family per baseline: datasets x systems x measures), and pooled rows test each system
against the baseline over the datasets' means, checked against the significance functions applied by hand."""

from __future__ import annotations

import json
import random

import pytest
from conftest import write_beir

from lsr_eval.benchmark.config import load_config
from lsr_eval.benchmark.row import POOLED
from lsr_eval.benchmark.run import run_benchmark
from lsr_eval.evaluation import evaluate
from lsr_eval.runs.trec import read_run, write_run
from lsr_eval.significance import compare, holm, paired_t_test

DOCS = [{"_id": f"d{i}", "title": "", "text": f"document {i}"} for i in range(30)]


def _data(root, name: str, prefix: str):
    queries = [{"_id": f"{prefix}{i}", "text": f"query {i}"} for i in range(12)]
    qrels = [(f"{prefix}{i}", f"d{(i * 7 + j) % 30}", 1) for i in range(12) for j in range(2)]
    return write_beir(root / name, DOCS, queries, qrels), queries


def _runs(root, queries):
    """Three runs over both datasets' queries: a baseline and two systems that rank the judged documents higher
    or lower (seeded)."""
    rng = random.Random(7)
    paths = {}
    for name, boost in (("base", 0.0), ("better", 2.0), ("mixed", 0.5)):
        run = {}
        for q in queries:
            i = int(q["_id"][1:])
            judged = {f"d{(i * 7 + j) % 30}" for j in range(2)}
            run[q["_id"]] = {d["_id"]: rng.random() + (boost * rng.random() if d["_id"] in judged else 0.0)
                             for d in DOCS}
        paths[name] = root / f"{name}.trec"
        write_run(run, paths[name])
    return paths


def _bench(tmp_path, measures: tuple[str, str]):
    """The benchmark of the three runs on datasets a and b (with these measures), Holm across datasets: (its table,
    the two dataset folders, the runs)."""
    a, qa = _data(tmp_path, "a", "a")
    b, qb = _data(tmp_path, "b", "b")
    runs = _runs(tmp_path, qa + qb)
    yaml = tmp_path / "bench.yaml"
    yaml.write_text(json.dumps({
        "name": "across", "out": str(tmp_path / "out"),
        "datasets": [{"spec": str(a), "label": "a", "measures": [measures[0]]},
                     {"spec": str(b), "label": "b", "measures": [measures[1]]}],
        "systems": [{"name": n, "kind": "run", "path": str(p)} for n, p in runs.items()],
        "significance": {"baseline": "base", "correction": "holm", "across_datasets": True}}))
    return run_benchmark(load_config(yaml), tmp_path / "work"), a, b, runs


def test_one_family_across_datasets_and_pooled_rows(tmp_path):
    table, a, b, runs = _bench(tmp_path, ("nDCG@10", "nDCG@10"))
    rows = {(r["dataset"], r["system"]): r for r in table.to_dict("records")}
    # by hand: each dataset's raw p-values, then Holm over the four (2 datasets x 2 systems x 1 measure)
    raw, means = [], {}
    for label, folder in (("a", a), ("b", b)):
        from lsr_eval.data.datasets import load_dataset

        qrels = load_dataset(str(folder), "test").qrels()
        per_query = {n: evaluate(qrels, read_run(p), ["nDCG@10"], per_query=True) for n, p in runs.items()}
        df = compare(per_query, "base")
        raw += [(label, s, p) for s, p in zip(df["system"], df["p_value"]) if s != "base"]
        means[label] = {n: evaluate(qrels, read_run(p), ["nDCG@10"])["nDCG@10"] for n, p in runs.items()}
    for (label, system, _), p in zip(raw, holm([p for *_, p in raw])):
        assert rows[(label, system)]["nDCG@10_p"] == pytest.approx(p, rel=1e-12)
    # pooled: the mean over the two datasets, a paired t-test over the datasets' means, Holm over the 2 systems
    pooled_p = [paired_t_test([means[d]["base"] for d in "ab"], [means[d][s] for d in "ab"]).p_value
                for s in ("better", "mixed")]
    for system, p in zip(("better", "mixed"), holm(pooled_p)):
        row = rows[(POOLED, system)]
        assert row["nDCG@10"] == pytest.approx((means["a"][system] + means["b"][system]) / 2)
        assert row["nDCG@10_p"] == pytest.approx(p, rel=1e-12) and row["nDCG@10_datasets"] == 2
    assert rows[(POOLED, "base")]["nDCG@10"] == pytest.approx((means["a"]["base"] + means["b"]["base"]) / 2)
    assert "_raw_p_values" not in table.columns


def test_datasets_with_other_measures_pool_nothing_and_still_share_one_family(tmp_path):
    """A measure on one dataset only has no pooled mean; the four tests still form one Holm family."""
    table, a, b, runs = _bench(tmp_path, ("nDCG@10", "R@100"))
    assert POOLED not in set(table["dataset"])
    from lsr_eval.data.datasets import load_dataset

    raw = []
    for folder, measure in ((a, "nDCG@10"), (b, "R@100")):
        qrels = load_dataset(str(folder), "test").qrels()
        df = compare({n: evaluate(qrels, read_run(p), [measure], per_query=True) for n, p in runs.items()}, "base")
        raw += [p for s, p in zip(df["system"], df["p_value"]) if s != "base"]
    separate = [r for r in table.to_dict("records") if r["system"] != "base"]
    got = [r["nDCG@10_p"] if r["dataset"] == "a" else r["R@100_p"] for r in separate]
    assert got == pytest.approx(holm(raw), rel=1e-12)
