"""The confirmatory rescaling study on NFCorpus (docs/studies/confirm-rescale-nfcorpus.md) keeps its
pre-registration and amendment: its six arms fan out into 18 runs, every manifest of the study under results/ was
written from a commit that descends from the registration (as amended), the optimiser settings it ran with are
pinned, and test numbers come last: each run's test search is written unevaluated, and the test table follows the
dev table and the dev choice. Before any run exists the checks pass with nothing to check."""

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
              "lsr_eval/train/stability.py", "tests/unit/test_confirm_rescale_study.py"]
INSPECT = "results/train/confirm-nfcorpus-inspect-head/manifest.json"
STUDY = "results/studies/confirm-rescale-nfcorpus"
SPLITS = ("dev", "test")


def _runs():
    return [cfg for path in CONFIGS for cfg in load_configs(REPO / path)]


def study_manifests() -> list[str]:
    """Every manifest the study may write (relative to the repository): one per run, the two benchmarks, and the
    inspect-head diagnosis."""
    runs = [f"{cfg.output.dir}/manifest.json" for cfg in _runs()]
    searches = [f"{STUDY}/runs/{cfg.name}/{split}/manifest.json" for cfg in _runs() for split in SPLITS]
    benches = [f"{load_benchmark(REPO / b).out}/manifest.json" for b in BENCHMARKS]
    return runs + searches + benches + [INSPECT]


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
    assert {c.output.model_dir for c in runs} == {f"work/train/{c.name}" for c in runs}   # the driver's model paths
    for bench in BENCHMARKS:   # every run's committed search of the split the file names, and BM25
        cfg = load_benchmark(REPO / bench)
        split = bench.rsplit("-", 1)[1][:-len(".yaml")]
        assert [d.split for d in cfg.datasets] == [split]
        assert [(s.name, s.kind) for s in cfg.systems if s.kind != "run"] == [("bm25", "bm25")]
        paths = {s.name: Path(s.params["path"]) for s in cfg.systems if s.kind == "run"}
        assert paths == {c.name: REPO / STUDY / "runs" / c.name / split / "run.trec.xz" for c in runs}


def test_the_optimiser_settings_the_study_ran_with_are_pinned():
    """adam_eps and which parameters get weight decay: pinned, so that no later default moves under the study."""
    import torch

    from lsr_eval.train.trainer import param_groups

    assert {(c.optim.adam_eps, c.optim.weight_decay) for c in _runs()} == {(1e-8, 0.01)}
    text = (REPO / "pipelines/train/confirm-nfcorpus-base.yaml").read_text(encoding="utf-8")
    assert "adam_eps: 1.0e-8" in text   # in the config itself, not left to the default
    module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    decay, no_decay = param_groups(module, 0.01)
    assert [tuple(p.shape) for p in decay["params"]] == [(2, 3)] and decay["weight_decay"] == 0.01
    assert sorted(tuple(p.shape) for p in no_decay["params"]) == [(2,), (2,), (2,)]
    assert no_decay["weight_decay"] == 0.0


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
    assert len(checked) + len(missing) == 18 + 18 * 2 + 2 + 1
    if not checked:   # no run yet: nothing to check, and no stray result of the study either
        assert not list((REPO / "results" / "train").glob("confirm-nfcorpus-*"))
        assert not list((REPO / "results" / "benchmarks").glob("confirm-rescale-nfcorpus-*"))


def _manifest(rel: str) -> dict | None:
    path = REPO / rel
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def test_each_test_search_is_written_unread():
    """A run's test search holds its run file and no number: no metrics in its manifest, no metrics.json."""
    for cfg in _runs():
        folder = f"{STUDY}/runs/{cfg.name}/test"
        manifest = _manifest(f"{folder}/manifest.json")
        if manifest is None:
            continue
        assert manifest["metrics"] == {} and manifest["evaluation"]["evaluated"] is False, folder
        assert manifest["counts"]["evaluation"] is None, folder
        assert not (REPO / folder / "metrics.json").exists(), folder
        assert (REPO / folder / "run.trec.xz").is_file(), folder


def test_test_table_once_after_every_dev_number_and_the_dev_choice():
    test = _manifest("results/benchmarks/confirm-rescale-nfcorpus-test/manifest.json")
    if test is None:
        assert not (REPO / "results/benchmarks/confirm-rescale-nfcorpus-test").exists()
        return   # no test table yet: nothing to order
    dev = _manifest("results/benchmarks/confirm-rescale-nfcorpus-dev/manifest.json")
    choice = _manifest(f"{STUDY}/dev-choice.json")
    assert dev is not None, "a test table without the dev table"
    assert choice is not None, "a test table without the dev choice"
    dev_runs = [_manifest(f"{STUDY}/runs/{cfg.name}/dev/manifest.json") for cfg in _runs()]
    assert all(m is not None and m["metrics"] for m in dev_runs), "a test table before every run's dev number"
    latest_dev = max([dev["created"], *(m["created"] for m in dev_runs)])
    assert latest_dev < choice["created"] < test["created"]
