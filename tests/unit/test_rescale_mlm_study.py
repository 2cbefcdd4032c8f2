"""The committed rescaling study on a real MLM head (pipelines/train_rescale_mlm.sh) keeps its protocol: the MLM head
beats the identity head on held-out text, the grid's configuration was committed before its test evaluation, every
run was evaluated on dev before test, and the run dev selects is in the test benchmark."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from study_registration import as_now, descends, full_history, registration_commit

from lsr_eval.models.diagnostics import suggest_k

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results"
GRID = ("k1", "k2", "k4", "k8", "k16", "suggested-compensated")
#: The MLM backbone's configs (stage 1: the head alone; stage 2: every parameter).
MLM_CONFIGS = ["pipelines/train/rescale-mlm-minilm-head.yaml", "pipelines/train/rescale-mlm-minilm-mlm.yaml"]
#: The pre-registration: what must not change after the test evaluation (the stability criteria included).
REGISTERED = ["pipelines/train/rescale-mlm-minilm-base.yaml", "pipelines/benchmarks/scifact-rescale-mlm.yaml",
              *(f"pipelines/train/rescale-mlm-minilm-{r}.yaml" for r in GRID), *MLM_CONFIGS,
              "lsr_eval/train/stability.py"]
TEST = RESULTS / "benchmarks" / "scifact-rescale-mlm" / "manifest.json"


def _manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_mlm_head_beats_the_identity_head_on_held_out_text():
    metrics = _manifest(RESULTS / "train" / "rescale-mlm-minilm-mlm" / "heldout" / "metrics.json")
    mlm, identity = metrics["mlm"], metrics["identity-head"]
    assert mlm["n"] == identity["n"] > 1000          # the same masked tokens
    assert mlm["accuracy"] > identity["accuracy"] and mlm["perplexity"] < identity["perplexity"]


def test_the_grid_was_registered_before_its_test_evaluation():
    if not full_history():
        pytest.skip("no full git history here")
    registered = registration_commit(REGISTERED)
    assert registered, "the grid's configs are not in the history"
    test_commit = _manifest(TEST)["commit"]
    assert descends(test_commit, registered) and as_now(test_commit, REGISTERED), \
        f"the grid's configs changed ({registered}) after its test evaluation ran at {test_commit}"
    for run in GRID:
        train = _manifest(RESULTS / "train" / f"rescale-mlm-minilm-{run}" / "manifest.json")
        assert descends(train["commit"], registered) and as_now(train["commit"], REGISTERED), run
    for config in MLM_CONFIGS:                           # each backbone stage's config precedes its training
        run = Path(config).stem
        manifest = _manifest(RESULTS / "train" / run / "manifest.json")
        assert descends(manifest["commit"], registration_commit([config])), run


def test_every_run_was_evaluated_on_dev_before_test_and_dev_picks_a_tested_run():
    test = _manifest(TEST)
    dev = {}
    for run in GRID:
        folder = RESULTS / "train" / f"rescale-mlm-minilm-{run}" / "dev"
        assert _manifest(folder / "manifest.json")["created"] < test["created"], run
        dev[f"rescale-mlm-minilm-{run}"] = _manifest(folder / "metrics.json")["nDCG@10"]
    best = max(dev.values())
    chosen = [run for run, v in dev.items() if v == best]
    assert len(chosen) == 1, f"dev does not single out a run: {chosen}"
    systems = {s["name"] for s in test["config"]["systems"]}
    assert set(dev) <= systems and chosen[0] in systems
    # the record names the same run as chosen: the bold dev nDCG@10 of docs/training.md's grid table
    assert _marked_on_dev(REPO / "docs" / "training.md") == (chosen[0], round(best, 4))


def _marked_on_dev(doc: Path) -> tuple[str, float]:
    """(run, value) of the grid table's row whose dev nDCG@10 cell is bold (the run the study reports chosen)."""
    header, marked = None, []
    for line in doc.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "run" and "dev nDCG@10" in cells:
            header = cells.index("dev nDCG@10")
        elif header is not None and cells[0].startswith("`rescale-mlm-minilm-"):
            if cells[header].startswith("**"):
                marked.append((cells[0].strip("`"), float(cells[header].strip("*"))))
        elif header is not None and not line.startswith("|"):
            header = None
    assert len(marked) == 1, f"{doc}: expected one bold dev nDCG@10 in the grid table, found {marked}"
    return marked[0]


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
