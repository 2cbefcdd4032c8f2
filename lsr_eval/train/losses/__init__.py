"""Ranking losses on SPLADE scores s(q, d) = q . d, one per file, registered by the name a training config gives
(``loss.name``), as Sentence-Transformers keeps its losses. Adding a loss is one new module with its class and one
line in :data:`LOSSES`; the config's check, ``docs/settings.md`` and the trainer read the registry.

The registry is torch-free (a config is checked without loading torch): each entry names the module and class,
imported when training starts. The names are the spellings committed manifests record (``infonce``, ``margin_mse``,
``kl_div``): no run's identity changes.

Design notes: docs/design.md."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from lsr_eval._lazy import lazy_getattr


@dataclass(frozen=True)
class LossSpec:
    """A registered loss: its module and class (``<module>.<cls>``, imported when used), and whether it distils a
    teacher's scores (then ``data.teacher_scores`` and at least one negative are needed)."""

    module: str
    cls: str
    distils: bool = False

    def load(self) -> type:
        """The loss class (imports its module: torch)."""
        return getattr(importlib.import_module(self.module), self.cls)


#: name -> loss. One line a loss.
LOSSES: dict[str, LossSpec] = {
    "infonce": LossSpec("lsr_eval.train.losses.info_nce_loss", "InfoNCE"),
    "margin_mse": LossSpec("lsr_eval.train.losses.margin_mse_loss", "MarginMSE", distils=True),
    "kl_div": LossSpec("lsr_eval.train.losses.kl_div_loss", "KLDiv", distils=True),
}


def loss_names() -> tuple[str, ...]:
    """The registered losses' names (``loss.name``'s choices)."""
    return tuple(LOSSES)


def make_loss(config: Any):
    """The loss object of a training config's ``loss`` section (:class:`lsr_eval.train.config.LossConfig`)."""
    return LOSSES[config.name].load()(config)


#: The loss functions by name (the formulas the classes apply), imported on first use.
__getattr__ = lazy_getattr(__name__, {n: f"{n}_loss" for n in ("info_nce", "margin_mse", "kl_div")})
