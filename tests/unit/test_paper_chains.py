"""The papers' chains as a networked cluster runs them: every config that ``pipelines/paper_*.sh all`` reaches,
walked in the order the script runs its commands (the script itself, with ``LSR_EVAL=echo``). No paper config builds
a random encoder, and every local input (a model, a teacher file, negatives, a run) is made by an earlier stage of
the same chain; hub ids and ir_datasets ids are fetched where the chain runs. The efficiency chain offline, through
a stand-in lsr-eval: its first check gates the training both ways (a stand-in "released" pair that misses its card
stops it with one line; pairs that meet theirs let it go on), naver's middle-trained checkpoints are its default (a
stand-in tarball, checked against its lock file), and latency is timed on MS MARCO dev only."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lsr_eval.train.config import read_yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(REPO.glob("pipelines/paper_*.sh"))
#: where a chain writes what its later stages read (a hub id or an ir_datasets id is none of these)
LOCAL = ("work/", "results/", "./", "../", "/")


def commands(script: Path, **env: str) -> list[list[str]]:
    """The lsr-eval command lines ``script all`` runs, in order (``LSR_EVAL=echo``: printed, not run). The
    efficiency chain walks our middle training (``MIDDLE_FROM=ours``; naver's checkpoints, its default, are a
    download: see the stand-in tarball tests below)."""
    env = {"MIDDLE_FROM": "ours", **env}
    out = subprocess.run(["bash", str(script), "all"], capture_output=True, text=True, check=True,
                         env={**os.environ, "LSR_EVAL": "echo", **env}).stdout
    return [shlex.split(line) for line in out.splitlines() if line.strip()]


def builds(node, where: str) -> list[str]:
    """Every ``build:`` key under a config's ``model`` (a randomly initialised encoder)."""
    if not isinstance(node, dict):
        return []
    found = [f"{where}.build"] if "build" in node else []
    return found + [b for k, v in node.items() for b in builds(v, f"{where}.{k}")]


def train_inputs(raw: dict) -> list[str]:
    model, data = raw.get("model", {}), raw.get("data", {})
    negatives = data.get("negatives") or []
    return [p for p in (model.get("path"), (model.get("query") or {}).get("path"), data.get("teacher_scores"),
                        *([negatives] if isinstance(negatives, str) else negatives)) if p]


def walk(script: Path) -> tuple[list[str], list[str], list[str]]:
    """(configs reached, random builds found, local inputs that no earlier stage makes)."""
    made: set[str] = set()
    reached, random_builds, orphans = [], [], []

    def need(path: str, what: str) -> None:
        if path.startswith(LOCAL) and path.rstrip("/") not in made:
            orphans.append(f"{what} reads {path}, which no earlier stage of {script.name} makes")

    for cmd in commands(script):
        verb, args = cmd[0], cmd[1:]
        if verb == "teacher-scores":
            made.add(args[args.index("--out") + 1])
        elif verb in ("middle-train", "grid"):
            for config in (a for a in args if a.endswith(".yaml")):
                raw = read_yaml(REPO / config)
                reached.append(config)
                random_builds += builds(raw.get("model", {}), f"{config}: model")
                for path in train_inputs(raw):
                    need(path, config)
            for config in (a for a in args if a.endswith(".yaml")):  # a grid's runs start together
                made.add(f"{read_yaml(REPO / config)['output']['model_dir']}/model")
        elif verb == "benchmark":
            reached.append(args[0])
            for system in read_yaml(REPO / args[0])["systems"]:
                for key in ("model", "query_model", "path"):
                    if system.get(key):
                        need(system[key], f"{args[0]}: system {system['name']}")
    return reached, random_builds, orphans


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_no_paper_config_builds_a_random_encoder_and_every_input_is_made_earlier(script):
    reached, random_builds, orphans = walk(script)
    assert reached, f"{script.name} all reaches no config"
    assert random_builds == []
    assert orphans == []


