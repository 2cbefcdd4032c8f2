"""Commands that answer at once: plain ``evaluate`` and a default ``fuse`` import neither ranx nor numba nor
scipy.stats (the seconds of import and compilation they once cost), ``--baseline`` imports scipy.stats only then,
and ``--help`` imports none of them. Checked by the modules loaded, not by a clock (the host decides no test)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO, shared_path

HEAVY = ("ranx", "numba", "scipy.stats", "matplotlib", "pandas", "torch", "jnius")


def _loaded(argv: list[str], cwd) -> list[str]:
    code = ("import sys, contextlib, io\nfrom lsr_eval.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        code = main(sys.argv[1:])\n    except SystemExit as e:\n        code = e.code\n"
            f"print(code, [m for m in {HEAVY!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    return done.stdout.strip().splitlines()[-1].split(" ", 1)


@pytest.fixture
def dl19():
    folder = shared_path("msmarco-passage")
    return str(folder / "qrels.dl19-passage.txt"), [str(folder / "runs" / f"dl19.{n}.top100.trec")
                                                   for n in ("bm25-flat", "splade-pp-ed")]


def test_help_imports_nothing_heavy(tmp_path):
    assert _loaded(["--help"], tmp_path) == ["0", "[]"]


def test_evaluate_and_fuse_import_nothing_heavy(dl19, tmp_path):
    qrels, runs = dl19
    assert _loaded(["evaluate", qrels, *runs], tmp_path) == ["0", "[]"]
    assert _loaded(["fuse", *runs, "--qrels", qrels, "--out", str(tmp_path / "f.trec")], tmp_path) == ["0", "[]"]


def test_significance_imports_scipy_stats_when_asked(dl19, tmp_path):
    qrels, runs = dl19
    code, loaded = _loaded(["evaluate", qrels, *runs, "--baseline", runs[0]], tmp_path)
    assert code == "0" and "scipy.stats" in loaded and "ranx" not in loaded
