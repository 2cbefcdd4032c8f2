"""Inference-time sparsification of SPLADE vectors, declared as data so manifests can record it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping, Sequence

import torch

from lsr_eval.errors import ConfigError
from lsr_eval.models.options import THRESHOLD, TOP_K
from lsr_eval.settings import Setting, Validated, setting


@dataclass(frozen=True, slots=True)
class Sparsify(Validated):
    """Which terms of a vector survive: applied in the order drop special -> threshold -> top-k.

    ``drop_special`` zeroes the tokenizer's special tokens ([CLS], [SEP], [PAD], [MASK], [UNK], <s>, </s>, ...:
    ``tokenizer.all_special_ids``), which carry no lexical meaning; ``threshold`` keeps weights strictly above it
    (zeros are never kept); ``top_k`` keeps the k largest weights per vector (None: all).
    """

    top_k: int | None = setting(None, like=TOP_K)
    threshold: float = setting(0.0, like=THRESHOLD)
    drop_special: bool = setting(True, help="zero the tokenizer's special tokens")

    def apply(self, weights: torch.Tensor, special_ids: Sequence[int] = ()) -> torch.Tensor:
        """A sparsified copy of ``weights`` (N x V, non-negative)."""
        out = weights.clone()
        if self.drop_special and len(special_ids):
            out[:, list(special_ids)] = 0
        if self.threshold > 0:
            out[out <= self.threshold] = 0
        if self.top_k is not None and self.top_k < out.shape[1]:
            values, index = out.topk(self.top_k, dim=1)
            out = torch.zeros_like(out).scatter_(1, index, values)
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Sparsify:
        if data is None:
            return cls()
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"sparsify: unknown keys {sorted(unknown)}; expected top_k, threshold, drop_special")
        return cls(**data)


#: An encoder's sparsification rule, as the encoders check it.
SPARSIFY = Setting(help="which terms of a vector survive (a Sparsify)")
