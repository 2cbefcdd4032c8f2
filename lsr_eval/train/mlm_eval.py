"""Masked-token top-1 accuracy and perplexity of a masked LM on held-out text.

Over the N masked positions i (label y_i, logits z_i)::

    accuracy   = (1/N) sum_i [argmax_v z_iv = y_i]
    perplexity = exp( (1/N) sum_i -log softmax(z_i)_{y_i} )

(Devlin et al., "BERT", NAACL 2019; Liu et al., "RoBERTa", arXiv:1907.11692.)

Design notes: docs/design.md."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.train.middle import mask_tokens, masked_logits


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
    if batch_size < 1:
        raise ConfigError(f"batch_size={batch_size}: expected an integer >= 1")
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
