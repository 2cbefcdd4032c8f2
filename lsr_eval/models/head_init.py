"""MLM-head initialisation for checkpoints saved without one (sentence-transformers and retrieval backbones).

``AutoModelForMaskedLM`` gives such checkpoints a *random* head transform; the identity head (transform = I,
bias 0, decoder tied to the input embeddings) makes each position score the terms whose input embeddings are
closest to its contextual state.

Design notes: docs/design.md."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.heads import FAMILIES, HeadParts, bypass_activation, bypass_norm, head_parts, tied
from lsr_eval.models.options import HEAD_INIT_RULES, HeadInitRule, IdentityHead, check_choice
from lsr_eval.models.rescale import lsr_eval_record

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeadInitReport:
    """How the head of a loaded model came to be.

    ``applied``: ``loaded`` (weights from the checkpoint, untouched), ``identity`` (initialised here),
    ``random`` (transformers' random initialisation kept), ``reapplied`` (an identity head saved by lsr-eval:
    weights loaded, bypasses restored).
    """

    rule: str                          # the requested HeadInitRule
    applied: str
    family: str
    missing: list[str] = field(default_factory=list)   # head parameters absent from the checkpoint
    identity: dict | None = None                       # IdentityHead.to_dict() when applied/reapplied

    def to_dict(self) -> dict:
        return asdict(self)


def missing_head_keys(model: nn.Module, missing_keys) -> list[str]:
    """The entries of a loading report's ``missing_keys`` that belong to the head (outside the backbone)."""
    prefix = getattr(model, "base_model_prefix", "") + "."
    return sorted(k for k in missing_keys if not k.startswith(prefix))


def head_is_missing(parts: HeadParts, missing: list[str], model: nn.Module) -> bool:
    """Whether the head's trained weights are absent: the transform dense weight for known layouts, else an
    untied decoder weight. Missing biases alone do not count (they are reported)."""
    if parts.layout is not None:
        return parts.param_name("dense") in missing
    return not tied(model) and any(k.endswith("weight") for k in missing)


def init_identity_head(model: nn.Module, identity: IdentityHead = IdentityHead()) -> HeadParts:
    """Overwrite the head of ``model`` with the identity head (see docs/design.md); returns its parts."""
    parts = head_parts(model)
    if parts.layout is None:
        raise ConfigError(f"identity head: {type(model).__name__} has no head transform of a known layout "
                          f"({', '.join(FAMILIES)}); use head_init='random'")
    dense = parts.dense
    if dense.in_features != dense.out_features:
        raise ConfigError(f"identity head: the {parts.family} head dense maps {dense.in_features} -> "
                          f"{dense.out_features} dims (e.g. ALBERT hidden_size -> embedding_size), so it has no "
                          f"identity; use head_init='random'")
    inp = model.get_input_embeddings().weight
    if parts.decoder.weight.shape != inp.shape:
        raise ConfigError(f"identity head: decoder weight {tuple(parts.decoder.weight.shape)} cannot be tied to "
                          f"input embeddings {tuple(inp.shape)}")
    with torch.no_grad():
        dense.weight.copy_(torch.eye(dense.out_features, dtype=dense.weight.dtype))
        if dense.bias is not None:
            dense.bias.zero_()
        if getattr(parts.norm, "weight", None) is not None:
            parts.norm.weight.fill_(1.0)
        if getattr(parts.norm, "bias", None) is not None:
            parts.norm.bias.zero_()
        if getattr(parts.decoder, "bias", None) is not None:
            parts.decoder.bias.zero_()
    if not tied(model):
        parts.decoder.weight = inp
        model.config.tie_word_embeddings = True
    _apply_bypasses(parts, model, identity)
    return parts


def _apply_bypasses(parts: HeadParts, model: nn.Module, identity: IdentityHead) -> None:
    if identity.activation == "bypass":
        bypass_activation(parts, model)
    if identity.norm == "bypass":
        bypass_norm(parts)


def apply_head_init(model: nn.Module, missing_keys, rule: HeadInitRule = "auto",
                    identity: IdentityHead = IdentityHead(), source: str = "checkpoint") -> HeadInitReport:
    """Apply ``rule`` to a freshly loaded ``model`` given its loading report's ``missing_keys``."""
    check_choice("head_init", rule, HEAD_INIT_RULES)
    parts = head_parts(model)
    missing = missing_head_keys(model, missing_keys)
    absent = head_is_missing(parts, missing, model)
    if absent and rule == "error":
        raise InputError(f"{source}: no trained MLM head (missing: {', '.join(missing)}); "
                         f"pass head_init='auto', 'identity' or 'random'")
    if rule == "identity" or (rule == "auto" and absent):
        init_identity_head(model, identity)
        applied = "identity"
        why = f"missing head weights {missing}" if absent else "forced: the checkpoint's trained head is replaced"
        (log.info if absent else log.warning)("%s: identity MLM head (%s head; %s; activation %s, LayerNorm %s)",
                                              source, parts.family, why, identity.activation, identity.norm)
        record_id: dict | None = identity.to_dict()
    else:
        applied = "random" if absent else "loaded"
        if absent:
            log.warning("%s: MLM head weights missing %s; transformers' random initialisation kept",
                        source, missing)
        elif missing:
            log.warning("%s: head parameters missing %s (initialised by transformers); trained weights kept",
                        source, missing)
        record_id = None
    report = HeadInitReport(rule, applied, parts.family, missing, record_id)
    record = lsr_eval_record(model)
    if applied != "loaded" or "head_init" not in record:  # a reloaded head keeps the record of its origin
        record["head_init"] = report.to_dict()
    return report


def reapply_head_init(model: nn.Module) -> HeadInitReport | None:
    """Restore the bypasses of an identity head recorded in ``config.lsr_eval`` (None when nothing recorded)."""
    saved = lsr_eval_record(model).get("head_init")
    if not isinstance(saved, dict) or saved.get("applied") not in ("identity", "reapplied"):
        return None
    identity = IdentityHead(**saved.get("identity") or {})
    _apply_bypasses(head_parts(model), model, identity)
    return HeadInitReport(saved.get("rule", "auto"), "reapplied", saved.get("family", head_parts(model).family),
                          list(saved.get("missing", [])), identity.to_dict())
