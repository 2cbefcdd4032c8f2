"""Where each masked-LM family keeps its MLM head, and how to bypass parts of its transform.

An MLM head is ``logits = decoder(norm(act(dense(h))))``, ``decoder`` being ``get_output_embeddings()``. The
layouts (bert, distilbert, albert, roberta, modernbert) are recognised by their module paths, not by the model's
name; any other model is "generic": it can be rescaled, not identity-initialised.

Design notes: docs/design.md."""

from __future__ import annotations

import types
from dataclasses import dataclass

from torch import nn

from lsr_eval.errors import ConfigError


@dataclass(frozen=True, slots=True)
class _Layout:
    family: str
    transform: str            # dotted path of the module holding dense / act / norm ("" = the model)
    dense: str
    act: str | None           # None: the activation is a function call inside forward (RoBERTa)
    norm: str
    act_config: str | None = None  # config attribute that selects the head activation on reload, if any


LAYOUTS: tuple[_Layout, ...] = (
    _Layout("bert", "cls.predictions.transform", "dense", "transform_act_fn", "LayerNorm"),
    _Layout("distilbert", "", "vocab_transform", "activation", "vocab_layer_norm"),
    _Layout("albert", "predictions", "dense", "activation", "LayerNorm"),
    _Layout("roberta", "lm_head", "dense", None, "layer_norm"),
    _Layout("modernbert", "head", "dense", "act", "norm", act_config="classifier_activation"),
)
FAMILIES: tuple[str, ...] = tuple(layout.family for layout in LAYOUTS)


@dataclass(frozen=True)
class HeadParts:
    """The modules of one model's MLM head. ``dense``/``norm`` are None for an unknown layout."""

    family: str               # one of FAMILIES, or "generic" (only the decoder is known)
    decoder: nn.Module
    transform: nn.Module | None
    dense: nn.Linear | None
    norm: nn.Module | None
    layout: _Layout | None

    def param_name(self, module_attr: str, param: str = "weight") -> str:
        """Full parameter name of ``dense``/``norm`` (as in state dicts and loading reports)."""
        if self.layout is None:
            raise ConfigError(f"{self.family} head has no transform")
        prefix = f"{self.layout.transform}." if self.layout.transform else ""
        return f"{prefix}{getattr(self.layout, module_attr)}.{param}"


def _submodule(model: nn.Module, path: str) -> nn.Module | None:
    try:
        return model.get_submodule(path) if path else model
    except AttributeError:
        return None


def head_parts(model: nn.Module) -> HeadParts:
    """Locate the MLM head of ``model`` (a ``*ForMaskedLM``)."""
    get_out = getattr(model, "get_output_embeddings", None)
    decoder = get_out() if get_out is not None else None
    if decoder is None or not isinstance(getattr(decoder, "weight", None), nn.Parameter):
        raise ConfigError(f"{type(model).__name__} has no output embeddings (get_output_embeddings() is None): "
                          f"load it with AutoModelForMaskedLM")
    for layout in LAYOUTS:
        owner = _submodule(model, layout.transform)
        if owner is None:
            continue
        dense = getattr(owner, layout.dense, None)
        norm = getattr(owner, layout.norm, None)
        if isinstance(dense, nn.Linear) and isinstance(norm, nn.Module):
            return HeadParts(layout.family, decoder, owner, dense, norm, layout)
    return HeadParts("generic", decoder, None, None, None, None)


def tied(model: nn.Module) -> bool:
    """Whether the decoder weight is the input embedding matrix (same storage)."""
    out = model.get_output_embeddings().weight
    inp = model.get_input_embeddings().weight
    return out is inp or (out.shape == inp.shape and out.data_ptr() == inp.data_ptr())


def _norm_passthrough_forward(self, x):
    return x


def _roberta_forward_without_activation(self, features, **kwargs):
    # RobertaLMHead.forward is dense -> gelu -> layer_norm -> decoder; gelu is a function call, so the
    # bypass replaces the bound forward (parameters and state-dict keys unchanged).
    return self.decoder(self.layer_norm(self.dense(features)))


def bypass_activation(parts: HeadParts, model: nn.Module) -> None:
    """Skip the head transform's activation (idempotent; no parameter changes)."""
    layout = parts.layout
    if layout is None:
        raise ConfigError(f"{type(model).__name__}: cannot bypass the activation of a head with an unknown layout "
                          f"(known: {', '.join(FAMILIES)})")
    if layout.act is None:
        parts.transform.forward = types.MethodType(_roberta_forward_without_activation, parts.transform)
    else:
        setattr(parts.transform, layout.act, nn.Identity())
    if layout.act_config is not None:
        # ModernBERT reads its head activation from the config: "linear" makes plain reloads match.
        setattr(model.config, layout.act_config, "linear")


def bypass_norm(parts: HeadParts) -> None:
    """Skip the head transform's LayerNorm, keeping its parameters (and state-dict keys) in place."""
    if parts.norm is None:
        raise ConfigError(f"{parts.family} head has no LayerNorm to bypass")
    parts.norm.forward = types.MethodType(_norm_passthrough_forward, parts.norm)
