"""SPLADE training: ranking losses, sparsity regularisers, recipes, the training loop, and middle training.

Public names are imported lazily (torch and transformers load on first use, not with this package).
See docs/training.md.

Design notes: docs/design.md."""

from __future__ import annotations

from lsr_eval._lazy import lazy_getattr

_EXPORTS = {
    "load_config": "config", "SpladeTrainConfig": "config", "MiddleTrainConfig": "config",
    "train": "run", "middle_train": "run", "TrainResult": "trainer",
    "info_nce": "losses", "margin_mse": "losses", "kl_div": "losses",
    "flops": "regularizers", "l1": "regularizers",
    "reg_weight": "schedule", "lr_factor": "schedule",
    "build_model": "recipe",
    "read_hard_negatives": "files", "read_teacher_scores": "files",
    "build_source": "data", "Example": "data",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
