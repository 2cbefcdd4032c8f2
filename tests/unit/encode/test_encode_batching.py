"""Stage 2 building blocks: the encoder protocol, length-sorted windows, the hashing encoder, query encoding."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.data.types import Query
from lsr_eval.encode import EncodedBatch, HashingEncoder, SparseVectors, TextEncoder, encode_queries
from lsr_eval.encode.batching import clean_rows, encode_window
from lsr_eval.errors import ConfigError, InputError, LsrEvalError


def test_encoded_batch_constructors_and_checks():
    b = EncodedBatch.from_rows([(np.array([4, 1]), np.array([0.5, 2.0])), (np.array([], int), np.array([]))], 6,
                               [3, 0], [False, False])
    assert b.weights.shape == (2, 6) and b.weights.dtype == np.float32
    assert b.weights.toarray().tolist() == [[0, 2.0, 0, 0, 0.5, 0], [0] * 6]
    d = EncodedBatch.from_dense(np.array([[0, 1.5, 0]]), [2], [True])
    assert d.weights.nnz == 1 and d.weights.indices.tolist() == [1]
    with pytest.raises(LsrEvalError, match="2 rows but 1 n_tokens"):
        EncodedBatch(b.weights, [1], [False, False])
    with pytest.raises(LsrEvalError, match="CSR"):
        EncodedBatch(np.zeros((1, 3)), [1], [False])  # type: ignore[arg-type]
    with pytest.raises(LsrEvalError, match="does not match"):
        SparseVectors(["a"], b.weights, ["x"] * 6)


def test_hashing_encoder_hand_computed():
    enc = HashingEncoder(vocab_size=1000, max_tokens=3)
    assert isinstance(enc, TextEncoder)
    out = enc.encode_batch(["A b a", "x y z w"])
    a, b = zlib.crc32(b"a") % 1000, zlib.crc32(b"b") % 1000
    assert a != b
    row = out.weights[0].toarray().ravel()
    assert row[a] == pytest.approx(math.log(3)) and row[b] == pytest.approx(math.log(2))
    assert out.weights[0].nnz == 2
    assert list(out.n_tokens) == [3, 3] and list(out.truncated) == [False, True]
    with pytest.raises(ConfigError):
        HashingEncoder(vocab_size=0)


def test_clean_rows_sums_duplicates_and_drops_zeros():
    m = sp.csr_matrix((np.array([1.0, 2.0, 0.0, 3.0]), np.array([3, 3, 1, 0]), np.array([0, 3, 4])), shape=(2, 5))
    c = clean_rows(m)
    assert c.indices.tolist() == [3, 0] and c.data.tolist() == [3.0, 3.0] and c.indptr.tolist() == [0, 1, 2]
    assert c.data.dtype == np.float32
    assert m.data.tolist() == [1.0, 2.0, 0.0, 3.0]  # the input is left alone


def test_encode_window_sorts_batches_and_restores_order():
    seen: list[list[str]] = []

    class Rec(HashingEncoder):
        def encode_batch(self, texts):
            seen.append(list(texts))
            return super().encode_batch(texts)

    texts = ["a", "b b b b", "c c", "d d d d d d", "e e e"]
    enc = Rec(vocab_size=50)
    w = encode_window(texts, enc, batch_size=2)
    assert seen == [["d d d d d d", "b b b b"], ["e e e", "c c"], ["a"]]
    expected = sp.vstack([enc.encode_batch([t]).weights for t in texts])
    assert (w.weights != expected).nnz == 0
    assert w.n_tokens.tolist() == [1, 4, 2, 6, 3]


def test_encode_window_refuses_wrong_shape():
    class Bad(HashingEncoder):
        def encode_batch(self, texts):
            return EncodedBatch(sp.csr_matrix((len(texts), 3), dtype=np.float32), [0] * len(texts),
                                [False] * len(texts))

    with pytest.raises(LsrEvalError, match=r"\(2, 3\) matrix for 2 texts and a vocabulary of 10"):
        encode_window(["a", "b"], Bad(vocab_size=10), batch_size=4)


def test_encode_queries_order_counts_and_duplicates():
    enc = HashingEncoder(vocab_size=100)
    qs = [Query("q1", "a a"), Query("q2", ""), Query("q3", "b c d e")]
    out = encode_queries(qs, enc, batch_size=2)
    assert out.vectors.ids == ["q1", "q2", "q3"]
    assert (out.vectors.matrix != enc.encode_batch([q.text for q in qs]).weights).nnz == 0
    counts = out.counts()
    assert counts["queries"] == 3 and counts["empty_vectors"] == 1 and counts["real_tokens"] == 6
    with pytest.raises(InputError, match="duplicate query id 'q1'"):
        encode_queries(qs + [Query("q1", "z")], enc)
