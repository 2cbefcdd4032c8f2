"""Committed results name no folder of the machine that made them: paths are relative to the checkout or anchored
(``$WORK/``, ``site-packages:``, ...), written so by the manifest writer and read back by ``reproduce``."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsr_eval import manifest
from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import anchor_path, is_anchored, prepare_output, resolve_anchor, write_manifest
from lsr_eval.reproduce.paths import PathMap, locate

REPO = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("relativize_results", REPO / "pipelines" / "relativize_results.py")
_SCRIPT = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_SCRIPT)
RECORDED_ROOTS, relativize, relativize_file = _SCRIPT.RECORDED_ROOTS, _SCRIPT.relativize, _SCRIPT.relativize_file

#: An absolute path of a machine (not a URL, not the tail of a relative path).
ABSOLUTE = re.compile(r"(?<![\w.~$:/\\-])/(?:work|root|tmp|usr|opt|home|mnt|srv|var|Users|private)/")


def absolute_paths(folder: Path) -> list[str]:
    """``file:line: text`` of every absolute path in the text files under ``folder``."""
    hits = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:   # a PNG, a PDF
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if ABSOLUTE.search(line):
                hits.append(f"{path.relative_to(folder.parent)}:{number}: {line.strip()[:160]}")
    return hits


def test_committed_results_hold_no_absolute_path():
    hits = absolute_paths(REPO / "results")
    assert not hits, (f"{len(hits)} absolute path(s) under results/ (run python pipelines/relativize_results.py):\n"
                      + "\n".join(hits[:40]))


def test_the_scan_sees_an_absolute_path(tmp_path: Path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.md").write_text("ok https://x.org/work/y and $WORK/x\nrun /work/main/work/x\n")
    assert absolute_paths(tmp_path / "results") == ["results/a.md:2: run /work/main/work/x"]


@pytest.mark.parametrize("old, new", [
    ("/work/main/lsr_eval/cli.py", "lsr_eval/cli.py"),
    ("/work/wt22b/work/indexes/bm25-x/index", "$WORK/indexes/bm25-x/index"),
    ("/work/wt-h13/results/train", "results/train"),
    ("/work/main", "."),
    ("/work/shared/data/beir/scifact/corpus.jsonl", "../shared/data/beir/scifact/corpus.jsonl"),
    ("/tmp/work/collections/m/docs", "$WORK/collections/m/docs"),
    ("/tmp/sp-random", "$TMPDIR/sp-random"),
    ("/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/cognition/model", "site-packages:cognition/model"),
    ("/root/.pyenv/versions/3.11.7/bin/lsr-eval", "scripts:lsr-eval"),
    ("/root/.ir_datasets/msmarco-passage/qrels.txt", "~/.ir_datasets/msmarco-passage/qrels.txt"),
    ("/work/mainly/x", "/work/mainly/x"),   # not a checkout: whole components only
])
def test_old_machines_paths_are_anchored(old: str, new: str):
    assert anchor_path(old, RECORDED_ROOTS) == new


def test_paths_inside_text_are_rewritten_once_and_the_rewrite_is_idempotent():
    text = ('"results: /work/main/results", --datasets /work/shared/data/beir/nfcorpus,'
            '/work/wt23/work/x; https://github.com/a/b 1/2 &quot;/root/.pyenv/versions/3.11.7/bin/lsr-eval&quot;')
    new, count = relativize(text)
    assert new == ('"results: results", --datasets ../shared/data/beir/nfcorpus,$WORK/x; https://github.com/a/b 1/2 '
                   '&quot;scripts:lsr-eval&quot;')
    assert count == 4
    assert relativize(new) == (new, 0)


def test_a_json_file_keeps_its_numbers_and_a_rewrite_that_changes_keys_is_refused(tmp_path: Path):
    good = tmp_path / "m.json"
    good.write_text(json.dumps({"path": "/work/main/work/x", "n": 3, "v": [0.5, None, True]}, indent=2))
    assert relativize_file(good) == 1
    assert json.loads(good.read_text()) == {"path": "$WORK/x", "n": 3, "v": [0.5, None, True]}
    assert relativize_file(good) == 0
    keyed = tmp_path / "k.json"
    keyed.write_text('{"/work/main/a": 1}')
    with pytest.raises(LsrEvalError, match="k.json"):
        relativize_file(keyed)
    assert keyed.read_text() == '{"/work/main/a": 1}'


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    """A committed checkout (with a shared folder beside it) standing in for the lsr-eval that runs."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "repo"
    (root / "results").mkdir(parents=True)
    (root / "results" / "old.json").write_text("{}\n")
    (root / ".gitignore").write_text("/work/\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    monkeypatch.setattr(manifest, "SOURCE_ROOT", root)
    monkeypatch.delenv(manifest.WORK_ENV, raising=False)
    monkeypatch.setattr(manifest, "_WORK_FOLDERS", [])
    return root


def test_a_manifest_under_results_records_relative_and_anchored_paths(repo: Path, tmp_path: Path, monkeypatch):
    site = manifest._site_folders()[0]
    scripts = manifest.sysconfig.get_path("scripts")
    work = tmp_path / "cache"
    manifest.note_work_folder(work)
    monkeypatch.setattr(sys, "argv", [f"{scripts}/lsr-eval", "bm25", "--work-dir", str(work),
                                      f"--out={repo}/results/bm25"])
    experiment = {"corpus": str(tmp_path / "shared" / "data" / "corpus.jsonl"), "model": f"{site}/cognition/model"}
    out = prepare_output(repo / "results" / "bm25", experiment)
    write_manifest(out, "bm25", experiment, index={"path": str(work / "indexes" / "i")},
                   note=f"cached in {repo}/work/x")
    text = (out / "manifest.json").read_text()
    doc = json.loads(text)
    assert doc["experiment"] == {"corpus": "../shared/data/corpus.jsonl", "model": "site-packages:cognition/model"}
    assert doc["command"] == ["scripts:lsr-eval", "bm25", "--work-dir", "$WORK", "--out=results/bm25"]
    assert doc["index"] == {"path": "$WORK/indexes/i"} and doc["note"] == "cached in $WORK/x"
    assert str(tmp_path) not in text
    # the same experiment, given with this machine's paths, is the one the folder holds: no refusal on a rerun
    assert prepare_output(out, experiment) == out


def test_a_run_copied_from_the_work_folder_into_results_is_anchored(repo: Path):
    from lsr_eval.benchmark.run import _copy_small

    run_dir = repo / "work" / "benchmarks" / "b" / "runs" / "bm25" / "scifact"
    run_dir.mkdir(parents=True)
    write_manifest(run_dir, "bm25", {"k1": 0.9}, index={"path": str(repo / "work" / "indexes" / "i")})
    (run_dir / "metrics.json").write_text('{"nDCG@10": 0.5}\n')
    dest = repo / "results" / "b" / "runs" / "bm25" / "scifact"
    _copy_small(run_dir, dest)
    assert json.loads((dest / "manifest.json").read_text())["index"] == {"path": "$WORK/indexes/i"}
    assert (dest / "metrics.json").read_text() == '{"nDCG@10": 0.5}\n'


def test_a_manifest_outside_results_keeps_its_paths(repo: Path, tmp_path: Path):
    """The work folder's caches compare their recorded keys with raw ones: they are written as given."""
    out = repo / "work" / "slot"
    out.mkdir(parents=True)
    write_manifest(out, "index", {"corpus": str(tmp_path / "shared" / "c.jsonl")})
    assert json.loads((out / "manifest.json").read_text())["experiment"] == {"corpus": str(tmp_path / "shared" /
                                                                                         "c.jsonl")}


def test_reproduce_reads_old_absolute_and_new_anchored_paths(tmp_path: Path, monkeypatch):
    monkeypatch.setenv(manifest.WORK_ENV, str(tmp_path / "w"))
    site = next(f for f in manifest._site_folders() if Path(f, "pytest").is_dir())
    plain = PathMap()
    assert plain.apply("/work/shared/data/beir/scifact") == "/work/shared/data/beir/scifact"   # an old manifest
    assert plain.apply("$WORK/indexes/i") == str(tmp_path / "w" / "indexes" / "i")
    assert plain.apply("site-packages:pytest") == str(Path(site, "pytest"))
    assert plain.apply("~/.ir_datasets/x") == str(Path.home() / ".ir_datasets" / "x")
    assert plain.apply("../shared/data/x") == "../shared/data/x"   # relative: located by the caller
    assert is_anchored("../shared/data/x") and is_anchored("$WORK") and not is_anchored("results/r")
    mapped = PathMap.parse(["$WORK=/data/work", "/work/shared/data=/data/shared"])
    assert mapped.apply("$WORK/indexes/i") == "/data/work/indexes/i"
    assert mapped.apply("/work/shared/data/beir/x") == "/data/shared/beir/x"
    (tmp_path / "repo" / "results" / "r").mkdir(parents=True)
    assert locate("results/r", [tmp_path / "elsewhere", tmp_path / "repo"], plain) == str(tmp_path / "repo" /
                                                                                         "results" / "r")
    assert resolve_anchor("results/r", tmp_path / "repo") == str(tmp_path / "repo" / "results" / "r")


def test_a_replayed_pipeline_command_maps_old_absolute_and_new_anchored_arguments():
    from lsr_eval.reproduce.jobs import Options
    from lsr_eval.reproduce.pipeline import _arguments

    options = Options(paths=PathMap.parse(["$WORK=/nowhere/w", "/work/shared/data=/nowhere/shared"]))
    args, missing, had_work = _arguments(["--datasets", "$WORK/x", "/work/shared/data/beir/y", "--k", "10",
                                          "--work-dir", "$WORK"], options)
    assert args == ["--datasets", "/nowhere/w/x", "/nowhere/shared/beir/y", "--k", "10"] and had_work
    assert missing == ["/nowhere/w/x", "/nowhere/shared/beir/y"]


def test_a_training_run_under_results_is_the_same_run_when_given_again_with_this_machines_paths(repo: Path):
    from lsr_eval.errors import OutputExistsError
    from lsr_eval.train.config import OutputConfig
    from lsr_eval.train.trainer import check_outputs

    out = repo / "results" / "train" / "run"
    out.mkdir(parents=True)
    config = {"data": {"dataset": str(repo / "work" / "scifact-dev")}, "lr": 1e-4}
    write_manifest(out, "train", {"config": config})
    assert json.loads((out / "manifest.json").read_text())["experiment"]["config"]["data"] == {
        "dataset": "$WORK/scifact-dev"}
    output = OutputConfig(dir=str(out), model_dir=str(repo / "work" / "model"))
    check_outputs(output, config, resume=False, overwrite=False)   # the same run: accepted
    with pytest.raises(OutputExistsError, match="another training run"):
        check_outputs(output, {**config, "lr": 2e-4}, resume=False, overwrite=False)
