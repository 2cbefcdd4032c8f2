"""sentence-transformers module files beside a saved SPLADE model, so that ``SparseEncoder(folder)`` loads it and
gives lsr-eval's vectors (Pyserini's ``SpladeQueryEncoder`` / ``SpladeDocumentEncoder`` need nothing more than the
plain ``AutoModelForMaskedLM`` folder).

Design notes: docs/design.md."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lsr_eval.manifest import write_json

log = logging.getLogger(__name__)

#: sentence-transformers version whose ``SparseEncoder.save`` layout is written.
LAYOUT_VERSION = "6.2.0"
POOLING_DIR = "1_SpladePooling"
#: Files written (relative to the model folder); removed when the model is not representable.
FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
         f"{POOLING_DIR}/config.json")


def blockers(model) -> list[str]:
    """Why ``model`` (a :class:`~lsr_eval.models.splade.SpladeModel`) cannot be loaded by sentence-transformers
    with the same vectors; empty when it can."""
    from lsr_eval.models.heads import head_parts
    from lsr_eval.models.rescale import input_scale

    if not model.shared:
        return ["distinct query and document backbones (sentence-transformers would need a Router module)"]
    enc = model.document
    out = []
    identity = (enc.head_init.identity if enc.head_init is not None else None) or {}
    layout = head_parts(enc.mlm).layout
    if identity.get("activation") == "bypass" and (layout is None or layout.act_config is None):
        out.append("identity head with its activation bypassed (a replaced forward method that plain "
                   "AutoModelForMaskedLM loading does not restore)")
    if identity.get("norm") == "bypass":
        out.append("identity head with its LayerNorm bypassed (a replaced forward method that plain "
                   "AutoModelForMaskedLM loading does not restore)")
    scale = input_scale(enc.mlm)
    if scale != 1.0:
        out.append(f"input embeddings multiplied by {scale:g} through a forward hook (rescaling with "
                   "tied_input: compensated)")
    return out


def _dump(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, doc)


def write_files(model, root: Path) -> dict[str, Any]:
    """Write the module files for ``model`` saved in ``root`` when it is representable, else remove stale ones;
    returns the ``sentence_transformers`` entry of ``splade_config.json`` (``written``, ``blockers``)."""
    reasons = blockers(model)
    if reasons:
        for name in FILES:
            (root / name).unlink(missing_ok=True)
        log.warning("%s: no sentence-transformers files (load with lsr-eval): %s", root, "; ".join(reasons))
        return {"written": False, "blockers": reasons}
    _dump(root / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
        {"idx": 1, "name": "1", "path": POOLING_DIR,
         "type": "sentence_transformers.sparse_encoder.modules.splade_pooling.SpladePooling"},
    ])
    _dump(root / "sentence_bert_config.json", {
        "transformer_task": "fill-mask",
        "modality_config": {"text": {"method": "forward", "method_output_name": "logits"}},
        "module_output_name": "token_embeddings",
        "query_length": model.query.max_length,
        "document_length": model.document.max_length,
    })
    # sentence-transformers' "relu" is log1p(relu(x)) (its "log1p_relu" applies log1p twice)
    _dump(root / POOLING_DIR / "config.json", {"pooling_strategy": "max", "activation_function": "relu",
                                               "embedding_dimension": model.document.vocab_size})
    _dump(root / "config_sentence_transformers.json", {
        "model_type": "SparseEncoder", "__version__": {"sentence_transformers": LAYOUT_VERSION},
        "prompts": {"query": "", "document": ""}, "default_prompt_name": None, "similarity_fn_name": "dot"})
    return {"written": True, "blockers": [], "layout_version": LAYOUT_VERSION, "files": list(FILES)}
