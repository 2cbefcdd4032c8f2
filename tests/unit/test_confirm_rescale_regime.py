"""The regime of the confirmatory rescaling result (studies/confirm_rescale_nfcorpus/regime.py): the committed
``regime.json`` is what the committed tables, logs, configs, search manifests and inspect-head's diagnosis give; every
page that quotes the result (README.md, docs/results.md, the study's results page) shows the regime block rendered
from it, character for character; a changed number (on a page, in regime.json or in a committed table) fails the
check. The parts that need NFCorpus's qrels (zero-score shares, the random ranking, the train queries) are recomputed
in tests/integration/test_confirm_rescale_regime_data.py."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import REPO, load_script

R = load_script("studies/confirm_rescale_nfcorpus/regime.py", "confirm_rescale_regime")
REGIME = REPO / R.OUT


def _committed() -> dict:
    return json.loads(REGIME.read_text(encoding="utf-8"))


def _same(a, b, where: str = "") -> list[str]:
    """Paths where two JSON values differ (floats to 1e-12)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(set(a) ^ set(b))}"]
        return [x for k in a for x in _same(a[k], b[k], f"{where}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        return [f"{where}: lengths"] if len(a) != len(b) else \
            [x for i, (u, v) in enumerate(zip(a, b)) for x in _same(u, v, f"{where}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        return [] if a == pytest.approx(b, abs=1e-12) else [f"{where}: {a} != {b}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_the_committed_regime_is_the_committed_files():
    """Every part of regime.json that the committed files alone give, recomputed from them."""
    committed = _committed()
    fresh = json.loads(json.dumps(R.committed_facts(REPO)))
    for key in ("scores", "training", "confounds", "grid"):
        assert _same(committed[key], fresh[key], key) == []
    assert committed["commit"] and not committed["commit"].endswith("-dirty")


def test_the_regime_numbers_by_hand():
    """A few of the numbers, from the committed files without the script: the arms' test means and BM25 from the
    test table, the steps from the logs, the caps from the search manifests, ln 16, inspect-head's active share."""
    with open(REPO / R.TEST_TABLE / "table.csv", newline="", encoding="utf-8") as f:
        rows = {r["system"]: float(r["nDCG@10"]) for r in csv.DictReader(f)}
    arm = {a: sum(rows[f"confirm-nfcorpus-{a}-s{s}"] for s in (1, 2, 3)) / 3 for a in ("k1", "k16-compensated")}
    readme = " ".join(R.shown((REPO / "README.md").read_text(encoding="utf-8")).split())   # unwrapped
    assert f"k = 16 at {arm['k16-compensated']:.3f} and k = 1 at {arm['k1']:.3f}" in readme
    assert f"BM25's {rows['bm25']:.3f}" in readme and "0.322" in readme
    study = " ".join(R.shown((REPO / R.PAGES["study"]).read_text(encoding="utf-8")).split())
    logs = [(REPO / f"results/train/confirm-nfcorpus-{a}-s{s}/log.jsonl").read_text().splitlines()
            for a in ("k1", "k16-compensated") for s in (1, 2, 3)]
    assert {len(x) for x in logs} == {90} and "Training stops at 90 steps" in study
    assert f"ln 16 = {math.log(16):.3f}" in study
    caps = {(m["experiment"]["settings"]["doc_top_k"], m["experiment"]["settings"]["query_top_k"])
            for m in (json.loads(p.read_text()) for p in (REPO / R.STUDY / "runs").glob("*/test/manifest.json"))}
    assert caps == {(256, 64)} and "top-256 / top-64" in study
    diagnosis = json.loads((REPO / "results/train/confirm-nfcorpus-inspect-head/diagnosis.json").read_text())
    shares = {int(r["k"]): r["active_fraction"] for r in diagnosis["rows"]}
    assert f"{100 * shares[1]:.1f}% \u2192 {100 * shares[16]:.1f}%" in study
    j = _committed()["judged"]
    assert f"(random: {j['random']:.3f})" in readme and f"and the {j['random']:.3f} a uniformly" in study


@pytest.mark.parametrize("page", list(R.PAGES))
def test_every_page_that_quotes_the_result_shows_its_regime_block(page):
    text = (REPO / R.PAGES[page]).read_text(encoding="utf-8")
    assert R.check_page(text, _committed(), page) == []


def test_a_changed_number_on_a_page_fails():
    regime = _committed()
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = R.shown(text)
    tampered = text.replace(block, block.replace("0.108", "0.118"))
    assert tampered != text
    problems = R.check_page(tampered, regime, "readme")
    assert problems and "'0.118'" in problems[0] and "'0.108'" in problems[0]
    study = (REPO / R.PAGES["study"]).read_text(encoding="utf-8")
    gone = study.replace(R.shown(study), "")
    assert R.check_page(gone, regime, "study") == [f"{R.PAGES['study']}: no regime block ({R.BEGIN} ... {R.END})"]


def test_a_changed_number_in_regime_json_fails():
    regime = _committed()
    regime["judged"]["zero_share"]["k16-compensated"]["mean"] += 0.01
    text = (REPO / R.PAGES["results"]).read_text(encoding="utf-8")
    problems = R.check_page(text, regime, "results")
    assert problems and "61.2%" in problems[0]


def _copy_inputs(dst: Path) -> None:
    """The committed files committed_facts reads, copied under ``dst``."""
    for split in ("dev", "test"):
        (dst / f"results/benchmarks/confirm-rescale-nfcorpus-{split}").mkdir(parents=True)
        shutil.copy(REPO / f"results/benchmarks/confirm-rescale-nfcorpus-{split}/table.json",
                    dst / f"results/benchmarks/confirm-rescale-nfcorpus-{split}/table.json")
    for path in [R.A.INSPECT, f"{R.STUDY}/dev-choice.json",
                 *(f"results/train/{R.A.run_name(a, s)}/{f}" for a in R.A.ARMS for s in R.A.SEEDS
                   for f in ("log.jsonl", "config.yaml")),
                 *(f"{R.STUDY}/runs/{R.A.run_name(a, s)}/test/manifest.json" for a in R.A.ARMS for s in R.A.SEEDS)]:
        (dst / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, dst / path)


def test_a_changed_number_in_a_committed_table_fails(tmp_path):
    """A test table whose k = 16 seed 1 scores 0.03 more gives another regime, which the pages no longer show."""
    _copy_inputs(tmp_path)
    committed = _committed()
    assert _same(json.loads(json.dumps(R.committed_facts(tmp_path))),
                 {k: committed[k] for k in ("scores", "training", "confounds", "grid")}) == []
    table = tmp_path / R.TEST_TABLE / "table.json"
    rows = json.loads(table.read_text())
    for r in rows:
        if r["system"] == "confirm-nfcorpus-k16-compensated-s1":
            r["nDCG@10"] += 0.03
    table.write_text(json.dumps(rows))
    changed = {**committed, **json.loads(json.dumps(R.committed_facts(tmp_path)))}
    assert changed["scores"]["test_means"]["k16-compensated"] == pytest.approx(
        committed["scores"]["test_means"]["k16-compensated"] + 0.01)
    for page, path in R.PAGES.items():
        assert R.check_page((REPO / path).read_text(encoding="utf-8"), changed, page), page
    log = tmp_path / "results/train/confirm-nfcorpus-k1-s2/log.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(R.StudyError, match="does not end at the configured step 90"):
        R.committed_facts(tmp_path)


def test_the_random_ranking_is_the_mean_over_every_rotation():
    """Over the N rotations of a ranking of the whole corpus every document sits at every rank once, so the mean of
    the toolkit's nDCG@10 over them is the exact expectation of a uniformly random ranking."""
    from lsr_eval.evaluation.evaluate import evaluate

    docs = [f"d{i:02d}" for i in range(13)]
    qrels = {"q1": {"d00": 2, "d05": 1, "d07": 1, "d99": 1, "d03": 0}, "q2": {"d12": 1}}
    total = 0.0
    for shift in range(len(docs)):
        ranking = docs[shift:] + docs[:shift]
        run = {q: {d: float(len(docs) - i) for i, d in enumerate(ranking)} for q in qrels}
        total += evaluate(qrels, run, ["nDCG@10"])["nDCG@10"]
    assert R.random_ndcg(qrels, docs) == pytest.approx(total / len(docs), abs=1e-12)
    few = docs[:4]                                     # fewer documents than ranks
    total = sum(evaluate(qrels, {q: {d: float(4 - i) for i, d in enumerate(few[s:] + few[:s])} for q in qrels},
                         ["nDCG@10"])["nDCG@10"] for s in range(4))
    assert R.random_ndcg(qrels, few) == pytest.approx(total / 4, abs=1e-12)
