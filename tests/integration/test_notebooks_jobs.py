"""The notebooks of the three jobs (notebooks/reproduce_a_table.ipynb, fuse_with_bm25.ipynb; the sparsity plots are
tables_and_tradeoffs.ipynb, tests/integration/test_report_notebooks.py) are committed with their outputs, and rerun here
through the Python API to the same outputs."""

from __future__ import annotations

import os

import pytest
from conftest import REPO, shared_path

JOBS = ("reproduce_a_table.ipynb", "fuse_with_bm25.ipynb")


def _results(nb) -> list[str]:
    """The plain-text results of every code cell (tables and printed lines; progress and warnings left out)."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            if o.get("output_type") == "execute_result":
                out.append(o["data"]["text/plain"])
            elif o.get("output_type") == "stream" and o.get("name") == "stdout":
                out.append(o["text"])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", JOBS)
def test_job_notebook_reruns_to_its_committed_outputs(name, monkeypatch, scifact_impact):
    """fuse_with_bm25's splade-tiny has the quickstart's settings: its SciFact encoding is the session's (reused from
    the work folder, as a user's second run reuses the first's)."""
    try:
        import nbclient
        import nbformat
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("nbclient/nbformat/ipykernel not installed (pip install -e '.[test]')")
    shared_path("msmarco-passage")
    monkeypatch.setenv("LSR_EVAL_WORK", str(scifact_impact.work))
    path = REPO / "notebooks" / name
    committed = nbformat.read(path, as_version=4)
    expected = _results(committed)
    assert expected, f"{name} is committed without its outputs"
    assert not any(str(REPO) in text or "/work/" in text for text in expected), (
        f"{name}: a machine's path in its outputs")
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    assert _results(nb) == expected
