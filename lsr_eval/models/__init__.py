"""SPLADE model layer: encoders over any masked LM, MLM-head rescaling and initialisation, head diagnostics.

Public names are imported lazily (torch and transformers load on first use, not with this package):

* :class:`SpladeModel`, :class:`SpladeEncoder`, :class:`Encoded`, :func:`splade_pool`
* :class:`Sparsify`, :func:`to_term_weights`, :func:`vocab_terms`
* :func:`rescale_head`, :class:`RescaleReport`
* :func:`load_mlm`, :func:`apply_head_init`, :func:`init_identity_head`, :class:`HeadInitReport`,
  :class:`IdentityHead`
* :func:`inspect_head`, :func:`suggest_k`
* :func:`resolve_model`, :data:`OFFLINE_MODELS`, :func:`splade_tiny_path`, :func:`minilm_path` (offline checkpoints by
  alias)
"""

from __future__ import annotations

from lsr_eval._lazy import lazy_getattr

_EXPORTS = {
    "SpladeModel": "splade", "read_splade_config": "splade",
    "SpladeEncoder": "encoder", "Encoded": "encoder", "splade_pool": "encoder",
    "Sparsify": "sparsify",
    "to_term_weights": "terms", "vocab_terms": "terms",
    "rescale_head": "rescale", "RescaleReport": "rescale",
    "load_mlm": "loading",
    "apply_head_init": "head_init", "init_identity_head": "head_init", "HeadInitReport": "head_init",
    "IdentityHead": "options", "HeadInitRule": "options", "HEAD_INIT_RULES": "options",
    "head_parts": "heads",
    "inspect_head": "diagnostics", "suggest_k": "diagnostics", "HeadDiagnosis": "diagnostics",
    "minilm_path": "offline", "splade_tiny_path": "offline", "resolve_model": "offline", "OFFLINE_MODELS": "offline",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
