"""Exact resume: stopping at step N and resuming gives the parameters (and log) of an uninterrupted run."""

from __future__ import annotations

import pytest
import torch
from train_helpers import read_log, tiny_config
from transformers import AutoModelForMaskedLM

from lsr_eval.errors import OutputExistsError
from lsr_eval.train.config import SpladeTrainConfig, from_dict
from lsr_eval.train.run import train

NUMBERS = ("loss", "rank", "l1_q", "flops_d", "lambda_q", "lambda_d", "active_dims_q", "active_dims_d", "flops",
           "head_norm", "lr", "grad_norm")


def params(folder) -> dict[str, torch.Tensor]:
    return {k: v.detach() for k, v in AutoModelForMaskedLM.from_pretrained(folder).named_parameters()}


def test_stop_and_resume_matches_uninterrupted_run(tmp_path):
    # dropout on (generator states must be restored), gradient accumulation, warm-ups crossing the stop
    common = dict(steps=5, dropout=0.1, train={"grad_accum": 2})
    full = from_dict(SpladeTrainConfig, tiny_config(tmp_path, "full", **common), "test")
    result = train(full)
    assert result.status == "done"

    cfg = tiny_config(tmp_path, "split", **common)
    cfg["train"]["checkpoint_every"] = 2
    split = from_dict(SpladeTrainConfig, cfg, "test")
    stopped = train(split, stop_after=3)
    assert stopped.status == "stopped" and stopped.step == 3
    ckpts = sorted(p.name for p in (tmp_path / "work" / "split" / "checkpoints").iterdir())
    assert ckpts == ["step-00000002", "step-00000003"]
    with pytest.raises(OutputExistsError, match="pass --resume"):
        train(split)
    resumed = train(split, resume=True)
    assert resumed.status == "done" and resumed.timings["steps_this_run"] == 2

    a, b = params(result.final_model), params(resumed.final_model)
    assert a.keys() == b.keys()
    worst = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert worst <= 1e-6
    moved = max(float((a[k] - params(tmp_path / "tiny-bert")[k]).abs().max()) for k in a)
    assert moved > 1e-3                                         # training did change the parameters

    log_a, log_b = read_log(result.log_file), read_log(resumed.log_file)
    assert [r["step"] for r in log_b] == [1, 2, 3, 4, 5]       # cut back to the checkpoint, then continued
    for ra, rb in zip(log_a, log_b):
        for key in NUMBERS:
            assert rb[key] == pytest.approx(ra[key], rel=1e-5, abs=1e-7), (ra["step"], key)
    assert not (tmp_path / "work" / "split" / "checkpoints").exists()   # removed once the final model is saved
    assert train(split, resume=True).status == "already done"
    with pytest.raises(OutputExistsError, match="a finished run"):
        train(split)


def test_seeds_train_one_run_each_with_its_own_manifest_and_resume(tmp_path, capsys):
    import json

    import yaml

    from lsr_eval.cli import main

    cfg = tiny_config(tmp_path, "fan", steps=2)
    cfg.update(name="fan", seeds=[3, 4])
    path = tmp_path / "fan.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["train", str(path), "--stop-after", "1"]) == 0
    assert main(["train", str(path), "--resume"]) == 0      # each seed's run continues from its own checkpoint
    out = capsys.readouterr().out
    assert "fan-s3: done: step 2" in out and "fan-s4: done: step 2" in out
    for seed in (3, 4):
        manifest = json.loads((tmp_path / "results" / f"fan-s{seed}" / "manifest.json").read_text())
        assert manifest["config"]["train"]["seed"] == seed and manifest["experiment"]["name"] == f"fan-s{seed}"
        assert manifest["timings"]["resumed_from"].endswith("step-00000001")
        assert [r["step"] for r in read_log(tmp_path / "results" / f"fan-s{seed}" / "log.jsonl")] == [1, 2]
        assert (tmp_path / "work" / f"fan-s{seed}" / "model").is_dir()
    logs = [read_log(tmp_path / "results" / f"fan-s{s}" / "log.jsonl") for s in (3, 4)]
    assert logs[0][0]["loss"] != logs[1][0]["loss"]             # another seed, another run
