"""Sparsity regularisers on a batch of SPLADE vectors w (N x V), one per file, registered by the name a training
config gives (``regularizer.query``, ``regularizer.document``; ``none``: no regulariser), as the losses are
(:mod:`lsr_eval.train.losses`). Adding one is one module with its function and one line in :data:`REGULARIZERS`;
the config's check, ``docs/settings.md`` and the objective read the registry, which is torch-free.

FLOPS (Paria et al., ICLR 2020, eq. 4) and L1 (Lassance & Clinchant, SIGIR 2022). :func:`regularize` applies one to
a micro-batch; :func:`sparsity_stats` measures a batch (:mod:`lsr_eval.train.regularizers.batch`).

Design notes: docs/design.md."""

from __future__ import annotations

import importlib

from lsr_eval._lazy import lazy_getattr

#: name -> (module, function). One line a regulariser.
REGULARIZERS: dict[str, tuple[str, str]] = {
    "l1": ("lsr_eval.train.regularizers.l1_regularizer", "l1"),
    "flops": ("lsr_eval.train.regularizers.flops_regularizer", "flops"),
}
#: What a config may name: a registered regulariser, or none.
NONE = "none"


def regularizer_names() -> tuple[str, ...]:
    """``regularizer.query``'s and ``regularizer.document``'s choices."""
    return (NONE, *REGULARIZERS)


def get_regularizer(name: str):
    """The function of regulariser ``name`` (imports its module: torch)."""
    module, function = REGULARIZERS[name]
    return getattr(importlib.import_module(module), function)


#: The regularisers' functions and the batch helpers by name, imported on first use.
__getattr__ = lazy_getattr(__name__, {"flops": "flops_regularizer", "l1": "l1_regularizer", "regularize": "batch",
                                      "sparsity_stats": "batch"})