def test_the_efficiency_chain_is_data_middle_train_evaluate():
    cmds = commands(REPO / "pipelines" / "paper_efficient_splade.sh")
    verbs = [c[0] for c in cmds]
    # the first check first: naver's released pairs against their cards, before anything trains
    assert verbs == ["benchmark", "check-published", "teacher-scores", "middle-train", "middle-train", "grid",
                     "benchmark", "report"]
    assert cmds[0][1] == cmds[1][1] == "pipelines/benchmarks/efficient-splade-released.yaml"
    assert cmds[1][2:] == ["--expect", "pipelines/data/efficient-splade-model-cards.json"]
    grid = cmds[verbs.index("grid")]
    assert grid[grid.index("--set") + 1] == "model.middle_from=ours"     # our middle training: every run says so
    reached, _, _ = walk(REPO / "pipelines" / "paper_efficient_splade.sh")
    assert "pipelines/train/middle-bert-tiny-msmarco.yaml" in reached          # VI-BT's query encoder
    assert len([c for c in reached if c.startswith("pipelines/train/efficient-splade-")]) == 8   # V, VI-BT; VI-doc


def test_the_walk_finds_a_build_and_an_input_no_stage_makes(tmp_path, monkeypatch):
    """The check can fail: a chain whose config builds its query encoder and reads a teacher file nobody writes."""
    config = {"model": {"path": "work/train/nowhere/model", "query": {"build": {"layers": 2}}},
              "data": {"teacher_scores": "work/data/t.tsv"}, "output": {"model_dir": "work/train/x"}}
    import yaml

    (tmp_path / "pipelines" / "train").mkdir(parents=True)
    (tmp_path / "pipelines" / "train" / "x.yaml").write_text(yaml.safe_dump(config))
    script = tmp_path / "pipelines" / "paper_x.sh"
    script.write_text('read -r -a LSR <<< "${LSR_EVAL:-lsr-eval}"\n"${LSR[@]}" grid pipelines/train/x.yaml\n')
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    reached, random_builds, orphans = walk(script)
    assert reached == ["pipelines/train/x.yaml"]
    assert random_builds == ["pipelines/train/x.yaml: model.query.build"]
    assert orphans == ["pipelines/train/x.yaml reads work/train/nowhere/model, which no earlier stage of paper_x.sh "
                       "makes", "pipelines/train/x.yaml reads work/data/t.tsv, which no earlier stage of paper_x.sh "
                       "makes"]


def _naver_repo(tmp_path: Path, folders=("DistilBERT", "BERTiny"), extra: str = "") -> Path:
    """A copy of the chain's scripts and lock files with a stand-in for naver's mlm_flops.tar.gz already downloaded
    (``folders`` under models/mlm_flops, each with a config.json naming it)."""
    import shutil
    import tarfile

    for name in folders:
        folder = tmp_path / "tar" / "models" / "mlm_flops" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(f'{{"name": "{name}"}}{extra}')
    repo = tmp_path / "repo"
    (repo / "pipelines" / "data").mkdir(parents=True)
    (repo / "work" / "downloads").mkdir(parents=True)
    with tarfile.open(repo / "work" / "downloads" / "mlm_flops.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "tar" / "models", arcname="models")
    for script in ("paper_efficient_splade.sh", "grid_stages.sh"):
        shutil.copy(REPO / "pipelines" / script, repo / "pipelines" / script)
    shutil.copy(REPO / "pipelines" / "data" / "naver-mlm-flops.json", repo / "pipelines" / "data")
    return repo


def _chain(repo: Path, *args: str, lsr: str = f"{sys.executable} -m lsr_eval.cli", **env: str):
    return subprocess.run(["bash", "pipelines/paper_efficient_splade.sh", *args], cwd=repo, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO), "LSR_EVAL": lsr, **env})


def test_naver_middle_checkpoints_are_the_default_checked_and_go_where_the_configs_read_them(tmp_path):
    """``paper_efficient_splade.sh middle`` (no MIDDLE_FROM): naver's mlm_flops tarball (a stand-in, already
    downloaded) checked by lsr-eval check-archive (sha256 and file counts recorded into the lock file on the first
    run, checked after), unpacked into work/train/middle-{distilbert,bert-tiny}-msmarco/model, the folders the
    efficient configs read; ours is not run."""
    repo = _naver_repo(tmp_path)
    assert json.loads((REPO / "pipelines" / "data" / "naver-mlm-flops.json").read_text())["sha256"] is None
    out = _chain(repo, "middle")
    assert out.returncode == 0, out.stderr
    assert "middle-train" not in out.stdout and "recorded sha256, files, files_DistilBERT, files_BERTiny" in out.stdout
    lock = json.loads((repo / "pipelines" / "data" / "naver-mlm-flops.json").read_text())
    assert (lock["files"], lock["files_DistilBERT"], lock["files_BERTiny"]) == (2, 1, 1) and len(lock["sha256"]) == 64
    read = {c: read_yaml(REPO / "pipelines" / "train" / c)["model"]
            for c in ("efficient-splade-V-small.yaml", "efficient-splade-VI-BT-small.yaml")}
    for path, name in ((read["efficient-splade-V-small.yaml"]["path"], "DistilBERT"),
                       (read["efficient-splade-VI-BT-small.yaml"]["query"]["path"], "BERTiny")):
        assert (repo / path / "config.json").read_text() == f'{{"name": "{name}"}}'
    again = _chain(repo, "middle")
    assert again.returncode == 0 and "; matches pipelines/data/naver-mlm-flops.json" in again.stdout
    # the default reaches the training: every run says it started from naver's checkpoints
    train = _chain(repo, "train", lsr="echo")
    assert "--set model.middle_from=naver" in train.stdout


