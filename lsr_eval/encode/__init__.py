"""Stage 2, text -> sparse vectors: stream a corpus through a :class:`TextEncoder` into resumable, sharded vectors.

- :func:`encode_corpus` (+ :func:`finalize_encoding` for distributed runs) writes a folder of shards;
- :func:`iter_vectors`, :func:`iter_shards`, :func:`load_matrix`, :func:`read_vocab` read it back;
- :func:`encode_queries` encodes queries in memory; :func:`write_vectors` stores in-memory vectors as a folder.
"""

from lsr_eval.encode.corpus import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_SHARD_SIZE,
    DEFAULT_WINDOW_BATCHES,
    EncodeSummary,
    encode_corpus,
    resolve_rank,
    write_vectors,
)
from lsr_eval.encode.finalize import finalize_encoding
from lsr_eval.encode.hashing import HashingEncoder
from lsr_eval.encode.protocol import EncodedBatch, SparseVectors, TextEncoder
from lsr_eval.encode.queries import EncodedQueries, encode_queries
from lsr_eval.encode.reader import (
    iter_shards,
    iter_vectors,
    load_matrix,
    load_vectors,
    read_encoding_manifest,
    read_vocab,
)

__all__ = [
    "DEFAULT_BATCH_SIZE", "DEFAULT_SHARD_SIZE", "DEFAULT_WINDOW_BATCHES", "EncodeSummary", "EncodedBatch",
    "EncodedQueries", "HashingEncoder", "SparseVectors", "TextEncoder", "encode_corpus", "encode_queries",
    "finalize_encoding", "iter_shards", "iter_vectors", "load_matrix", "load_vectors", "read_encoding_manifest",
    "read_vocab", "resolve_rank", "write_vectors",
]
