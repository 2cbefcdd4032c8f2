"""The MS MARCO scale study's memory model and its 8.8M run (studies/msmarco_scale/scale.py, full.py): the model
and the refusal rule by hand, and the committed results made again from their raw files, run after registration."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "studies" / "msmarco_scale"))
from full import memory_refusal, steps  # noqa: E402
from scale import memory_model  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "studies"
MB = 2**20


def _rows(points: dict[int, tuple[int, int]]) -> list[dict]:
    """size -> (postings, peak RSS bytes), as one engine's index rows."""
    return [{"size": s, "engine": "e", "stage": "index", "status": "ok", "postings": p, "peak_rss_bytes": r}
            for s, (p, r) in points.items()]


def test_memory_model_by_hand():
    # exactly 100 MiB + 10 bytes per posting on the fit sizes; the check size measures 20% above the line
    fit = {1: (1_000_000, 100 * MB + 10_000_000), 2: (2_000_000, 100 * MB + 20_000_000),
           3: (4_000_000, 100 * MB + 40_000_000)}
    predicted = 100 * MB + 80_000_000
    rows = _rows({**fit, 4: (8_000_000, int(predicted * 1.25))})
    model = memory_model(rows, (1, 2, 3), 4)["e/index"]
    assert model["fixed_mb"] == pytest.approx(100) and model["bytes_per_posting"] == pytest.approx(10)
    assert model["predicted_mb"] == pytest.approx(predicted / MB)
    assert model["error"] == pytest.approx(0.2)          # (measured - predicted) / measured = 0.25 / 1.25
    assert "error" not in memory_model(rows, (1, 2, 3), 5)["e/index"]   # no check size measured: no error


def test_refusal_only_when_even_the_low_end_of_the_checked_error_is_over_budget():
    gen = [{"size": 10, "engine": "shared", "stage": "generate", "status": "ok", "documents": 10, "postings": 1000}]
    model = {"e/index": {"fixed_mb": 0.0, "bytes_per_posting": 1000.0, "error": -0.5, "check_size": 10}}
    # 100 postings a document: 1e5 bytes a document; 2e5 documents -> 2e10 bytes predicted
    assert memory_refusal(model, gen, "e", "index", 200_000, budget=int(1.5e10)) is None
    # the error is (measured - predicted) / measured: the lowest measure it allows is 2e10 / 1.5 = 1.33e10 bytes
    assert memory_refusal(model, gen, "e", "index", 200_000, budget=int(1.34e10)) is None
    why = memory_refusal(model, gen, "e", "index", 200_000, budget=int(1.32e10))
    assert why and "not started" in why and "18.6 GiB" in why and "error -50.0%" in why
    # the collection's own postings, once generated, replace the estimate: 1e5 postings -> 1e8 bytes, under 1.32e10
    assert memory_refusal(model, gen, "e", "index", 200_000, budget=int(1.32e10), postings=1e5) is None
    unchecked = {"e/index": {"fixed_mb": 0.0, "bytes_per_posting": 1000.0}}
    assert memory_refusal(unchecked, gen, "e", "index", 200_000, budget=1) is None   # no check: never refused


def test_steps_search_every_dev_query_with_one_engine_only():
    assert steps(["pisa", "anserini"]) == [("generate", None, 0), ("index", "pisa", 0), ("search", "pisa", 1000),
                                           ("search", "pisa", 6980), ("index", "anserini", 0),
                                           ("search", "anserini", 1000)]


def _descends_from_registration(manifest: Path, registered_in: str) -> bool:
    """The commit that ran ``manifest`` descends from the first commit that had ``registered_in`` (the README
    section that registered the run, found by its heading)."""
    registered = subprocess.run(["git", "log", "--format=%H", "-S", registered_in, "--",
                                 "studies/msmarco_scale/README.md"], cwd=REPO, capture_output=True, text=True,
                                check=True).stdout.split()
    ran = json.loads(manifest.read_text())["commit"]
    return bool(registered) and subprocess.run(["git", "merge-base", "--is-ancestor", registered[-1], ran],
                                               cwd=REPO).returncode == 0


