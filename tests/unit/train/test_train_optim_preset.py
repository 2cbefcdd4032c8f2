"""``optim.preset: naver`` is naver/splade's AdamW (eps 1e-6, weight decay on every parameter, no clipping), selected
by the efficient-SPLADE configs; the defaults do not move, and runs recorded before the new keys existed keep their
identity (the same experiment to resume, skip in a grid, or reproduce)."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import REPO

from lsr_eval.errors import ConfigError
from lsr_eval.train.config import ADDED_KEYS, MiddleTrainConfig, OptimConfig, load_configs, result_keys
from lsr_eval.train.trainer import param_groups

PAPER = ["efficient-splade-V-small.yaml", "efficient-splade-VI-BT-large.yaml", "middle-distilbert-msmarco.yaml",
         "middle-bert-tiny-msmarco.yaml"]


def test_the_preset_and_its_conflicts():
    naver = OptimConfig(preset="naver")
    assert (naver.adam_eps, naver.weight_decay_params, naver.max_grad_norm) == (1e-6, "all", None)
    assert OptimConfig(preset="naver", adam_eps=1e-6).adam_eps == 1e-6      # the preset's own value: fine
    with pytest.raises(ConfigError, match="optim.max_grad_norm=2.0 contradicts optim.preset=naver"):
        OptimConfig(preset="naver", max_grad_norm=2.0)
    with pytest.raises(ConfigError, match="^preset must be one of naver, got 'adam'$"):
        OptimConfig(preset="adam")
    with pytest.raises(ConfigError, match="^weight_decay_params must be one of matrices, all, got 'biases'$"):
        OptimConfig(weight_decay_params="biases")
    plain = OptimConfig()
    assert (plain.adam_eps, plain.weight_decay_params, plain.max_grad_norm) == (1e-8, "matrices", 1.0)


def test_decay_on_every_parameter():
    module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    decay, no_decay = param_groups(module, 0.01, "all")
    assert len(decay["params"]) == 4 and no_decay["params"] == []
    decay, no_decay = param_groups(module, 0.01)
    assert len(decay["params"]) == 1 and len(no_decay["params"]) == 3


@pytest.mark.parametrize("name", PAPER)
def test_the_paper_configs_select_naver_s_optimiser(name):
    cls = MiddleTrainConfig if name.startswith("middle-") else None
    for cfg in load_configs(REPO / "pipelines" / "train" / name, **({"cls": cls} if cls else {})):
        assert cfg.optim.preset == "naver" and cfg.optim.max_grad_norm is None and cfg.optim.adam_eps == 1e-6


def test_a_run_recorded_before_the_keys_existed_keeps_its_identity():
    manifest = json.loads((REPO / "results/train/rescale-mlm-minilm-k1/manifest.json").read_text())
    old = manifest["experiment"]["config"]
    assert not set(ADDED_KEYS) & set(old)                     # recorded before the keys existed
    cfg = next(c for c in load_configs(REPO / "pipelines/train/rescale-mlm-minilm-k1.yaml")
               if c.name == "rescale-mlm-minilm-k1")
    assert dict(sorted(result_keys(cfg.to_dict()).items())) == old
    # a changed value of an added key is another experiment
    changed = cfg.to_dict()
    changed["optim"]["weight_decay_params"] = "all"
    assert dict(sorted(result_keys(changed).items())) != old
