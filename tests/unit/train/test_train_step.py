"""One training step (the trainer's AdamW on its parameter groups, the SPLADE ranking objective with its
regularisers) lowers the loss of the batch it was taken on, on a tiny BERT."""

from __future__ import annotations

import contextlib

import torch
from tiny_models import BUILTIN_TEXT
from train_helpers import tiny_config

from lsr_eval.train.config import SpladeTrainConfig, from_dict
from lsr_eval.train.data import Example
from lsr_eval.train.distributed import DistInfo
from lsr_eval.train.ranking import RankingTask
from lsr_eval.train.recipe import build_model
from lsr_eval.train.trainer import param_groups


def _batch() -> list[Example]:
    """Query = first + last word of a document; positive = that document; negative = the next one."""
    n = 8
    return [Example(f"q{i}", f"{BUILTIN_TEXT[i].split()[0]} {BUILTIN_TEXT[i].split()[-1]}", f"d{i}", BUILTIN_TEXT[i],
                    (f"d{(i + 1) % n}",), (BUILTIN_TEXT[(i + 1) % n],), frozenset({f"d{i}"})) for i in range(n)]


def test_one_step_lowers_the_loss(tmp_path):
    torch.manual_seed(0)
    cfg = from_dict(SpladeTrainConfig, tiny_config(tmp_path, "step", dropout=0.0), "test")
    model, _ = build_model(cfg.model)
    task = RankingTask(model, None, cfg, DistInfo(), {})
    optim = cfg.optim
    optimizer = torch.optim.AdamW(param_groups(task.module, optim.weight_decay), lr=optim.lr, eps=optim.adam_eps)
    examples, step = _batch(), 10  # past the regularisers' warm-up: the same lambdas before and after
    task.module.train()

    def loss() -> tuple[torch.Tensor, dict]:
        return task.compute(task.module, examples, 0, step, contextlib.nullcontext)

    before, logs_before = loss()
    optimizer.zero_grad()
    before.backward()
    grads = [p.grad for p in task.module.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    optimizer.step()
    with torch.no_grad():
        after, logs_after = loss()
    assert float(after) < float(before.detach()), (logs_before, logs_after)
    assert logs_after["rank"] < logs_before["rank"]  # the ranking part itself improves, not only the regularisers
