"""``lsr-eval grid`` without SLURM: the plan (done / partial / new), skipping and resuming, the sbatch script, the
GPU-hours estimate. The real SLURM array: tests/integration/test_train_grid_slurm.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
import yaml
from train_helpers import read_log, tiny_config

from lsr_eval.cli import main
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.train import grid
from lsr_eval.train.config import SpladeTrainConfig, from_dict

REPO = Path(__file__).resolve().parents[2]
PAPER_GRIDS = sorted(p for p in REPO.glob("pipelines/train/rescale-*-k*.yaml") if "mlm-minilm" not in p.name) + sorted(
    p for p in REPO.glob("pipelines/train/efficient-splade-*.yaml") if p.stem != "efficient-splade-base")


def _write(tmp_path: Path, name: str, **kw) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(tiny_config(tmp_path, name, dropout=0.0, **kw)))
    return path


def _train(tmp_path: Path, name: str, **kw):
    from lsr_eval.train.run import train

    stop_after = kw.pop("stop_after", None)
    torch.set_num_threads(1)
    return train(from_dict(SpladeTrainConfig, tiny_config(tmp_path, name, dropout=0.0, **kw), name),
                 stop_after=stop_after)


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForMaskedLM

    return {k: v.detach() for k, v in AutoModelForMaskedLM.from_pretrained(folder).named_parameters()}


def test_grid_skips_a_finished_run_and_resumes_a_killed_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    settings = {"steps": 3, "batch_size": 4}
    killed = {"train": {"checkpoint_every": 1, "num_threads": 1, "progress": False, "bf16": False, "seed": 5}}
    done_cfg, killed_cfg = _write(tmp_path, "done", **settings), _write(tmp_path, "killed", **settings, **killed)
    new_cfg = _write(tmp_path, "new", **settings)
    _train(tmp_path, "done", **settings)
    _train(tmp_path, "killed", stop_after=2, **settings, **killed)    # a run stopped at step 2 with a checkpoint
    ref = _train(tmp_path, "ref", **settings, **killed)                # the same run, not interrupted

    runs = grid.plan([done_cfg, killed_cfg, new_cfg])
    assert [(r.name, r.status) for r in runs] == [("done", "done"), ("killed", "partial"), ("new", "new")]
    assert [r.steps_done for r in runs] == [3, 2, 0]

    broken = tiny_config(tmp_path, "broken", **settings)
    broken["data"]["dataset"] = str(tmp_path / "no-such-dataset")       # fails when it starts, not when planned
    broken_cfg = tmp_path / "broken.yaml"
    broken_cfg.write_text(yaml.safe_dump(broken))
    done_log = (tmp_path / "results" / "done" / "log.jsonl").read_text()
    assert main(["grid", str(done_cfg), str(broken_cfg), str(killed_cfg), "--set", "train.num_threads=1"]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "done: done before, skipped" in out and "killed: resuming" in out
    assert "broken: failed (exit 2); continuing with the next run" in out      # the next run still trained
    assert "1 of 3 runs are not done: broken" in captured.err
    assert (tmp_path / "results" / "done" / "log.jsonl").read_text() == done_log       # not trained again
    manifest = json.loads((tmp_path / "results" / "killed" / "manifest.json").read_text())
    assert manifest["status"] == "done" and manifest["timings"]["resumed_from"].endswith("step-00000002")
    assert [r["step"] for r in read_log(tmp_path / "results" / "killed" / "log.jsonl")] == [1, 2, 3]
    got, want = _weights(tmp_path / "work" / "killed" / "model"), _weights(ref.final_model)
    for k in want:
        assert torch.equal(got[k], want[k]), k

    # a config made invalid by an override: refused before anything runs, in one line
    assert main(["grid", str(new_cfg), "--set", "train.steps=0"]) == 2
    assert "new.yaml: train.steps must be >= 1, got 0" in capsys.readouterr().err


def test_dry_run_prints_each_command(tmp_path, capsys):
    a, b = _write(tmp_path, "a"), _write(tmp_path, "b")
    assert main(["grid", str(a), str(b), "--nproc", "2", "--dry-run"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert len(lines) == 2
    for line, cfg in zip(lines, (a, b)):
        assert "torchrun --standalone --nproc_per_node 2 -m lsr_eval.cli train" in line
        assert f"{cfg} --resume" in line


def test_sbatch_script_has_one_task_per_pending_run(tmp_path, capsys):
    a, b, c = _write(tmp_path, "a", steps=1), _write(tmp_path, "b"), _write(tmp_path, "c")
    _train(tmp_path, "a", steps=1)                                     # done: left out of the array
    rc = main(["grid", str(a), str(b), str(c), "--launcher", "slurm", "--gpus", "4", "--time", "24:00:00",
               "--partition", "gpu", "--cpus", "16", "--mem", "64G", "--sbatch-option=--account=proj",
               "--slurm-dir", str(tmp_path / "s"), "--dry-run"])
    assert rc == 0
    script = (tmp_path / "s" / "lsr-grid.sbatch").read_text()
    assert capsys.readouterr().out.endswith(script)
    for line in ("#SBATCH --array=0-1", "#SBATCH --gres=gpu:4", "#SBATCH --time=24:00:00", "#SBATCH --partition=gpu",
                 "#SBATCH --cpus-per-task=16", "#SBATCH --mem=64G", "#SBATCH --account=proj",
                 f"#SBATCH --output={tmp_path / 's'}/%x-%A_%a.out"):
        assert line in script.splitlines()
    cases = [line.strip() for line in script.splitlines() if line.strip()[:2] in ("0)", "1)", "2)")]
    assert len(cases) == 2
    assert cases[0].startswith("0) exec ") and f"{b} --resume" in cases[0] and cases[0].endswith("# b")
    assert cases[1].startswith("1) exec ") and f"{c} --resume" in cases[1] and cases[1].endswith("# c")
    assert all("--nproc_per_node 4" in line for line in cases)
    # outside an array, or for a task id without a run, the script stops with a message
    proc = subprocess.run(["bash", str(tmp_path / "s" / "lsr-grid.sbatch")], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "SLURM_ARRAY_TASK_ID": "7"})
    assert proc.returncode == 2 and "no run for array task 7" in proc.stderr


def test_one_gpu_task_runs_one_process_without_torchrun(tmp_path):
    run = grid.plan([_write(tmp_path, "a")])[0]
    script = grid.slurm_script([run], grid.SlurmOptions(gpus=1), log_dir=tmp_path)
    (case,) = [line for line in script.splitlines() if line.strip().startswith("0)")]
    assert "torchrun" not in case and "-m lsr_eval.cli train" in case
    assert "#SBATCH --gres=gpu:1" in script
    assert "--gres" not in grid.slurm_script([run], grid.SlurmOptions(gpus=0), log_dir=tmp_path)


def test_bad_grids_are_one_line_errors(tmp_path, capsys):
    a = _write(tmp_path, "a")
    twin = tmp_path / "twin.yaml"
    twin.write_text(a.read_text())
    with pytest.raises(ConfigError, match="both write"):
        grid.plan([a, twin])
    with pytest.raises(InputError, match="no such training config"):
        grid.plan([tmp_path / "missing.yaml"])
    assert main(["grid", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: no such training config" in capsys.readouterr().err


def test_estimate_is_steps_times_step_time_times_processes(tmp_path):
    runs = grid.plan([_write(tmp_path, "a", steps=3600), _write(tmp_path, "b", steps=7200)])
    rows = grid.estimate_cost(runs, step_s=0.5, processes=4)
    # 3600 steps x 0.5 s x 4 GPUs = 7200 GPU-s = 2 GPU-h; 7200 steps: 4 GPU-h
    assert [r.gpu_hours for r in rows] == [2.0, 4.0]
    assert [r.gpu_hours_left for r in rows] == [2.0, 4.0]
    text = grid.format_cost(rows)
    assert "estimate" in text.splitlines()[0] and "total (estimate): 6.000 GPU-h" in text
    unknown = grid.estimate_cost(runs)
    assert [r.gpu_hours for r in unknown] == [None, None]
    assert "over 0 of 2 runs" in grid.format_cost(unknown) and "--step-time" in grid.format_cost(unknown)
    with pytest.raises(ConfigError, match="step_time must be"):
        grid.estimate_cost(runs, step_s=0)


def test_estimate_reads_the_measured_step_time_of_a_started_run(tmp_path):
    train = {"checkpoint_every": 1, "bf16": False, "seed": 5, "progress": False}
    cfg = _write(tmp_path, "a", steps=4, train=train)
    same_shape = _write(tmp_path, "b", steps=10, train=train, regularizer={"lambda_d": 0.05})   # another lambda
    other_shape = _write(tmp_path, "c", steps=10, batch_size=2, train=train)
    _train(tmp_path, "a", steps=4, stop_after=2, train=train)
    times = sorted(r["step_time"] for r in read_log(tmp_path / "results" / "a" / "log.jsonl"))
    a, b, c = grid.estimate_cost(grid.plan([cfg, same_shape, other_shape]), step_s=99.0, processes=8)
    assert a.step_s == pytest.approx((times[0] + times[1]) / 2)           # median of the two logged steps
    assert a.processes == 1                                                 # the measured run's process count
    assert a.source.startswith("measured: ") and a.steps_left == 2
    assert a.gpu_hours == pytest.approx(4 * a.step_s / 3600)
    assert (b.step_s, b.processes, b.steps_left) == (a.step_s, 1, 10) and b.source.endswith("(a, same shape)")
    assert (c.step_s, c.processes, c.source) == (99.0, 8, "given (--step-time)")   # another batch size


def test_the_paper_grids_load_and_are_estimated(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)          # the configs' relative outputs: nothing trained here
    assert len(PAPER_GRIDS) == 43        # 7 backbones x 5 k; 8 efficient SPLADE models
    assert main(["grid", *map(str, PAPER_GRIDS), "--estimate", "--step-time", "0.5", "--nproc", "4"]) == 0
    out = capsys.readouterr().out
    assert "grid: 43 runs: 0 done, 0 to resume, 43 new" in out
    runs = grid.plan(PAPER_GRIDS)
    total = sum(r.steps for r in runs) * 0.5 * 4 / 3600
    assert f"total (estimate): {total:.3f} GPU-h" in out


def test_the_rescaling_benchmark_evaluates_every_model_the_grid_trains():
    from lsr_eval.benchmark.config import load_config
    from lsr_eval.train.config import load_config as load_train

    bench = load_config(REPO / "pipelines" / "benchmarks" / "paper-rescaling.yaml")
    assert [(d.spec, d.measures) for d in bench.datasets] == [
        ("msmarco-dev", ("RR@10", "R@1000")), ("dl19", ("nDCG@10", "R@1000(rel=2)")), ("beir-13", ("nDCG@10",))]
    assert bench.efficiency is not None                                      # FLOPs
    splade = {s.name: s.params for s in bench.systems if s.kind == "splade"}
    assert [s.name for s in bench.systems if s.kind == "bm25"] == ["bm25"]
    grid_configs = [p for p in PAPER_GRIDS if p.name.startswith("rescale-")]
    assert len(grid_configs) == 35 == len(splade)
    for path in grid_configs:                  # one system per run, named as the run, on its final model
        cfg = load_train(path)
        params = splade[cfg.name]
        assert params["model"] == f"{cfg.output.model_dir}/model"
        assert (params["max_length_q"], params["max_length_d"]) == (cfg.model.max_length_q, cfg.model.max_length_d)
        assert params.get("trust_remote_code", False) == cfg.model.trust_remote_code
    script = (REPO / "pipelines" / "paper_rescaling.sh").read_text()
    assert "pipelines/benchmarks/paper-rescaling.yaml" in script and " grid " in script


def test_the_efficiency_benchmark_has_naver_pairs_the_eight_trained_models_and_their_fusions():
    from lsr_eval.benchmark.config import load_config
    from lsr_eval.train.config import load_config as load_train

    bench = load_config(REPO / "pipelines" / "benchmarks" / "paper-efficient-splade.yaml")
    assert [(d.spec, d.measures) for d in bench.datasets] == [
        ("msmarco-dev", ("RR@10", "R@1000")), ("dl19", ("nDCG@10", "R@1000(rel=2)")), ("beir-13", ("nDCG@10",))]
    # naver's latency protocol: every dev query (6,980), k = 1000, block_max_wand over fixed-40 block-max data
    assert (bench.efficiency.hits, bench.efficiency.latency_queries, bench.efficiency.warmup) == (1000, 6980, 0)
    pisa = [s.params for s in bench.systems if s.params.get("engine") == "pisa"]
    assert len(pisa) == 12 and all(p["engine_options"] == {"index_encoding": "block_simdbp", "block_size": 40,
                                                            "query_algorithm": "block_max_wand"} for p in pisa)
    assert [s.name for s in bench.systems if s.kind == "bm25"] == ["bm25", "bm25-pisa"]
    splade = {s.name: s.params for s in bench.systems if s.kind == "splade"}
    for size in ("V-large", "VI-BT-large"):
        params = splade[f"naver-efficient-splade-{size}"]
        assert (params["model"], params["query_model"]) == (f"naver/efficient-splade-{size}-doc",
                                                            f"naver/efficient-splade-{size}-query")
    trained = [p for p in PAPER_GRIDS if p.name.startswith("efficient-splade-")]
    assert len(trained) == 8                 # V and VI-BT in three sizes, VI-doc small and medium
    for path in trained:
        cfg = load_train(path)
        assert splade[cfg.name]["model"] == f"{cfg.output.model_dir}/model"
    assert all(p["engine"] == "pisa" and p["precision"] == "fp32" for p in splade.values())
    assert splade["splade-v2-distil"]["model"] == "naver/splade_v2_distil"
    assert sorted(f.runs for f in bench.fusion) == sorted(("bm25", name) for name in splade)
    assert all(f.method == "rrf" and not f.tune for f in bench.fusion)


def test_a_config_with_seeds_is_one_run_per_seed(tmp_path, capsys):
    path = tmp_path / "arm.yaml"
    path.write_text(yaml.safe_dump({**tiny_config(tmp_path, "arm", dropout=0.0), "seeds": [1, 2]}))
    runs = grid.plan([path])
    assert [r.output_dir.name[-3:] for r in runs] == ["-s1", "-s2"] and runs[0].model_dir != runs[1].model_dir
    assert [r.overrides for r in runs] == [["seeds=[1]"], ["seeds=[2]"]]
    assert main(["grid", str(path), "--dry-run"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert len(lines) == 2 and "seeds=[1]" in lines[0] and "seeds=[2]" in lines[1]
