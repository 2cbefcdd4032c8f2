"""A deterministic, model-free :class:`~lsr_eval.encode.protocol.TextEncoder` for tests and pipeline smoke runs.

Whitespace tokens, lower-cased, hashed (CRC-32) into ``vocab_size`` buckets named ``h0, h1, ...``;
weight of bucket ``b`` = ``log(1 + tf(b))``. Texts longer than ``max_tokens`` tokens are truncated.
"""

from __future__ import annotations

import zlib

import numpy as np

from lsr_eval.encode.protocol import EncodedBatch
from lsr_eval.models.options import VOCAB_SIZE
from lsr_eval.settings import Setting, check

#: Tokens hashed per text (the rest is cut).
MAX_TOKENS = Setting(help="tokens hashed per text", ge=1, unit="tokens")


class HashingEncoder:
    """Hashed bag of words; the vector of a text does not depend on the batch it is encoded in."""

    def __init__(self, vocab_size: int = 1000, max_tokens: int = 512, prefix: str = "h") -> None:
        check("vocab_size", vocab_size, int, VOCAB_SIZE)
        check("max_tokens", max_tokens, int, MAX_TOKENS)
        self.vocab_size = vocab_size
        self.max_tokens = max_tokens
        self.vocab = [f"{prefix}{i}" for i in range(vocab_size)]

    def describe(self) -> dict[str, object]:
        """Parameters, for manifests."""
        return {"name": "hashing", "vocab_size": self.vocab_size, "max_tokens": self.max_tokens}

    def _encode_one(self, text: str) -> tuple[np.ndarray, np.ndarray, int, bool]:
        tokens = text.lower().split()
        truncated = len(tokens) > self.max_tokens
        tokens = tokens[:self.max_tokens]
        buckets = np.array([zlib.crc32(t.encode("utf-8")) % self.vocab_size for t in tokens], dtype=np.int64)
        ids, tf = np.unique(buckets, return_counts=True)
        return ids.astype(np.int32), np.log1p(tf).astype(np.float32), len(tokens), truncated

    def encode_batch(self, texts: list[str]) -> EncodedBatch:
        out = [self._encode_one(t) for t in texts]
        return EncodedBatch.from_rows([(ids, w) for ids, w, _, _ in out], self.vocab_size,
                                      [n for _, _, n, _ in out], [t for _, _, _, t in out])

    def length_key(self, text: str) -> int:
        return len(text)