@pytest.mark.parametrize("case", ["changed", "missing folder", "missing tarball"])
def test_a_changed_or_incomplete_tarball_stops_the_chain_with_one_line_naming_it(tmp_path, case):
    repo = _naver_repo(tmp_path)
    assert _chain(repo, "middle").returncode == 0              # recorded
    tarball = repo / "work" / "downloads" / "mlm_flops.tar.gz"
    if case == "missing tarball":   # a folder in its way: curl is never reached, and the check names the file
        tarball.unlink()
        tarball.mkdir()
    else:
        other = _naver_repo(tmp_path / "other", ("DistilBERT",) if case == "missing folder" else
                            ("DistilBERT", "BERTiny"), extra="\n")
        tarball.write_bytes((other / "work" / "downloads" / "mlm_flops.tar.gz").read_bytes())
    out = _chain(repo, "middle")
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "work/downloads/mlm_flops.tar.gz" in lines[0], out.stderr
    expected = {"changed": "mlm_flops.tar.gz differs from the one recorded: sha256",
                "missing folder": "holds no file under a BERTiny folder",
                "missing tarball": "does not exist"}[case]
    assert expected in lines[0]


def test_middle_from_is_naver_or_ours():
    out = subprocess.run(["bash", str(REPO / "pipelines" / "paper_efficient_splade.sh"), "train"], capture_output=True,
                         text=True, env={**os.environ, "LSR_EVAL": "echo", "MIDDLE_FROM": "mine"})
    assert out.returncode == 2 and out.stderr.strip() == "MIDDLE_FROM=mine: expected naver (the default) or ours"


#: A stand-in lsr-eval for the chain: the released pairs' benchmark writes the table given in $RELEASED_TABLE (a
#: stand-in "released" pair's figures), check-published and check-archive run, every other command is printed.
STUB = """#!/usr/bin/env bash
case "$1" in
    check-published|check-archive) exec "$PYTHON" -m lsr_eval.cli "$@" ;;
    benchmark) if [ "$2" = pipelines/benchmarks/efficient-splade-released.yaml ]; then
                   mkdir -p results/benchmarks/efficient-splade-released
                   cp "$RELEASED_TABLE" results/benchmarks/efficient-splade-released/table.json
               fi ;;
esac
echo "$@"
"""


def _released(tmp_path: Path, v_large: tuple[float, float], bt_large: tuple[float, float]) -> Path:
    """A stand-in for the released pairs' MS MARCO dev rows (RR@10, R@1000 as fractions)."""
    rows = [{"dataset": "msmarco-dev", "system": f"naver-efficient-splade-{size}", "status": "ok", "RR@10": rr,
             "R@1000": r1000} for size, (rr, r1000) in (("V-large", v_large), ("VI-BT-large", bt_large))]
    path = tmp_path / "released-table.json"
    path.write_text(json.dumps(rows))
    return path


def _chain_all(tmp_path: Path, table: Path, *args: str, **env: str):
    """``paper_efficient_splade.sh all`` in a copy of the chain (naver's tarball a stand-in, the default middle),
    through :data:`STUB`."""
    import shutil

    repo = _naver_repo(tmp_path)
    for yaml_file in ("efficient-splade-released.yaml", "paper-efficient-splade.yaml"):
        (repo / "pipelines" / "benchmarks").mkdir(exist_ok=True)
        shutil.copy(REPO / "pipelines" / "benchmarks" / yaml_file, repo / "pipelines" / "benchmarks")
    shutil.copy(REPO / "pipelines" / "data" / "efficient-splade-model-cards.json", repo / "pipelines" / "data")
    stub = tmp_path / "lsr"
    stub.write_text(STUB)
    out = _chain(repo, "all", *args, lsr=f"bash {stub}", PYTHON=sys.executable, RELEASED_TABLE=str(table), **env)
    return repo, out


