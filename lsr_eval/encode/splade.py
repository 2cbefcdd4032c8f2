"""Adapter: a SPLADE encoder (:class:`lsr_eval.models.encoder.SpladeEncoder`) as a stage-2 :class:`TextEncoder`."""

from __future__ import annotations

from typing import Sequence

from lsr_eval.encode.protocol import EncodedBatch


class SpladeTextEncoder:
    """Encodes with the encoder's own max length, sparsification and bf16 setting; vocabulary = its term strings."""

    def __init__(self, encoder) -> None:
        self.encoder = encoder
        self.vocab: Sequence[str] = encoder.terms

    def encode_batch(self, texts: list[str]) -> EncodedBatch:
        out = self.encoder.encode(texts, batch_size=max(1, len(texts)), sparse=True)
        return EncodedBatch(out.weights.astype("float32").tocsr(), out.n_tokens.tolist(), out.truncated.tolist())

    def length_key(self, text: str) -> int:
        return len(text)
