"""Masked-token top-1 accuracy and perplexity of a masked LM on held-out text.

Over the N masked positions i (label y_i, logits z_i)::

    accuracy   = (1/N) sum_i [argmax_v z_iv = y_i]
    perplexity = exp( (1/N) sum_i -log softmax(z_i)_{y_i} )

(Devlin et al., "BERT", NAACL 2019; Liu et al., "RoBERTa", arXiv:1907.11692.)

Design notes: docs/design.md."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.manifest import write_manifest
from lsr_eval.models.device import resolve_device
from lsr_eval.models.loading import load_mlm
from lsr_eval.models.offline import resolve_model
from lsr_eval.models.options import BATCH_SIZE
from lsr_eval.settings import check
from lsr_eval.train.config import MiddleTrainConfig, load_config
from lsr_eval.train.middle import mask_tokens, masked_logits
from lsr_eval.train.mlm_text import collect_texts
from lsr_eval.train.recipe import head_norm


@dataclass(frozen=True)
class MaskedLmScore:
    """Counts over masked positions: ``n`` positions, ``correct`` top-1 hits, ``nll`` summed -log p(label)."""

    n: int = 0
    correct: int = 0
    nll: float = 0.0

    def __add__(self, other: MaskedLmScore) -> MaskedLmScore:
        return MaskedLmScore(self.n + other.n, self.correct + other.correct, self.nll + other.nll)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else math.nan

    @property
    def perplexity(self) -> float:
        return math.exp(self.nll / self.n) if self.n else math.nan

    def to_dict(self) -> dict:
        return {**asdict(self), "accuracy": self.accuracy, "perplexity": self.perplexity,
                "mean_nll": self.nll / self.n if self.n else math.nan}


def score_masked(logits: torch.Tensor, labels: torch.Tensor) -> MaskedLmScore:
    """The counts of N x V ``logits`` against N ``labels`` (every row is a masked position)."""
    if logits.ndim != 2 or labels.shape != logits.shape[:1]:
        raise InputError(f"score_masked: logits {tuple(logits.shape)} and labels {tuple(labels.shape)}: expected "
                         f"N x V and N")
    if labels.numel() == 0:
        return MaskedLmScore()
    logits = logits.float()
    correct = int((logits.argmax(dim=1) == labels).sum())
    nll = float(F.cross_entropy(logits, labels, reduction="sum"))
    return MaskedLmScore(int(labels.numel()), correct, nll)


@torch.inference_mode()
def evaluate_masked_lm(mlm: nn.Module, tokenizer, texts: Sequence[str], *, mask_prob: float, max_length: int,
                       seed: int = 0, batch_size: int = 32) -> MaskedLmScore:
    """:class:`MaskedLmScore` of ``mlm`` (eval mode, its own device) on ``texts`` (module doc)."""
    if not texts:
        raise InputError("masked-LM evaluation: no text")
    check("batch_size", batch_size, int, BATCH_SIZE)
    if tokenizer.mask_token_id is None:
        raise ConfigError("the tokenizer has no mask token; it cannot be scored as a masked LM")
    special = torch.tensor(sorted(set(tokenizer.all_special_ids)))
    device = next(mlm.parameters()).device
    was_training = mlm.training
    mlm.eval()
    total = MaskedLmScore()
    try:
        for b, start in enumerate(range(0, len(texts), batch_size)):
            enc = tokenizer(list(texts[start:start + batch_size]), padding=True, truncation=True,
                            max_length=max_length, return_tensors="pt")
            ids, att = enc["input_ids"], enc["attention_mask"]
            gen = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, b]).generate_state(1)[0]))
            masked, labels = mask_tokens(ids, att, torch.isin(ids, special), tokenizer.mask_token_id,
                                         len(tokenizer), mask_prob, gen)
            selected = labels != -100
            if not selected.any():
                continue
            logits = masked_logits(mlm, masked.to(device), att.to(device), selected.to(device))
            total = total + score_masked(logits.cpu(), labels[selected])
    finally:
        mlm.train(was_training)
    return total


@dataclass(frozen=True)
class ModelsScored:
    """What :func:`evaluate_models` measured: each label's record (its model, score, head initialisation, head norm
    and seconds), and the held-out texts' count."""

    results: dict[str, dict]
    heldout: int


def evaluate_models(config: str | os.PathLike, models: Mapping[str, str], *, overrides: Sequence[str] = (),
                    head_init: str = "auto", seed: int = 0, batch_size: int = 32, device: str = "cpu",
                    out: str | os.PathLike | None = None, progress: Callable[[str, dict, int], None] | None = None
                    ) -> ModelsScored:
    """Masked-token accuracy and perplexity of each of ``models`` (label -> folder, hub id or offline alias) on the
    held-out texts of the middle-training ``config`` (with ``overrides``), masked with ``seed``, in float32 on
    ``device``; ``progress(label, record, held-out texts)`` after each model. With ``out``, metrics.json and a
    manifest there."""
    cfg = load_config(config, list(overrides or ()), MiddleTrainConfig)
    texts = collect_texts(cfg.data)
    if not texts.heldout:
        raise ConfigError(f"{config}: data.holdout={cfg.data.holdout} holds out no text to evaluate on")
    torch_device = resolve_device(device)
    settings = {"mask_prob": cfg.mlm.mask_prob, "max_length": cfg.model.max_length, "seed": seed,
                "batch_size": batch_size, "precision": "fp32", "device": str(torch_device)}
    results = {}
    for label, path in models.items():
        mlm, tokenizer, report = load_mlm(resolve_model(path), head_init=head_init,
                                          trust_remote_code=cfg.model.trust_remote_code)
        mlm.to(torch_device)
        t0 = time.perf_counter()
        score = evaluate_masked_lm(mlm, tokenizer, texts.heldout, mask_prob=cfg.mlm.mask_prob,
                                   max_length=cfg.model.max_length, seed=seed, batch_size=batch_size)
        results[label] = {"model": path, **score.to_dict(), "head_init": report.to_dict(),
                          "head_norm": head_norm(mlm), "seconds": round(time.perf_counter() - t0, 2)}
        if progress is not None:
            progress(label, results[label], len(texts.heldout))
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "metrics.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        write_manifest(folder, "mlm-eval", {"config": str(config), "data": cfg.data.__dict__,
                                            "heldout_sha256": texts.counts["heldout_sha256"],
                                            "models": dict(models), **settings},
                       counts=texts.counts, metrics=results)
    return ModelsScored(results, len(texts.heldout))
