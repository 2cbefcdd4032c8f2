"""The confirmatory rescaling study's analysis (studies/confirm_rescale_nfcorpus/analysis.py) on hand-made tables:
the dev choice reads the dev table alone, H1-H3 follow the registered rule with hand-computed intervals, the test
gate refuses early, and the committed study's verdicts are recomputed from its committed tables."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
T = 4.302652729911275          # t_{0.975, 2}


def _load():
    spec = importlib.util.spec_from_file_location("confirm_analysis",
                                                  REPO / "studies/confirm_rescale_nfcorpus/analysis.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


A = _load()

DEV = {"k1": (0.10, 0.12, 0.11), "k2-compensated": (0.10, 0.11, 0.10), "k4-compensated": (0.12, 0.11, 0.12),
       "k8-compensated": (0.13, 0.12, 0.12), "k16-compensated": (0.15, 0.14, 0.16), "k2-divided": (0.05, 0.06, 0.04)}
TEST = {"k1": (0.10, 0.12, 0.11), "k2-compensated": (0.1, 0.1, 0.1), "k4-compensated": (0.1, 0.1, 0.1),
        "k8-compensated": (0.1, 0.1, 0.1), "k16-compensated": (0.15, 0.16, 0.17),
        "k2-divided": (0.08, 0.13, 0.09)}


def _table(folder: Path, values: dict, created: str, drop: str | None = None) -> Path:
    rows = [{"system": "bm25", "status": "ok", "nDCG@10": 0.3}]
    rows += [{"system": A.run_name(a, s), "status": "ok", "nDCG@10": v}
             for a, vs in values.items() for s, v in zip(A.SEEDS, vs) if A.run_name(a, s) != drop]
    folder.mkdir(parents=True)
    (folder / "table.json").write_text(json.dumps(rows))
    (folder / "manifest.json").write_text(json.dumps({"created": created}))
    return folder


@pytest.fixture
def study(tmp_path):
    repo = tmp_path / "repo"
    inspect = repo / A.INSPECT
    inspect.parent.mkdir(parents=True)
    inspect.write_text(json.dumps({"suggested_k": 16}))
    for a in A.ARMS:
        for s in A.SEEDS:
            log = repo / "results" / "train" / A.run_name(a, s) / "log.jsonl"
            log.parent.mkdir(parents=True)
            last = 2.75 if (a, s) == ("k16-compensated", 2) else 1.0      # ln 16 = 2.7726: collapsed
            log.write_text("".join(json.dumps({"step": i + 1, "rank": 3.0 if i < 10 else last, "grad_norm": 1.0})
                                   + "\n" for i in range(20)))
            test = repo / "study" / "runs" / A.run_name(a, s) / "test"
            test.mkdir(parents=True)
            (test / "manifest.json").write_text(json.dumps({"metrics": {}}))
            (test / "run.trec.xz").write_bytes(b"")
    dev = _table(tmp_path / "dev", DEV, "2026-12-04T20:00:00+00:00")
    return repo, repo / "study", dev


def test_the_dev_choice_reads_the_dev_table_alone(study):
    repo, folder, dev = study
    c = A.choose(folder, dev, repo)
    assert c["best_compensated"] == "k16-compensated" and c["best_k_arm"] == "k16-compensated"
    assert c["H2"] == {"suggested_k": 16, "best_k_on_dev": 16, "same": True, "verdict": "holds"}
    assert c["created"] > "2026-12-04T20:00:00+00:00"
    assert json.loads((folder / "dev-choice.json").read_text())["best_compensated"] == "k16-compensated"
    # dev H1 by hand: differences 0.05, 0.02, 0.05
    d = (0.05, 0.02, 0.05)
    m, sd = sum(d) / 3, math.sqrt(sum((x - sum(d) / 3) ** 2 for x in d) / 2)
    assert c["H1_dev"]["mean"] == pytest.approx(m) and c["H1_dev"]["sd"] == pytest.approx(sd)
    assert c["H1_dev"]["low"] == pytest.approx(m - T * sd / math.sqrt(3))


def test_h2_when_the_suggested_k_is_not_the_best(study):
    repo, folder, dev = study
    (repo / A.INSPECT).write_text(json.dumps({"suggested_k": 4}))
    h2 = A.choose(folder, dev, repo)["H2"]
    assert h2["same"] is False and h2["best_k_on_dev"] == 16
    # k16 - k4 on dev: 0.03, 0.03, 0.04 -> mean 0.03333, sd 0.0057735, [0.01899, 0.04768] excludes 0: rejected
    sd = math.sqrt(2 * (0.01 / 3) ** 2 + (0.02 / 3) ** 2) / math.sqrt(2)
    assert h2["difference"]["mean"] == pytest.approx(0.1 / 3)
    assert h2["difference"]["low"] == pytest.approx(0.1 / 3 - T * sd / math.sqrt(3))
    assert h2["verdict"] == "rejected"
    # k16 - k8 on dev: 0.02, 0.02, 0.04 -> [-0.0020, +0.0553] includes 0: the dev data cannot tell them apart
    (repo / A.INSPECT).write_text(json.dumps({"suggested_k": 8}))
    (folder / "dev-choice.json").unlink()
    h2 = A.choose(folder, dev, repo)["H2"]
    assert h2["difference"]["low"] < 0 < h2["difference"]["high"]
    assert h2["verdict"].startswith("neither confirmed nor rejected")


def test_h1_and_h3_by_the_registered_rule(study):
    repo, folder, dev = study
    A.choose(folder, dev, repo)
    test = _table(folder.parent / "test", TEST, "2026-12-04T20:10:00+00:00")
    v = A.verdicts(folder, dev, test, repo)
    # H1: 0.05, 0.04, 0.06 -> mean 0.05, sd 0.01, half-width T * 0.01 / sqrt(3) = 0.024842
    assert v["H1"]["mean"] == pytest.approx(0.05) and v["H1"]["half_width"] == pytest.approx(T * 0.01 / math.sqrt(3))
    assert v["H1"]["low"] == pytest.approx(0.05 - T * 0.01 / math.sqrt(3)) and v["H1"]["verdict"] == "holds"
    # H3: -0.02, +0.01, -0.02 -> mean -0.01, sd 0.017321, [-0.05303, +0.03303]: not established
    assert v["H3"]["mean"] == pytest.approx(-0.01) and v["H3"]["sd"] == pytest.approx(math.sqrt(0.0003))
    assert v["H3"]["high"] == pytest.approx(-0.01 + T * 0.01) and v["H3"]["verdict"].startswith("not established")
    # three seeds detect, with 80% power, about 3.26 sd (noncentral t, two-sided 5%)
    assert v["H3"]["detectable"] == pytest.approx(3.2640 * math.sqrt(0.0003), rel=1e-3)
    flagged = {r for r, s in v["stability"].items() if s["collapsed"] or s["diverged"]}
    assert flagged == {"confirm-nfcorpus-k16-compensated-s2"}


def test_h3_rejected_when_divided_is_better(study):
    repo, folder, dev = study
    A.choose(folder, dev, repo)
    better = {**TEST, "k2-divided": (0.20, 0.21, 0.23)}
    v = A.verdicts(folder, dev, _table(folder.parent / "test", better, "2026-12-04T20:10:00+00:00"), repo)
    assert v["H3"]["verdict"].startswith("rejected")


def test_the_test_gate_refuses_early(study):
    repo, folder, dev = study
    with pytest.raises(A.StudyError, match="dev-choice.json: missing"):
        A.ready_for_test(folder, dev)
    A.choose(folder, dev, repo)
    A.ready_for_test(folder, dev)
    sealed = folder / "runs" / A.run_name("k1", 2) / "test" / "manifest.json"
    sealed.write_text(json.dumps({"metrics": {"nDCG@10": 0.1}}))
    with pytest.raises(A.StudyError, match="holds test numbers before the test table"):
        A.ready_for_test(folder, dev)
    short = _table(folder.parent / "short", DEV, "2026-12-04T20:00:00+00:00", drop=A.run_name("k8-compensated", 3))
    with pytest.raises(A.StudyError, match="1 of the 19 rows missing or not ok"):
        A.per_seed(short)


def test_the_committed_verdicts_are_the_committed_tables():
    """The committed study's dev choice and verdicts, recomputed from its committed tables and logs."""
    study = REPO / "results/studies/confirm-rescale-nfcorpus"
    dev, test = (REPO / f"results/benchmarks/confirm-rescale-nfcorpus-{s}" for s in ("dev", "test"))
    if not (study / "verdicts.json").exists():
        assert not test.exists(), "a test table without its verdicts"
        pytest.skip("the study's verdicts are not committed yet")
    committed = json.loads((study / "verdicts.json").read_text())
    values = A.per_seed(test)
    choice = json.loads((study / "dev-choice.json").read_text())
    assert choice["best_compensated"] == A.best(A.COMPENSATED, A.per_seed(dev))
    for key, treatment in (("H1", choice["best_compensated"]), ("H3", "k2-divided")):
        d = [values[treatment][s] - values["k1"][s] for s in A.SEEDS]
        m = sum(d) / 3
        sd = math.sqrt(sum((x - m) ** 2 for x in d) / 2)
        assert committed[key]["mean"] == pytest.approx(m, abs=1e-12)
        assert committed[key]["low"] == pytest.approx(m - T * sd / math.sqrt(3), abs=1e-9)
        assert committed[key]["high"] == pytest.approx(m + T * sd / math.sqrt(3), abs=1e-9)


def test_the_results_document_shows_the_committed_analysis():
    """docs/studies/confirm-rescale-nfcorpus-results.md holds the block the analysis renders from the committed
    verdicts, tables and manifests, character for character (its per-run tables are also backed-by checked)."""
    study = REPO / "results/studies/confirm-rescale-nfcorpus"
    if not (study / "verdicts.json").exists():
        pytest.skip("the study's verdicts are not committed yet")
    dev, test = (REPO / f"results/benchmarks/confirm-rescale-nfcorpus-{s}" for s in ("dev", "test"))
    block = A.render(json.loads((study / "verdicts.json").read_text()), A.part_times(REPO, study),
                     "benchmarks/confirm-rescale-nfcorpus-dev", "benchmarks/confirm-rescale-nfcorpus-test", dev, test)
    doc = (REPO / "docs/studies/confirm-rescale-nfcorpus-results.md").read_text(encoding="utf-8")
    shown = doc[doc.index(A.BEGIN):doc.index(A.END) + len(A.END)]
    assert shown == block
