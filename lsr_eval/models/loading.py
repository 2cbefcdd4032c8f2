"""Load a masked LM + tokenizer, applying the head-initialisation rule and any recorded rescaling."""

from __future__ import annotations

import json
import logging
import os

from lsr_eval.errors import InputError
from lsr_eval.models.head_init import HeadInitReport, apply_head_init, reapply_head_init
from lsr_eval.models.options import HEAD_INIT_RULES, HeadInitRule, IdentityHead, check_choice
from lsr_eval.models.rescale import CONFIG_KEY, lsr_eval_record, restore_input_scale

log = logging.getLogger(__name__)


def load_mlm(path: str | os.PathLike, *, head_init: HeadInitRule = "auto",
             identity: IdentityHead = IdentityHead(), trust_remote_code: bool = False):
    """``(model, tokenizer, HeadInitReport)`` for a local folder or hub id, model in eval mode.

    ``trust_remote_code`` runs model code shipped with the checkpoint (e.g. ``Alibaba-NLP/gte-en-mlm-base``); it
    is recorded in ``config.lsr_eval``, so a model saved afterwards reloads without the flag.

    A checkpoint saved by lsr-eval with an identity head gets its bypasses back (``applied="reapplied"``), and
    one rescaled with ``tied_input="compensated"`` its input scale; otherwise the divided weights are what was saved.
    """
    check_choice("head_init", head_init, HEAD_INIT_RULES)
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    source = os.fspath(path)
    _check_local_folder(source)
    trust = bool(trust_remote_code) or _saved_trust_remote_code(source)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust)
        model, info = AutoModelForMaskedLM.from_pretrained(source, output_loading_info=True,
                                                           trust_remote_code=trust)
    except (OSError, ValueError) as e:
        raise InputError(f"{source}: cannot load a masked LM and tokenizer: {' '.join(str(e).split())}") from e
    if info.get("mismatched_keys"):
        raise InputError(f"{source}: parameters with mismatched shapes: {info['mismatched_keys']}")
    if trust:
        lsr_eval_record(model)["trust_remote_code"] = True
    scale = restore_input_scale(model)
    if scale != 1.0:
        log.info("%s: tied head rescaled with compensated input; embedding lookup multiplied by %g", source, scale)
    report: HeadInitReport | None = reapply_head_init(model)
    if report is not None:
        log.info("%s: identity MLM head saved by lsr-eval; bypasses restored (%s)", source, report.identity)
    if report is None or head_init == "identity":
        report = apply_head_init(model, info.get("missing_keys", ()), head_init, identity, source=source)
    model.eval()
    return model, tokenizer, report


#: Files of which a local model folder needs at least one, per part (what transformers reads).
LOCAL_FILES = {
    "config": ("config.json",),
    "weights": ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json"),
    "tokenizer": ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "spiece.model", "sentencepiece.bpe.model",
                  "vocab.json"),
}


def _check_local_folder(source: str) -> None:
    """A local folder lacking a config, weights or tokenizer: say which part is missing and what was looked for
    (a hub id, or a path that is no folder, is left to transformers)."""
    if not os.path.isdir(source):
        return
    for part, names in LOCAL_FILES.items():
        if not any(os.path.isfile(os.path.join(source, n)) for n in names):
            raise InputError(f"{source}: no {part} (looked for {', '.join(names)} in that folder)")


def _saved_trust_remote_code(source: str) -> bool:
    """True when ``source`` is a folder whose config.json says lsr-eval loaded it with ``trust_remote_code``."""
    config = os.path.join(source, "config.json")
    if not os.path.isfile(config):
        return False
    try:
        with open(config, encoding="utf-8") as f:
            record = json.load(f).get(CONFIG_KEY) or {}
    except (OSError, ValueError, AttributeError):
        return False   # transformers reports an unreadable config with the file name
    return bool(isinstance(record, dict) and record.get("trust_remote_code"))
