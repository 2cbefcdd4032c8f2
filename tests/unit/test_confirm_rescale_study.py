"""The confirmatory rescaling study on NFCorpus (docs/studies/confirm-rescale-nfcorpus.md) keeps its
pre-registration: its six arms fan out into 18 runs, and every manifest of the study under results/ was written
from a commit that descends from the registration. Before any run exists the check passes with nothing to check,
and says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsr_eval.benchmark.config import load_config as load_benchmark
from lsr_eval.train.config import load_configs
from study_registration import REPO, descends, full_history, git, registration_commit

ARMS = ("k1", "k2-compensated", "k4-compensated", "k8-compensated", "k16-compensated", "k2-divided")
SEEDS = [1, 2, 3]
CONFIGS = [f"pipelines/train/confirm-nfcorpus-{a}.yaml" for a in ARMS]
BENCHMARKS = [f"pipelines/benchmarks/confirm-rescale-nfcorpus-{s}.yaml" for s in ("dev", "test")]
#: The registration: what must not change once a run of the study exists.
REGISTERED = ["pipelines/train/confirm-nfcorpus-base.yaml", *CONFIGS, *BENCHMARKS,
              "pipelines/confirm_rescale_nfcorpus.sh", "docs/studies/confirm-rescale-nfcorpus.md",
              "lsr_eval/train/stability.py"]
INSPECT = "results/train/confirm-nfcorpus-inspect-head/manifest.json"


def _runs():
    return [cfg for path in CONFIGS for cfg in load_configs(REPO / path)]


def study_manifests() -> list[str]:
    """Every manifest the study may write (relative to the repository): one per run, the two benchmarks, and the
    inspect-head diagnosis."""
    runs = [f"{cfg.output.dir}/manifest.json" for cfg in _runs()]
    benches = [f"{load_benchmark(REPO / b).out}/manifest.json" for b in BENCHMARKS]
    return runs + benches + [INSPECT]


def test_the_arms_fan_out_into_eighteen_runs_on_the_registered_protocol():
    runs = _runs()
    assert [c.name for c in runs] == [f"confirm-nfcorpus-{a}-s{s}" for a in ARMS for s in SEEDS]
    assert [c.train.seed for c in runs] == SEEDS * len(ARMS)
    assert len({c.output.model_dir for c in runs}) == 18
    assert {(c.model.rescale_k, c.model.tied_input) for c in runs} == {
        (1.0, "divided"), (2.0, "compensated"), (4.0, "compensated"), (8.0, "compensated"), (16.0, "compensated"),
        (2.0, "divided")}
    assert {c.model.path for c in runs} == {"work/train/rescale-mlm-minilm-mlm/model"}   # the SciFact backbone
    assert {c.train.steps for c in runs} == {90} and {c.train.checkpoint_every for c in runs} == {20}
    for bench in BENCHMARKS:   # every run evaluated, on the split the file names, with the training's lengths
        cfg = load_benchmark(REPO / bench)
        assert [d.split for d in cfg.datasets] == [bench.rsplit("-", 1)[1][:-len(".yaml")]]
        models = {s.name: s.params.get("model") for s in cfg.systems if s.kind == "splade"}
        assert models == {c.name: f"{c.output.model_dir}/model" for c in runs}


def test_every_run_of_the_study_descends_from_its_registration():
    if not full_history():
        pytest.skip("no full git history here")
    registered = registration_commit(REGISTERED)
    assert registered, "the study's registration is not in the history"
    root = git("rev-list", "--max-parents=0", registered).stdout.split()[0]
    assert not descends(root, registered)          # the check can fail: a commit before the registration
    checked, missing = [], []
    for rel in study_manifests():
        path = REPO / rel
        if not path.exists():
            missing.append(rel)
            continue
        commit = json.loads(path.read_text(encoding="utf-8")).get("commit", "")
        assert descends(commit, registered), \
            f"{rel} was written at {commit!r}, which does not descend from the registration {registered}"
        checked.append(rel)
    assert len(checked) + len(missing) == 18 + 2 + 1
    if not checked:   # no run yet: nothing to check, and no stray result of the study either
        assert not list((REPO / "results" / "train").glob("confirm-nfcorpus-*"))
        assert not list((REPO / "results" / "benchmarks").glob("confirm-rescale-nfcorpus-*"))


def test_test_once_after_every_dev_evaluation():
    dev, test = (REPO / f"results/benchmarks/confirm-rescale-nfcorpus-{s}/manifest.json" for s in ("dev", "test"))
    if not test.exists():
        return   # no test evaluation yet: nothing to order
    assert dev.exists(), "a test evaluation without the dev evaluation"
    created = {p: json.loads(p.read_text(encoding="utf-8"))["created"] for p in (dev, test)}
    assert created[dev] < created[test]