def test_the_gate_stops_the_chain_with_one_line_when_a_released_pair_misses_its_card(tmp_path):
    """VI-BT-large's RR@10 0.25 points under its card's 38.0: the chain stops after the check, before the data,
    middle and training stages, with one line naming the miss; the verdict is recorded."""
    table = _released(tmp_path, (0.3880, 0.9800), (0.3775, 0.9780))
    repo, out = _chain_all(tmp_path, table)
    assert out.returncode != 0
    assert out.stdout.splitlines() == ["benchmark pipelines/benchmarks/efficient-splade-released.yaml"]
    [line] = out.stderr.strip().splitlines()
    assert line.startswith("lsr-eval check-published: error: results/benchmarks/efficient-splade-released misses")
    assert "naver-efficient-splade-VI-BT-large RR@10 37.75, published 38 (off by 0.25 > 0.2 points)" in line
    assert "V-large RR@10" not in line and "--skip-check" in line
    record = json.loads((repo / "results" / "benchmarks" / "efficient-splade-released" / "published-check.json")
                        .read_text())
    assert record["status"] == "failed"


def test_the_gate_lets_the_chain_go_on_when_both_pairs_meet_their_cards(tmp_path):
    """Both within 0.2 points: the chain goes on, with naver's checkpoints (the default, a stand-in tarball checked
    and recorded) and every trained run labelled with them; latency on MS MARCO dev only."""
    table = _released(tmp_path, (0.3870, 0.9815), (0.3815, 0.9790))
    repo, out = _chain_all(tmp_path, table)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "meets pipelines/data/efficient-splade-model-cards.json within 0.2 points" in lines[1]
    verbs = [line.split()[0] for line in lines]
    # check (benchmark, then check-published's line), data, naver's tarball checked (check-archive's line, no
    # middle-train), train, evaluate, report
    assert verbs == ["benchmark", "results/benchmarks/efficient-splade-released", "teacher-scores",
                     "work/downloads/mlm_flops.tar.gz:", "grid", "benchmark", "report"]
    assert "--set model.middle_from=naver" in lines[4]
    assert json.loads((repo / "pipelines" / "data" / "naver-mlm-flops.json").read_text())["files_BERTiny"] == 1
    assert (repo / "work" / "train" / "middle-bert-tiny-msmarco" / "model" / "config.json").is_file()


def test_skip_check_goes_on_without_the_check_and_records_it(tmp_path):
    table = _released(tmp_path, (0.30, 0.90), (0.30, 0.90))          # would miss: never compared
    for how in ({"args": ("--skip-check",), "env": {}}, {"args": (), "env": {"SKIP_CHECK": "1"}}):
        repo, out = _chain_all(tmp_path / str(len(how["args"])), table, *how["args"], **how["env"])
        assert out.returncode == 0, out.stderr
        assert "skipped (asked for): nothing compared" in out.stdout.splitlines()[0]
        assert not any(line.startswith("benchmark pipelines/benchmarks/efficient-splade-released")
                       for line in out.stdout.splitlines())
        record = json.loads((repo / "results" / "benchmarks" / "efficient-splade-released" /
                             "published-check.json").read_text())
        assert record["status"] == "skipped"


def test_latency_is_timed_on_ms_marco_dev_only():
    """The new timing protocol: BEIR-13 and DL19 get FLOPs and index sizes, no latency (the table shows none)."""
    from lsr_eval.benchmark.config import load_config

    bench = load_config(REPO / "pipelines" / "benchmarks" / "paper-efficient-splade.yaml")
    assert bench.efficiency.latency_datasets == ("msmarco-dev",)
    assert bench.efficiency.timed_passes == 2   # PISA's queries tool: an untimed pass, 2 timed ones pooled
    assert [d for d in bench.datasets if bench.efficiency.times(d, d.spec)] == [bench.datasets[0]]
    assert bench.datasets[0].spec == "msmarco-dev"
