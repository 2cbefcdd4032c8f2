"""DDP on CPU (gloo): 2 processes x batch B give the loss, FLOPS and gradients of 1 process x batch 2B."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from train_helpers import read_log, tiny_config

from lsr_eval.train.config import SpladeTrainConfig, from_dict
from lsr_eval.train.data import Example
from lsr_eval.train.ranking import objective
from lsr_eval.train.regularizers import flops

B, V, H = 3, 7, 5        # queries per process, vocabulary, input size of the toy encoder
WORLD = 2
REPO = Path(__file__).resolve().parents[2]


def toy_batch():
    """Global batch of 2B examples (one negative each), inputs for a linear 'encoder' and the config."""
    g = torch.Generator().manual_seed(0)
    xq = torch.randn(WORLD * B, H, generator=g)
    xpos = torch.randn(WORLD * B, H, generator=g)
    xneg = torch.randn(WORLD * B, H, generator=g)
    examples = [Example(f"q{i}", "", f"p{i}", "", (f"n{i}",), ("",), frozenset({f"p{i}"})) for i in range(WORLD * B)]
    # a false negative across processes: query 0 (process 0) also has document p4 (process 1) judged relevant
    examples[0] = Example("q0", "", "p0", "", ("n0",), ("",), frozenset({"p0", "p4"}))
    cfg = from_dict(SpladeTrainConfig, {
        "model": {"path": "unused"}, "data": {"dataset": "unused"},
        "train": {"steps": 10, "batch_size": WORLD * B}, "output": {"dir": "x", "model_dir": "y"},
        "regularizer": {"query": "l1", "lambda_q": 0.3, "document": "flops", "lambda_d": 0.7}}, "test")
    return xq, xpos, xneg, examples, cfg


def encoder():
    torch.manual_seed(1)
    return torch.nn.Linear(H, V)


def step_loss(lin, xq, xpos, xneg, examples, cfg, rank=0):
    wq = torch.relu(lin(xq))
    wd = torch.relu(lin(torch.cat([xpos, xneg])))        # slot-major: positives, then negatives
    return objective(wq, wd, examples, cfg, step=10, rank=rank)


def _worker(rank: int, init_file: str, out: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from lsr_eval.train import distributed

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    distributed.init_distributed("cpu")
    xq, xpos, xneg, examples, cfg = toy_batch()
    part = slice(rank * B, (rank + 1) * B)
    lin = encoder()
    ddp = DistributedDataParallel(lin)
    wq = torch.relu(ddp(xq[part]))
    wd = torch.relu(ddp(torch.cat([xpos[part], xneg[part]])))
    parts = objective(wq, wd, examples[part], cfg, step=10, rank=rank)
    parts["loss"].backward()
    # raw FLOPS of this process's half of a fixed matrix
    w = torch.arange(WORLD * B * V, dtype=torch.float32).reshape(WORLD * B, V).sin().abs()
    w_local = w[part].clone().requires_grad_(True)
    f = flops(w_local)
    f.backward()
    torch.save({"parts": {k: v.detach() for k, v in parts.items()}, "grad_w": lin.weight.grad,
                "grad_b": lin.bias.grad, "flops": f.detach(), "flops_grad": w_local.grad}, f"{out}-{rank}.pt")
    dist.destroy_process_group()


def test_two_processes_equal_one_process_with_twice_the_batch(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_worker, args=(str(tmp_path / "init"), str(tmp_path / "out")), nprocs=WORLD, join=True)
    got = [torch.load(tmp_path / f"out-{r}.pt") for r in range(WORLD)]

    xq, xpos, xneg, examples, cfg = toy_batch()
    lin = encoder()
    ref = step_loss(lin, xq, xpos, xneg, examples, cfg)
    ref["loss"].backward()

    # FLOPS of the documents is the same number on every process and equals the 2B-batch value
    for g in got:
        assert g["parts"]["flops_d"].item() == pytest.approx(ref["flops_d"].item(), rel=1e-6)
    # per-query terms are means over each process's queries: their average is the 2B-batch value
    for key in ("loss", "rank", "l1_q"):
        assert sum(g["parts"][key].item() for g in got) / WORLD == pytest.approx(ref[key].item(), rel=1e-6)
    # DDP-averaged gradients equal the 2B-batch gradients (in-batch negatives gathered, FLOPS all-reduced)
    for g in got:
        torch.testing.assert_close(g["grad_w"], lin.weight.grad, rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(g["grad_b"], lin.bias.grad, rtol=1e-5, atol=1e-7)

    w = torch.arange(WORLD * B * V, dtype=torch.float32).reshape(WORLD * B, V).sin().abs().requires_grad_(True)
    f = flops(w)
    f.backward()
    for r, g in enumerate(got):
        assert g["flops"].item() == pytest.approx(f.item(), rel=1e-6)
        # each process's gradient, after DDP's 1/W averaging, is the 2B-batch gradient of its rows
        torch.testing.assert_close(g["flops_grad"] / WORLD, w.grad[r * B:(r + 1) * B], rtol=1e-6, atol=1e-8)


def test_masking_the_cross_process_false_negative_matters():
    xq, xpos, xneg, examples, cfg = toy_batch()
    plain = [Example(e.qid, "", e.pos_id, "", e.neg_ids, e.neg_texts, frozenset({e.pos_id})) for e in examples]
    lin = encoder()
    masked = step_loss(lin, xq, xpos, xneg, examples, cfg)["rank"].item()
    unmasked = step_loss(lin, xq, xpos, xneg, plain, cfg)["rank"].item()
    assert masked < unmasked


def find_torchrun() -> str:
    """The ``torchrun`` of the running interpreter's environment (beside ``sys.executable``: a venv need not be on
    PATH), else the one on PATH; missing, the test skips, except under CI, where it fails."""
    beside = Path(sys.executable).with_name("torchrun")
    found = str(beside) if beside.is_file() else shutil.which("torchrun")
    if found is None:
        message = f"torchrun is neither beside {sys.executable} nor on PATH"
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(message + " (CI runs this test: install torch's console scripts)")
        pytest.skip(message)
    return found


def test_torchrun_two_processes_train_like_one(tmp_path):
    """``torchrun --nproc_per_node 2 lsr-eval train`` on a tiny model = one process with the same global batch."""
    torchrun = find_torchrun()
    # Adam's first steps are ~lr * sign(g): with eps 1e-8, float noise on a near-zero gradient element (summation
    # order differs between 1 and 2 processes) moves it by up to ~lr. eps 1e-3 keeps such elements still.
    one = tiny_config(tmp_path, "one", steps=2, batch_size=4, dropout=0.0, optim={"adam_eps": 1e-3})
    two = tiny_config(tmp_path, "two", steps=2, batch_size=4, dropout=0.0, optim={"adam_eps": 1e-3})
    (tmp_path / "two.yaml").write_text(yaml.safe_dump(two))
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([torchrun, "--standalone", "--nproc_per_node", str(WORLD), "-m", "lsr_eval.cli", "train",
                           str(tmp_path / "two.yaml")], capture_output=True, text=True, env=env, timeout=180,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]

    from lsr_eval.train.run import train

    torch.set_num_threads(1)
    ref = train(from_dict(SpladeTrainConfig, one, "test"))
    from transformers import AutoModelForMaskedLM

    a = dict(AutoModelForMaskedLM.from_pretrained(ref.final_model).named_parameters())
    b = dict(AutoModelForMaskedLM.from_pretrained(tmp_path / "work" / "two" / "model").named_parameters())
    start = dict(AutoModelForMaskedLM.from_pretrained(tmp_path / "tiny-bert").named_parameters())
    moved = max(float((a[k] - start[k]).abs().max()) for k in a)
    assert moved > 1e-4
    for k in a:
        torch.testing.assert_close(b[k].detach(), a[k].detach(), rtol=1e-5, atol=1e-6)
    log_one, log_two = read_log(ref.log_file), read_log(tmp_path / "results" / "two" / "log.jsonl")
    for r1, r2 in zip(log_one, log_two):
        for key in ("loss", "rank", "flops_d", "l1_q", "active_dims_d", "flops", "grad_norm"):
            assert r2[key] == pytest.approx(r1[key], rel=1e-4), key
    manifest = yaml.safe_load((tmp_path / "results" / "two" / "manifest.json").read_text())
    assert manifest["world_size"] == WORLD and manifest["status"] == "done"
