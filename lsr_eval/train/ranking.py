"""The SPLADE ranking objective of one micro-batch (``lsr-eval train``):

    loss = rank + lambda_q(t) * R_q(queries) + c * lambda_d(t) * R_d(documents)

(c = 2 under ``regularizer.naver_sum``, naver/splade's sum; else 1: :attr:`RegularizerConfig.doc_count`).

``rank`` from the config's loss (:data:`lsr_eval.train.losses.LOSSES`), R_q / R_d from
:mod:`lsr_eval.train.regularizers`, lambda(t) from :func:`lsr_eval.train.schedule.reg_weight`. Documents of a
micro-batch are laid out slot-major: the B positives, then the B first negatives, ..., then the B n-th negatives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from lsr_eval.errors import ConfigError
from lsr_eval.train import distributed
from lsr_eval.train.config import SpladeTrainConfig
from lsr_eval.train.data import Example
from lsr_eval.train.losses import make_loss
from lsr_eval.train.recipe import head_norm
from lsr_eval.train.regularizers import regularize, sparsity_stats
from lsr_eval.train.schedule import reg_weight


class SpladePair(nn.Module):
    """Query and document encoders behind one ``forward`` (what DDP wraps)."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, q_ids, q_mask, d_ids, d_mask) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.query(q_ids, q_mask), self.model.document(d_ids, d_mask)


def objective(wq: torch.Tensor, wd: torch.Tensor, examples: list[Example], cfg: SpladeTrainConfig, step: int,
              rank: int = 0) -> dict[str, torch.Tensor]:
    """Loss parts of one micro-batch from the query vectors ``wq`` (B x V) and slot-major document vectors
    ``wd`` (B(1+n) x V): ``loss`` (the total), ``rank``, ``<kind>_q``, ``<kind>_d``, ``lambda_q``, ``lambda_d`` (the
    scheduled weights) and, under ``naver_sum``, ``lambda_d_effective`` (the document weight the loss uses)."""
    slots = wd.shape[0] // len(examples)
    reg = cfg.regularizer
    parts = make_loss(cfg.loss)(wq, wd, examples, rank)
    lam_q = reg_weight(reg.lambda_q, reg.warmup_q, step)
    lam_d = reg_weight(reg.lambda_d, reg.warmup_d, step)
    total = parts["rank"]
    out = {"rank": parts["rank"]}
    r_q = regularize(reg.query, wq)
    if r_q is not None:
        out[f"{reg.query}_q"] = r_q
        total = total + lam_q * r_q
    r_d = regularize(reg.document, wd, slots)
    if r_d is not None:
        out[f"{reg.document}_d"] = r_d
        total = total + reg.doc_count * lam_d * r_d
    weights = {"lambda_q": lam_q, "lambda_d": lam_d}
    if reg.naver_sum:
        weights["lambda_d_effective"] = reg.doc_count * lam_d
    return {"loss": total, **out, **{k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()}}


def trained_modules(model) -> dict[str, nn.Module]:
    """The modules of a SPLADE model that training updates, by the names its checkpoints store them under."""
    if model.shared:
        return {"model": model.document.mlm}
    if model.inference_free:           # fixed query weights: nothing of the query side trains
        return {"document": model.document.mlm}
    return {"query": model.query.mlm, "document": model.document.mlm}


class RankingTask:
    """SPLADE training on ranking examples (see :mod:`lsr_eval.train.trainer` for the task protocol)."""

    stage = "train"

    def __init__(self, model, source, cfg: SpladeTrainConfig, info: distributed.DistInfo,
                 init_reports: dict[str, Any]) -> None:
        if cfg.train.batch_size % info.world_size:
            raise ConfigError(f"train.batch_size={cfg.train.batch_size} is not divisible by the {info.world_size} "
                              f"processes")
        self.model = model
        self.module = SpladePair(model)
        self.source = source
        self.cfg = cfg
        self.info = info
        self.init_reports = init_reports

    def state_modules(self) -> dict[str, nn.Module]:
        return trained_modules(self.model)

    def local_batch(self, m: int) -> list[Example]:
        size = self.cfg.train.batch_size
        per = size // self.info.world_size
        batch = self.source.global_batch(m, size)
        return batch[self.info.rank * per:(self.info.rank + 1) * per]

    def compute(self, net: nn.Module, examples: list[Example], m: int, step: int, autocast):
        device = next(self.module.parameters()).device
        q = self.model.query.tokenize([e.query for e in examples])
        n = len(examples[0].neg_ids)
        docs = [e.pos_text for e in examples] + [e.neg_texts[k] for k in range(n) for e in examples]
        d = self.model.document.tokenize(docs)
        with autocast():
            wq, wd = net(q["input_ids"].to(device), q["attention_mask"].to(device),
                         d["input_ids"].to(device), d["attention_mask"].to(device))
        wq, wd = wq.float(), wd.float()
        parts = objective(wq, wd, examples, self.cfg, step, self.info.rank)
        logged = {k: v.detach().float() for k, v in parts.items() if not k.startswith("lambda")}
        means = distributed.sum_nograd(torch.stack(list(logged.values()))) / self.info.world_size
        logs = dict(zip(logged, means.tolist()))
        logs.update({k: float(v) for k, v in parts.items() if k.startswith("lambda")})
        logs.update(sparsity_stats(wq.detach(), wd.detach()))
        return parts["loss"], logs

    def head_norms(self) -> dict[str, float]:
        out = {"head_norm": head_norm(self.model.document.mlm)}
        if not self.model.shared and not self.model.inference_free:
            out["head_norm_q"] = head_norm(self.model.query.mlm)
        return out

    def save_final(self, folder: Path) -> None:
        self.model.save_pretrained(folder)

    def data_state(self) -> dict[str, Any]:
        return self.source.state()

    def load_data_state(self, state: dict[str, Any]) -> None:
        self.source.load_state(state)
