"""SPLADE training: ranking losses, sparsity regularisers, recipes, the training loop, and middle training.

Public names are imported lazily (torch and transformers load on first use, not with this package):

* :func:`load_config`, :class:`SpladeTrainConfig`, :class:`MiddleTrainConfig` (typed YAML configs)
* :func:`train`, :func:`middle_train`, :class:`TrainResult` (``lsr-eval train`` / ``lsr-eval middle-train``)
* :func:`info_nce`, :func:`margin_mse`, :func:`kl_div` (losses), :func:`flops`, :func:`l1` (regularisers)
* :func:`reg_weight`, :func:`lr_factor` (schedules)
* :func:`build_model` (rescaling at initialisation, distinct query encoders)
* :func:`read_hard_negatives`, :func:`read_teacher_scores`, :func:`build_source`, :class:`Example`

See docs/training.md.
"""

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
