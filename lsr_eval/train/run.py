"""Entry points: :func:`train` (SPLADE) and :func:`middle_train` (MLM + FLOPS), from validated configs.

Both run single-process or under ``torchrun`` (one process per device, gloo on CPU, NCCL on CUDA); every process
calls them with the same config. Order: output folders checked (before anything is loaded), seeds set, data and
model built (heads rescaled at initialisation), then :func:`lsr_eval.train.trainer.run_training`.
"""

from __future__ import annotations

import random
from typing import Any, Callable

import numpy as np
import torch

from lsr_eval.data.datasets import load_dataset
from lsr_eval.errors import ConfigError
from lsr_eval.models.device import resolve_device
from lsr_eval.models.static_query import IDF
from lsr_eval.settings import check
from lsr_eval.train import distributed
from lsr_eval.train.config import STOP_AFTER, MiddleTrainConfig, SpladeTrainConfig, result_keys
from lsr_eval.train.data import build_source
from lsr_eval.train.middle import MlmFlopsTask, load_texts
from lsr_eval.train.ranking import RankingTask
from lsr_eval.train.recipe import build_mlm, build_model
from lsr_eval.train.trainer import (
    TrainResult,
    check_outputs,
    pick_device,
    reports_dict,
    run_training,
    training_precision,
)


def _config_key(config: dict[str, Any]) -> dict[str, Any]:
    """What identifies a run: the config without the keys that do not change the numbers."""
    return dict(sorted(result_keys(config).items()))


def _setup(train_cfg):
    if train_cfg.num_threads:
        torch.set_num_threads(train_cfg.num_threads)
    info = distributed.init_distributed(resolve_device(train_cfg.device, 0).type)  # the backend: gloo or NCCL
    device = pick_device(train_cfg.device, info)
    torch.manual_seed(train_cfg.seed)
    np.random.seed(train_cfg.seed % 2**32)
    random.seed(train_cfg.seed)
    return info, device


def _run(cfg: SpladeTrainConfig | MiddleTrainConfig, stage: str,
         build: Callable[[Any, Any], tuple[Any, dict, Any]], *, resume: bool, overwrite: bool,
         stop_after: int | None) -> TrainResult:
    """Shared by both entry points: outputs checked, process group and seeds set up, ``build(info, precision)`` ->
    ``(task, init reports, data counts)`` (the first report is the main encoder's), training, teardown."""
    check("stop_after", stop_after, int | None, STOP_AFTER)
    config = cfg.to_dict()
    key = _config_key(config)
    check_outputs(cfg.output, key, resume=resume, overwrite=overwrite)

    info, device = _setup(cfg.train)
    precision = training_precision(cfg.train, device)
    try:
        task, reports, counts = build(info, precision)
        main = next(iter(reports.values()))
        experiment = {"backbone": cfg.model.path, "rescale_k": main.rescale_k, "name": cfg.name, "config": key}
        extra = {"data": counts, "init": reports_dict(reports), "head_norm_before": main.head_norm_before}
        return run_training(task, stage=stage, config=config, config_key=key, experiment=experiment,
                            train=cfg.train, optim=cfg.optim, output=cfg.output, info=info, device=device,
                            precision=precision,
                            resume=resume, overwrite=overwrite, stop_after=stop_after, manifest_extra=extra)
    finally:
        distributed.shutdown(info)


def _idf_corpus(cfg: SpladeTrainConfig):
    """The training dataset when the query encoder is its corpus's IDF (``model.query.path: idf``), else None."""
    if cfg.model.query is None or cfg.model.query.path != IDF:
        return None

    if not cfg.data.dataset:
        raise ConfigError("model.query.path=idf counts the IDF on data.dataset's corpus: give data.dataset")
    return load_dataset(cfg.data.dataset, cfg.data.split)


def train(cfg: SpladeTrainConfig, *, resume: bool = False, overwrite: bool = False,
          stop_after: int | None = None) -> TrainResult:
    """Train a SPLADE model as ``cfg`` says (see :mod:`lsr_eval.train.trainer` for outputs and resume)."""
    def build(info, precision):
        source = build_source(cfg.data, cfg.train.seed)
        model, reports = build_model(cfg.model, bf16=precision.bf16, idf_corpus=_idf_corpus(cfg))  # "document" first
        return RankingTask(model, source, cfg, info, reports), reports, source.counts

    return _run(cfg, "train", build, resume=resume, overwrite=overwrite, stop_after=stop_after)


def middle_train(cfg: MiddleTrainConfig, *, resume: bool = False, overwrite: bool = False,
                 stop_after: int | None = None) -> TrainResult:
    """MLM + FLOPS middle training as ``cfg`` says; the final model is a masked LM (``MODEL_DIR/model``)."""
    def build(info, precision):
        texts = load_texts(cfg)
        mlm, tokenizer, report = build_mlm(cfg.model)
        if cfg.model.trainable == "head":
            from lsr_eval.train.freeze import freeze_to_head

            report.extra["trainable"] = freeze_to_head(mlm)
        reports = {"model": report}
        return MlmFlopsTask(mlm, tokenizer, texts, cfg, info, reports), reports, texts.counts

    return _run(cfg, "middle-train", build, resume=resume, overwrite=overwrite, stop_after=stop_after)
