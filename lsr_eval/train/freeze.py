"""Train the MLM head alone: every parameter of a masked LM is frozen except the head's own.

The head's own parameters (:func:`lsr_eval.models.heads.head_parts`): the transform's dense layer and LayerNorm and
the logits bias, plus the decoder weight when it is not tied. A tied decoder weight *is* the input word-embedding
matrix, so it stays frozen with the encoder: training it would change the encoder's input. Used to complete the
missing head of an encoder-only checkpoint (all-MiniLM-L6-v2) with the masked-LM objective while the backbone stays
exactly what was published.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from lsr_eval.errors import ConfigError
from lsr_eval.models.heads import head_parts, tied


def head_parameters(mlm: nn.Module) -> list[nn.Parameter]:
    """The head's own parameters (module doc), each once."""
    parts = head_parts(mlm)
    own: list[nn.Parameter] = []
    for module in (parts.dense, parts.norm):
        if module is not None:
            own.extend(module.parameters())
    bias = getattr(parts.decoder, "bias", None)
    if isinstance(bias, nn.Parameter):
        own.append(bias)
    if not tied(mlm):
        own.append(parts.decoder.weight)
    unique = list({id(p): p for p in own}.values())
    if not unique:
        raise ConfigError(f"{type(mlm).__name__}: its MLM head has no parameter of its own (tied decoder without "
                          f"bias or transform); model.trainable=head would train nothing")
    return unique


def freeze_to_head(mlm: nn.Module) -> dict[str, Any]:
    """Set ``requires_grad`` so that only :func:`head_parameters` train; returns counts and the trained names."""
    keep = {id(p) for p in head_parameters(mlm)}
    names, trainable, frozen = [], 0, 0
    for name, p in mlm.named_parameters():   # shared parameters appear once
        p.requires_grad_(id(p) in keep)
        if id(p) in keep:
            names.append(name)
            trainable += p.numel()
        else:
            frozen += p.numel()
    return {"trainable": "head", "trainable_parameters": trainable, "frozen_parameters": frozen,
            "trained": names}
