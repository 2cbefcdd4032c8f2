"""MLM-head rescaling: ``W_head <- W_head / k`` before SPLADE training.

SPLADE weights are ``log(1 + ReLU(W u + b))`` and relevance is an unnormalised dot product, so a head with a
large norm inflates the initial activations and destabilises training. Dividing the decoder weight by a constant
``k`` at initialisation corrects the scale (Jang, Hong, Turner & Lim, "Rescaling MLM-Head for Neural Sparse
Retrieval", arXiv:2606.18811, 2026: k = 16 for ModernBERT/Ettin). The logits bias is left alone unless
``scale_bias``; with it (or with a zero bias) the logits for fixed hidden states are exactly divided by k.

Tied heads (the decoder weight *is* the input word-embedding matrix) are divided in place, so the tie survives
and **the input word embeddings are divided by k too**. Families whose embedding block normalises the token
embedding alone (ModernBERT: LayerNorm right after the lookup) are unaffected up to LayerNorm's epsilon; in BERT,
DistilBERT, ALBERT and RoBERTa the word embedding is added to position (and type) embeddings before the
LayerNorm, so their encoder input changes as well.

The applied factors are recorded in ``model.config.lsr_eval`` (saved in config.json, so it survives
save/load): ``head_rescale_k`` is the product of all factors applied, ``head_rescale`` the history.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from lsr_eval.errors import ConfigError
from lsr_eval.models.heads import head_parts, tied

log = logging.getLogger(__name__)

CONFIG_KEY = "lsr_eval"


@dataclass(frozen=True, slots=True)
class RescaleReport:
    """What :func:`rescale_head` did. Norms are Frobenius norms of the decoder weight."""

    k: float
    total_k: float            # product of every factor applied to this model so far
    family: str
    tied: bool                # True: the input embeddings were scaled too
    bias_scaled: bool         # False also when the head has no logits bias
    norm_before: float
    norm_after: float

    def to_dict(self) -> dict:
        return asdict(self)


def lsr_eval_record(model: nn.Module) -> dict:
    """The model's ``config.lsr_eval`` dict (created empty when absent)."""
    record = getattr(model.config, CONFIG_KEY, None)
    if not isinstance(record, dict):
        record = {}
        setattr(model.config, CONFIG_KEY, record)
    return record


def rescale_head(model: nn.Module, k: float, *, scale_bias: bool = False) -> RescaleReport:
    """Divide the MLM-head decoder weight of ``model`` by ``k`` in place (and its bias when ``scale_bias``)."""
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k <= 0:
        raise ConfigError(f"rescale k={k!r}: expected a finite number > 0")
    parts = head_parts(model)
    weight = parts.decoder.weight
    bias = getattr(parts.decoder, "bias", None)
    is_tied = tied(model)
    with torch.no_grad():
        before = float(weight.float().norm())
        weight.div_(k)
        bias_scaled = bool(scale_bias and bias is not None)
        if bias_scaled:
            bias.div_(k)
        after = float(weight.float().norm())
    record = lsr_eval_record(model)
    total = float(record.get("head_rescale_k", 1.0)) * float(k)
    record["head_rescale_k"] = total
    record.setdefault("head_rescale", []).append({"k": float(k), "scale_bias": bias_scaled})
    report = RescaleReport(float(k), total, parts.family, is_tied, bias_scaled, before, after)
    log.info("MLM head (%s) divided by k=%g: Frobenius norm %.4g -> %.4g%s%s", parts.family, k, before, after,
             "; decoder tied to the input embeddings, which are divided too" if is_tied else "",
             "; logits bias divided too" if bias_scaled else "")
    return report
