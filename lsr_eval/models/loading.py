"""Load a masked LM + tokenizer, applying the head-initialisation rule and any recorded rescaling."""

from __future__ import annotations

import logging
import os

from lsr_eval.errors import InputError
from lsr_eval.models.head_init import HeadInitReport, apply_head_init, reapply_head_init
from lsr_eval.models.options import HEAD_INIT_RULES, HeadInitRule, IdentityHead, check_choice

log = logging.getLogger(__name__)


def load_mlm(path: str | os.PathLike, *, head_init: HeadInitRule = "auto",
             identity: IdentityHead = IdentityHead()):
    """``(model, tokenizer, HeadInitReport)`` for a local folder or hub id, model in eval mode.

    A checkpoint saved by lsr-eval with an identity head gets its bypasses back (``applied="reapplied"``);
    rescaled heads need nothing (the divided weights are what was saved).
    """
    check_choice("head_init", head_init, HEAD_INIT_RULES)
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    source = os.fspath(path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model, info = AutoModelForMaskedLM.from_pretrained(source, output_loading_info=True)
    except (OSError, ValueError) as e:
        raise InputError(f"{source}: cannot load a masked LM and tokenizer: {' '.join(str(e).split())}") from e
    if info.get("mismatched_keys"):
        raise InputError(f"{source}: parameters with mismatched shapes: {info['mismatched_keys']}")
    report: HeadInitReport | None = reapply_head_init(model)
    if report is not None:
        log.info("%s: identity MLM head saved by lsr-eval; bypasses restored (%s)", source, report.identity)
    if report is None or head_init == "identity":
        report = apply_head_init(model, info.get("missing_keys", ()), head_init, identity, source=source)
    model.eval()
    return model, tokenizer, report
