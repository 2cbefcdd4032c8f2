"""The parts of the confirmatory rescaling result's regime (studies/confirm_rescale_nfcorpus/regime.py) that need
NFCorpus's qrels, recomputed from the committed test runs and ../shared/data: each run's share of test queries that
score 0, a uniformly random ranking's expected nDCG@10, the train queries, and the fingerprints, against the
committed regime.json (whose pages tests/unit/test_confirm_rescale_regime.py checks)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import REPO, load_script, shared_path

R = load_script("studies/confirm_rescale_nfcorpus/regime.py", "confirm_rescale_regime")


def test_the_judged_regime_is_the_committed_runs_on_nfcorpus():
    data = shared_path("beir", "nfcorpus")
    committed = json.loads((REPO / R.OUT).read_text(encoding="utf-8"))["judged"]
    fresh = json.loads(json.dumps(R.judged_facts(REPO, data)))
    assert fresh.keys() == committed.keys()
    for key in fresh:
        if key == "random":
            assert fresh[key] == pytest.approx(committed[key], abs=1e-12)
        elif key == "zero_share":
            for arm, values in fresh[key].items():
                want = committed[key][arm]
                assert values["per_seed"] == pytest.approx(want["per_seed"], abs=1e-12), arm
                assert {k: v for k, v in values.items() if k != "per_seed"} == pytest.approx(
                    {k: v for k, v in want.items() if k != "per_seed"}, abs=1e-12), arm
        else:
            assert fresh[key] == committed[key], key


def test_the_random_ranking_by_its_formula():
    """The random ranking's expected nDCG@10 by the formula written out (gain = grade, discount log2(rank + 1), the
    ideal DCG@10 from the judged grades), without the toolkit's evaluation."""
    import lsr_eval

    ds = lsr_eval.load_dataset(str(shared_path("beir", "nfcorpus")), split="test")
    corpus = {d.id for d in ds.docs()}
    discounts = sum(1 / math.log2(r + 1) for r in range(1, 11))
    values = []
    for judged in ds.qrels().values():
        ideal = sorted((g for g in judged.values() if g >= 1), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        values.append(sum(g for d, g in judged.items() if d in corpus and g >= 1) / len(corpus) * discounts / idcg)
    committed = json.loads((REPO / R.OUT).read_text(encoding="utf-8"))["judged"]["random"]
    assert sum(values) / len(values) == pytest.approx(committed, abs=1e-12)
    assert f"{committed:.3f}" == "0.010"


def test_a_qrels_that_is_not_the_tables_is_refused(tmp_path: Path):
    """Zero-score shares from other qrels than the test table's would not be the table's: refused."""
    data = shared_path("beir", "nfcorpus")
    fake = tmp_path / "nfcorpus"
    (fake / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (fake / name).symlink_to(data / name)
    lines = (data / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    (fake / "qrels" / "test.tsv").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(R.StudyError, match="fingerprints differ"):
        R.judged_facts(REPO, fake)
