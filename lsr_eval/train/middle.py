"""MLM + FLOPS middle training (Lassance & Clinchant, "An Efficiency Study for SPLADE Models", SIGIR 2022, sec. 3):
before SPLADE fine-tuning, the backbone keeps training on its masked-LM task while the SPLADE pooling of its MLM
logits is pushed towards sparsity:

    loss = CE(masked tokens) + lambda_d(t) * FLOPS( max_t log(1 + ReLU(logits_t)) )

Design notes: docs/design.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.encoder import chunkable_decoder, head_features, splade_pool
from lsr_eval.train import distributed
from lsr_eval.train.config import MiddleTrainConfig
from lsr_eval.train.mlm_text import collect_texts
from lsr_eval.train.recipe import head_norm
from lsr_eval.train.regularizers import flops, sparsity_stats
from lsr_eval.train.schedule import reg_weight

#: BERT's split of the selected tokens: replaced by [MASK], by a random token; the rest stay unchanged.
MASK_FRACTION = 0.8
RANDOM_FRACTION = 0.1


def mask_tokens(input_ids: torch.Tensor, attention_mask: torch.Tensor, special: torch.Tensor, mask_id: int,
                vocab_size: int, prob: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``(masked input ids, labels)``; labels are -100 where nothing is predicted. ``special``: bool B x L."""
    candidates = attention_mask.bool() & ~special
    selected = (torch.rand(input_ids.shape, generator=generator) < prob) & candidates
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    u = torch.rand(input_ids.shape, generator=generator)
    to_mask = selected & (u < MASK_FRACTION)
    to_random = selected & (u >= MASK_FRACTION) & (u < MASK_FRACTION + RANDOM_FRACTION)
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator)
    out = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    out = torch.where(to_random, random_ids, out)
    return out, labels


class TextSet:
    """Texts in a per-epoch shuffled order (``default_rng([seed, epoch])``), last incomplete batch dropped."""

    def __init__(self, texts: list[str], seed: int, counts: dict[str, Any]) -> None:
        if not texts:
            raise InputError("middle training: no text to train on")
        self.texts, self.seed, self.counts = texts, seed, counts
        self._order: tuple[int, np.ndarray] | None = None

    def global_batch(self, m: int, size: int) -> list[str]:
        per_epoch = len(self.texts) // size
        if per_epoch == 0:
            raise ConfigError(f"train.batch_size={size} is larger than the {len(self.texts)} texts")
        epoch, b = divmod(m, per_epoch)
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, np.random.default_rng([self.seed, epoch]).permutation(len(self.texts)))
        return [self.texts[int(i)] for i in self._order[1][b * size:(b + 1) * size]]


def load_texts(cfg: MiddleTrainConfig) -> TextSet:
    """The training texts of ``cfg.data`` (:func:`lsr_eval.train.mlm_text.collect_texts`; held-out texts left
    out), counts included."""
    texts = collect_texts(cfg.data)
    return TextSet(texts.train, cfg.train.seed, texts.counts)


def masked_logits(mlm: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, selected: torch.Tensor,
                  net: nn.Module | None = None) -> torch.Tensor:
    """N x V logits of the positions where ``selected`` (B x L bool) is true, in row-major order. With a plain
    linear decoder only those rows are projected (:func:`lsr_eval.models.encoder.head_features`), else the full
    logits are computed and indexed. ``net``: what to call instead of ``mlm`` (a DDP wrapper)."""
    decoder = chunkable_decoder(mlm)
    if decoder is None:
        return (net or mlm)(input_ids=input_ids, attention_mask=attention_mask).logits[selected]
    return decoder(head_features(mlm, input_ids, attention_mask, net=net)[selected])


class MlmFlopsTask:
    """MLM + FLOPS middle training (see :mod:`lsr_eval.train.trainer` for the task protocol)."""

    stage = "middle-train"

    def __init__(self, mlm: nn.Module, tokenizer, texts: TextSet, cfg: MiddleTrainConfig,
                 info: distributed.DistInfo, init_reports: dict[str, Any]) -> None:
        if tokenizer.mask_token_id is None:
            raise ConfigError(f"{cfg.model.path}: the tokenizer has no mask token; it cannot be MLM-trained")
        if cfg.train.batch_size % info.world_size:
            raise ConfigError(f"train.batch_size={cfg.train.batch_size} is not divisible by the {info.world_size} "
                              f"processes")
        self.mlm, self.tokenizer, self.texts, self.cfg, self.info = mlm, tokenizer, texts, cfg, info
        self.module = mlm
        self.init_reports = init_reports
        self.special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)))

    def state_modules(self) -> dict[str, nn.Module]:
        return {"model": self.mlm}

    def local_batch(self, m: int) -> list[str]:
        size = self.cfg.train.batch_size
        per = size // self.info.world_size
        return self.texts.global_batch(m, size)[self.info.rank * per:(self.info.rank + 1) * per]

    def compute(self, net: nn.Module, texts: list[str], m: int, step: int, autocast):
        device = next(self.mlm.parameters()).device
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.cfg.model.max_length,
                             return_tensors="pt")
        ids, att = enc["input_ids"], enc["attention_mask"]
        gen = torch.Generator().manual_seed(int(np.random.SeedSequence([self.cfg.train.seed, m, self.info.rank])
                                                .generate_state(1)[0]))
        masked, labels = mask_tokens(ids, att, torch.isin(ids, self.special_ids), self.tokenizer.mask_token_id,
                                     len(self.tokenizer), self.cfg.mlm.mask_prob, gen)
        att, labels = att.to(device), labels.to(device)
        selected = labels != -100
        n_masked = selected.sum()
        lam = reg_weight(self.cfg.mlm.lambda_d, self.cfg.mlm.warmup_d, step)
        flops_term = self.cfg.mlm.lambda_d != 0
        with autocast():
            if flops_term:
                logits = net(input_ids=masked.to(device), attention_mask=att).logits
            else:   # no FLOPS term: the decoder at the masked positions only
                picked = masked_logits(self.mlm, masked.to(device), att, selected, net=net)
        pooled = None
        if flops_term:
            logits = logits.float()
            picked, pooled = logits[selected], splade_pool(logits, att)
        mlm_loss = F.cross_entropy(picked.float(), labels[selected], reduction="sum") / n_masked.clamp(min=1)
        reg = flops(pooled) if pooled is not None else torch.zeros((), device=device)
        loss = mlm_loss + lam * reg
        logged = torch.stack([loss.detach(), mlm_loss.detach(), reg.detach()])
        means = (distributed.sum_nograd(logged) / self.info.world_size).tolist()
        logs = {"loss": means[0], "mlm": means[1], "lambda_d": lam}
        if pooled is not None:
            logs["flops_d"] = means[2]
            logs["active_dims_d"] = sparsity_stats(pooled.detach(), pooled.detach())["active_dims_d"]
        logs["masked_tokens"] = float(distributed.sum_nograd(n_masked.float()))
        return loss, logs

    def head_norms(self) -> dict[str, float]:
        return {"head_norm": head_norm(self.mlm)}

    def save_final(self, folder: Path) -> None:
        self.mlm.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    def data_state(self) -> dict[str, Any]:
        return {}

    def load_data_state(self, state: dict[str, Any]) -> None:
        pass
