"""MLM-head rescaling: ``W_head <- W_head / k`` before SPLADE training.

SPLADE weights are ``log(1 + ReLU(W u + b))`` and relevance is an unnormalised dot product, so a head with a
large norm inflates the initial activations and destabilises training. Dividing the decoder weight by a constant
``k`` at initialisation corrects the scale (Jang, Hong, Turner & Lim, "Rescaling MLM-Head for Neural Sparse
Retrieval", arXiv:2606.18811, 2026: k = 16 for ModernBERT/Ettin). The logits bias is left alone unless
``scale_bias``; with it (or with a zero bias) the logits for fixed hidden states are exactly divided by k.

Design notes: docs/design.md."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import torch
from torch import nn

from lsr_eval.models.heads import head_parts, tied
from lsr_eval.models.options import RESCALE_K, TIED_INPUT_CHOICES, TiedInput, check_choice
from lsr_eval.settings import check

log = logging.getLogger(__name__)

CONFIG_KEY = "lsr_eval"
#: Families whose word embedding is added to position embeddings before the embedding LayerNorm: dividing a tied
#: head there changes the encoder's input (all-MiniLM-L6-v2 at k = 16 collapsed in training, docs/training.md).
ADDITIVE_POSITION_FAMILIES = ("bert", "distilbert", "albert", "roberta")


@dataclass(frozen=True, slots=True)
class RescaleReport:
    """What :func:`rescale_head` did. Norms are Frobenius norms of the decoder weight."""

    k: float
    total_k: float            # product of every factor applied to this model so far
    family: str
    tied: bool                # True: the decoder is the input embedding matrix
    tied_input: str           # "divided" or "compensated" (tied heads; "untied" otherwise)
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


def input_scale(model: nn.Module) -> float:
    """The factor the input embedding lookup of ``model`` is multiplied by (1.0: none)."""
    return float(getattr(model.get_input_embeddings(), "_lsr_eval_input_scale", 1.0))


def set_input_scale(model: nn.Module, scale: float) -> None:
    """Multiply the output of ``model``'s input embedding module by ``scale`` (a forward hook; 1.0 removes it)."""
    emb = model.get_input_embeddings()
    handle = getattr(emb, "_lsr_eval_input_scale_hook", None)
    if handle is not None:
        handle.remove()
    emb._lsr_eval_input_scale_hook = None
    emb._lsr_eval_input_scale = float(scale)
    if scale != 1.0:
        emb._lsr_eval_input_scale_hook = emb.register_forward_hook(_scale_output)


def _scale_output(module: nn.Module, inputs, output: torch.Tensor) -> torch.Tensor:
    return output * module._lsr_eval_input_scale


def restore_input_scale(model: nn.Module) -> float:
    """Reinstall the input compensation recorded in ``model.config`` (after loading a saved model)."""
    scale = float((getattr(model.config, CONFIG_KEY, None) or {}).get("input_scale", 1.0))
    if scale != 1.0:
        set_input_scale(model, scale)
    return scale


def rescale_head(model: nn.Module, k: float, *, scale_bias: bool = False,
                 tied_input: TiedInput = "divided") -> RescaleReport:
    """Divide the MLM-head decoder weight of ``model`` by ``k`` in place (and its bias when ``scale_bias``);
    for a tied head, ``tied_input="compensated"`` multiplies the embedding lookup back by ``k``."""
    check("rescale_k", k, float, RESCALE_K)
    check_choice("tied_input", tied_input, TIED_INPUT_CHOICES)
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
    mode = tied_input if is_tied else "untied"
    record.setdefault("head_rescale", []).append({"k": float(k), "scale_bias": bias_scaled, "tied_input": mode})
    if mode == "compensated":
        scale = input_scale(model) * float(k)
        record["input_scale"] = scale
        set_input_scale(model, scale)
    report = RescaleReport(float(k), total, parts.family, is_tied, mode, bias_scaled, before, after)
    if mode == "divided" and k != 1.0 and parts.family in ADDITIVE_POSITION_FAMILIES:
        log.warning("%s: the tied input word embeddings are divided by k=%g beside unchanged position embeddings, "
                    "so the encoder's input changes; tied_input='compensated' keeps it (docs/models.md)",
                    parts.family, k)
    log.info("MLM head (%s) divided by k=%g: Frobenius norm %.4g -> %.4g%s%s", parts.family, k, before, after,
             {"divided": "; decoder tied to the input embeddings, which are divided too",
              "compensated": "; decoder tied to the input embeddings, whose lookup is multiplied back by k",
              "untied": ""}[mode],
             "; logits bias divided too" if bias_scaled else "")
    return report
