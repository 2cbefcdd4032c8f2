"""The replay's alias map for scripts that moved from ``pipelines/`` to ``studies/``: committed manifests keep the
command they ran (never rewritten), and each still resolves to a script of this checkout."""

from __future__ import annotations

import json

from conftest import REPO

from lsr_eval.reproduce.pipeline import MOVED_SCRIPTS, is_pipeline, script_path


def test_every_moved_script_has_its_new_home_and_left_its_old_one():
    for old, new in MOVED_SCRIPTS.items():
        assert (REPO / new).is_file(), new
        assert not (REPO / old).exists(), f"{old} moved to {new} but is still there"


def test_every_committed_script_command_resolves_to_a_script_here():
    seen = 0
    for manifest in sorted((REPO / "results").rglob("manifest.json")):
        doc = json.loads(manifest.read_text(encoding="utf-8"))
        command = [str(a) for a in doc.get("command") or []]
        if not is_pipeline(doc):
            continue
        seen += 1
        resolved = script_path(command[0])
        assert (REPO / resolved).is_file(), f"{manifest.relative_to(REPO)}: {command[0]} -> {resolved}"
    assert seen >= len(set(MOVED_SCRIPTS.values())) - 1   # every study but the GPU check has a committed result


def test_script_path_by_hand():
    assert script_path("pipelines/bench_encode.py") == "studies/encode_speed/run.py"
    assert script_path("/old/checkout/pipelines/parity_pyserini.py") == "studies/pyserini_parity/run.py"
    assert script_path("studies/msmarco_scale/check.py") == "studies/msmarco_scale/check.py"
    assert script_path("pipelines/relativize_results.py") == "pipelines/relativize_results.py"   # not moved
    assert script_path("lsr-eval") is None
    assert script_path("lsr_eval/cli.py") is None


def test_a_rerun_gets_a_fresh_scratch_folder_whichever_option_names_it():
    """A study's ``--work`` is a scratch folder like ``--work-dir``: a rerun never resumes from the recorded run's."""
    from lsr_eval.reproduce.jobs import Options
    from lsr_eval.reproduce.pipeline import _arguments

    for option in ("--work", "--work-dir"):
        args, missing, work = _arguments(["--size", "10", option, "/old/scratch", "--out", "/old/out"], Options())
        assert (args, missing, work) == (["--size", "10"], [], option)
    assert _arguments(["--size", "10"], Options())[2] is None
