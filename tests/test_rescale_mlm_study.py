"""The committed rescaling study on a real MLM head (pipelines/train_rescale_mlm.sh) keeps its protocol: the MLM head
beats the identity head on held-out text, the grid's configuration was committed before its test evaluation, every
run was evaluated on dev before test, and the run dev selects is in the test benchmark."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from lsr_eval.models.diagnostics import suggest_k

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
GRID = ("k1", "k2", "k4", "k8", "k16", "suggested-compensated")
#: The pre-registration: what must not change after the test evaluation.
REGISTERED = ["pipelines/train/rescale-mlm-minilm-base.yaml", "pipelines/benchmarks/scifact-rescale-mlm.yaml",
              *(f"pipelines/train/rescale-mlm-minilm-{r}.yaml" for r in GRID)]
TEST = RESULTS / "benchmarks" / "scifact-rescale-mlm" / "manifest.json"


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def _manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_mlm_head_beats_the_identity_head_on_held_out_text():
    metrics = _manifest(RESULTS / "train" / "rescale-mlm-minilm-mlm" / "heldout" / "metrics.json")
    mlm, identity = metrics["mlm"], metrics["identity-head"]
    assert mlm["n"] == identity["n"] > 1000          # the same masked tokens
    assert mlm["accuracy"] > identity["accuracy"] and mlm["perplexity"] < identity["perplexity"]


def test_the_grid_was_registered_before_its_test_evaluation():
    if _git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        pytest.skip("no full git history here")
    registered = _git("log", "-1", "--format=%H", "--", *REGISTERED).stdout.strip()
    assert registered, "the grid's configs are not in the history"
    test_commit = _manifest(TEST)["commit"]
    assert _git("merge-base", "--is-ancestor", registered, test_commit).returncode == 0, \
        f"the grid's configs changed ({registered}) after its test evaluation ran at {test_commit}"
    for run in GRID:
        train = _manifest(RESULTS / "train" / f"rescale-mlm-minilm-{run}" / "manifest.json")
        assert _git("merge-base", "--is-ancestor", registered, train["commit"]).returncode == 0, run


def test_every_run_was_evaluated_on_dev_before_test_and_dev_picks_a_tested_run():
    test = _manifest(TEST)
    dev = {}
    for run in GRID:
        folder = RESULTS / "train" / f"rescale-mlm-minilm-{run}" / "dev"
        assert _manifest(folder / "manifest.json")["created"] < test["created"], run
        dev[f"rescale-mlm-minilm-{run}"] = _manifest(folder / "metrics.json")["nDCG@10"]
    chosen = max(dev, key=dev.get)
    systems = {s["name"] for s in test["config"]["systems"]}
    assert set(dev) <= systems and chosen in systems


def test_the_committed_diagnoses_are_inspect_heads_outputs():
    folders = sorted((RESULTS / "train" / "rescale-mlm-minilm-mlm" / "inspect-head").iterdir())
    assert [f.name for f in folders] == ["head-only", "identity-head", "mlm", "mlm-compensated", "splade-tiny"]
    for folder in folders:
        manifest = _manifest(folder / "manifest.json")
        diagnosis = _manifest(folder / "diagnosis.json")
        assert manifest["stage"] == "inspect-head" and {"diagnosis.json", "diagnosis.txt"} <= set(manifest["outputs"])
        assert manifest["experiment"]["tied_input"] == ("compensated" if folder.name == "mlm-compensated"
                                                        else "divided"), folder.name
        # the suggestion is the rule's on the committed rows (every committed suggestion lies within them)
        rows = [SimpleNamespace(**r) for r in diagnosis["rows"]]
        assert suggest_k(rows) == diagnosis["suggested_k"], folder.name