def _close(made, committed) -> bool:
    """Equal, floats to 1e-9 relative: the least-squares fit's last digits follow the CPU's BLAS kernels (an AVX2
    EPYC and an AMX Xeon differ in the 16th digit), the model does not."""
    if isinstance(made, dict):
        return isinstance(committed, dict) and made.keys() == committed.keys() and \
            all(_close(made[k], committed[k]) for k in made)
    if isinstance(made, list):
        return isinstance(committed, list) and len(made) == len(committed) and \
            all(_close(a, b) for a, b in zip(made, committed))
    if isinstance(made, float) and isinstance(committed, (int, float)):
        return math.isclose(made, committed, rel_tol=1e-9, abs_tol=1e-12)
    return made == committed


def test_a_changed_model_is_not_close():
    model = {"pisa/index": {"bytes_per_posting": 18.204458063767238, "fit_sizes": [10000, 100000]}}
    assert _close(model, {"pisa/index": {"bytes_per_posting": 18.20445806376724, "fit_sizes": [10000, 100000]}})
    assert not _close(model, {"pisa/index": {"bytes_per_posting": 18.2045, "fit_sizes": [10000, 100000]}})
    assert not _close(model, {"pisa/index": {"bytes_per_posting": 18.204458063767238, "fit_sizes": [10000]}})


def test_the_committed_memory_model_is_made_again_from_its_rows():
    folder = RESULTS / "msmarco-scale-memory"
    if not (folder / "scale.json").is_file():
        pytest.skip("the memory model has not been committed")
    from scale import summary_md

    doc = json.loads((folder / "scale.json").read_text())
    made = json.loads(json.dumps(memory_model(doc["rows"], doc["fit_sizes"], doc["check_size"])))
    assert _close(made, doc["model"]), (made, doc["model"])
    assert summary_md(doc) == (folder / "summary.md").read_text()
    assert _descends_from_registration(folder / "manifest.json", "## Memory model per engine and stage")


def test_the_committed_8_8m_run_is_made_again_from_its_rows():
    folder = RESULTS / "msmarco-scale-8.8m"
    if not (folder / "full.json").is_file():
        pytest.skip("the 8.8M run has not been committed")
    from full import summary_md

    doc = json.loads((folder / "full.json").read_text())
    assert summary_md(doc) == (folder / "summary.md").read_text()
    assert doc["size"] == 8_841_823
    assert _descends_from_registration(folder / "manifest.json", "## D2: 8,841,823 documents")


def test_every_table_row_of_the_scale_page_is_a_row_of_a_committed_summary():
    """docs/studies/msmarco-scale.md copies its tables from the committed summaries: each row must be one of theirs."""
    page = REPO / "docs" / "studies" / "msmarco-scale.md"
    summaries = [RESULTS / f"msmarco-scale-{n}" / "summary.md" for n in ("generator", "memory", "8.8m")]
    if not all(s.is_file() for s in summaries):
        pytest.skip("the scale study's results are not all committed")
    summaries += [s for s in [RESULTS / "msmarco-scale-duplication" / "summary.md",   # D3, D4 and D5, once run
                              RESULTS / "msmarco-scale-engines" / "summary.md",
                              RESULTS / "msmarco-scale-engines" / "tables.md",
                              RESULTS / "msmarco-scale-8.8m-engines" / "summary.md",
                              RESULTS / "msmarco-scale-8.8m-engines" / "tables.md",
                              RESULTS / "msmarco-scale-8.8m-engines" / "plan.md"] if s.is_file()]
    rows = {line for s in summaries for line in s.read_text().splitlines() if line.startswith("|")}
    copied = [line for line in page.read_text().splitlines() if line.startswith("|")]
    assert copied and [line for line in copied if line not in rows] == []
