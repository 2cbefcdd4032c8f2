"""The exploratory controls of the NFCorpus rescaling study (docs/studies/confirm-rescale-nfcorpus-controls.md) keep
their pre-registration: the 900-step configs are the registered arms with only the step count (and the checkpoint
cadence, which changes no number) changed; every manifest the controls wrote descends from the registration; the
registered statements follow the yardstick on hand-made differences; and the committed summary is what the committed
runs and tables give."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from study_registration import REPO, descends, full_history, git, registration_commit

from lsr_eval.train.config import flatten, load_configs

REGISTERED = ["docs/studies/confirm-rescale-nfcorpus-controls.md", "pipelines/confirm_rescale_controls.sh",
              "studies/confirm_rescale_nfcorpus/controls.py", "pipelines/train/confirm-controls-k1-900.yaml",
              "pipelines/train/confirm-controls-k16-compensated-900.yaml",
              "tests/unit/test_confirm_rescale_controls.py"]
CONTROLS = REPO / "results/studies/confirm-rescale-nfcorpus-controls"
DEV_TABLE = REPO / "results/benchmarks/confirm-rescale-nfcorpus-dev"
TEST_TABLE = REPO / "results/benchmarks/confirm-rescale-nfcorpus-test"


def _load():
    spec = importlib.util.spec_from_file_location("confirm_controls",
                                                  REPO / "studies/confirm_rescale_nfcorpus/controls.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


C = _load()


def _manifests() -> list[Path]:
    found = sorted(CONTROLS.rglob("manifest.json")) if CONTROLS.exists() else []
    return found + sorted((REPO / "results/train").glob("confirm-controls-*/manifest.json"))


@pytest.mark.parametrize("arm", C.LONG)
def test_the_900_step_runs_are_the_registered_arms_with_only_the_steps_changed(arm):
    (long,) = load_configs(REPO / f"pipelines/train/confirm-controls-{arm}-900.yaml")
    (base,) = load_configs(REPO / f"pipelines/train/confirm-nfcorpus-{arm}.yaml", ["seeds=[1]"])
    a, b = flatten(long.to_dict()), flatten(base.to_dict())
    changed = {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}
    assert changed == {"train.steps", "train.checkpoint_every", "train.keep_checkpoints", "name", "output.dir",
                       "output.model_dir"}
    assert (long.train.steps, long.train.checkpoint_every, long.train.seed) == (900, 100, 1)
    assert long.train.keep_checkpoints >= len(C.CURVE)      # every point of the curve is kept
    assert long.output.model_dir == f"work/train/{long.name}"  # the driver's paths
    assert long.name == f"confirm-controls-{arm}-900-s1"


def test_every_manifest_of_the_controls_descends_from_their_registration():
    if not full_history():
        pytest.skip("no full git history here")
    registered = registration_commit(REGISTERED)
    assert registered, "the controls' registration is not in the history"
    root = git("rev-list", "--max-parents=0", registered).stdout.split()[0]
    assert not descends(root, registered)          # the check can fail: a commit before the registration
    for path in _manifests():
        commit = json.loads(path.read_text(encoding="utf-8")).get("commit", "")
        assert descends(commit, registered), \
            f"{path.relative_to(REPO)} was written at {commit!r}, before the registration {registered}"


def test_the_learning_curve_searches_dev_only():
    long = CONTROLS / "long"
    splits = {p.parent.name for p in long.rglob("manifest.json")} if long.exists() else set()
    assert splits <= {"dev"}


def test_the_statements_follow_the_yardstick():
    sd = 0.01
    assert C._verdict(0.0201, sd) == "remains"
    assert C._verdict(0.0199, sd) == "gone" and C._verdict(-0.0199, sd) == "gone"
    assert C._verdict(-0.0201, sd) == "reversed"
    assert C._verdict(None, sd) is None


def test_the_yardstick_is_the_confirmatory_seed_noise():
    y = C.summarise(CONTROLS, DEV_TABLE, TEST_TABLE)["yardstick"]
    assert [round(d, 4) for d in y["seed_diffs_dev"]] == [0.0562, 0.0413, 0.0461]
    assert round(y["sd"], 4) == 0.0076 and round(y["threshold"], 4) == 0.0152


def test_the_committed_summary_is_what_the_committed_runs_give():
    path = CONTROLS / "summary.json"
    if not path.exists():
        pytest.skip("no control has been summarised yet")
    summary = C.summarise(CONTROLS, DEV_TABLE, TEST_TABLE)
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(summary))
    assert (CONTROLS / "summary.md").read_text(encoding="utf-8") == C.render(summary)
