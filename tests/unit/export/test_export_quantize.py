"""Stage 3: integer impacts (hand-computed rounding), token and weight checks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export.quantize import DEFAULT_SCALE, VocabCheck, check_scale, quantize, quantize_rows, row_weight_map


def csr(rows: list[dict[int, float]], vocab_size: int) -> sp.csr_matrix:
    dense = np.zeros((len(rows), vocab_size), dtype=np.float32)
    for i, r in enumerate(rows):
        for j, w in r.items():
            dense[i, j] = w
    return sp.csr_matrix(dense)


def test_quantize_hand_computed():
    assert DEFAULT_SCALE == 100
    w = np.array([0.004, 0.005, 0.015, 0.125, 0.375, 0.5, 1.234, 2.0], dtype=np.float32)
    # float32(0.005) = 0.00499999988 -> 0.499999988 -> 0; float32(0.015) = 0.01499999966 -> 1;
    # 0.125 and 0.375 are exact halves after scaling: 12.5 -> 12 and 37.5 -> 38 (half to even, as np.rint/round)
    assert quantize(w, 100).tolist() == [0, 0, 1, 12, 38, 50, 123, 200]
    assert quantize(np.array([1.234], np.float32), 51.2).tolist() == [63]  # 63.18 (Pyserini's 256/5 scale)
    for bad in (0, -1, float("nan"), float("inf"), True):
        with pytest.raises(ConfigError):
            check_scale(bad)


def test_quantize_rows_drops_zero_and_counts():
    vocab = VocabCheck(["a", "b", "c", "d"])
    m = csr([{0: 0.004, 2: 1.234}, {1: 0.003}, {}], 4)
    q = quantize_rows(m, ["x", "y", "z"], vocab, 100)
    assert q.indptr.tolist() == [0, 1, 1, 1]
    assert q.indices.tolist() == [2] and q.values.tolist() == [123]
    assert q.dropped_zero_weights == 2
    assert (q.empty_before, q.empty_after) == (1, 2)


def test_whitespace_token_named_only_when_used():
    vocab = VocabCheck(["ok", "two words", "tab\there", "", "ok"])
    assert sorted(vocab.problems) == [1, 2, 3, 4]
    quantize_rows(csr([{0: 1.0}], 5), ["fine"], vocab, 100)  # the bad tokens are not used: no error
    with pytest.raises(InputError, match=r"token 'two words' \(vocabulary id 1\) contains whitespace.*document 'd2'"):
        quantize_rows(csr([{0: 1.0}, {1: 0.5}], 5), ["d1", "d2"], vocab, 100)
    with pytest.raises(InputError, match=r"vocabulary id 4\) is also the token of vocabulary id 0"):
        quantize_rows(csr([{4: 1.0}], 5), ["d"], vocab, 100)
    with pytest.raises(InputError, match=r"vocabulary id 3\) is empty"):
        quantize_rows(csr([{3: 1.0}], 5), ["d"], vocab, 100)


def test_nan_negative_and_overflow_name_the_document():
    vocab = VocabCheck(["a", "b"])
    with pytest.raises(InputError, match=r"document 'doc-nan': weight nan of token 'b' \(vocabulary id 1\) is not "
                                         r"finite"):
        quantize_rows(csr([{0: 1.0}, {0: 0.5, 1: np.nan}], 2), ["ok", "doc-nan"], vocab, 100)
    with pytest.raises(InputError, match="document 'doc-inf'.*not finite"):
        quantize_rows(csr([{1: np.inf}], 2), ["doc-inf"], vocab, 100)
    with pytest.raises(InputError, match="query 'neg': weight -0.5 .* is negative"):
        quantize_rows(csr([{0: -0.5}], 2), ["neg"], vocab, 100, what="query")
    with pytest.raises(InputError, match="document 'huge'.*exceeds"):
        quantize_rows(csr([{0: 3e7}], 2), ["huge"], vocab, 100)


def test_row_weight_map_is_one_row_of_quantize_rows_and_refuses_the_same_rows():
    vocab = VocabCheck(["a", "b", "c", "two words"])
    idx, val = np.array([0, 1, 2]), np.array([0.004, 0.0212, 1.25])      # 0.004 x 100 rounds to 0: dropped
    assert row_weight_map(idx, val, vocab, 100, "q1") == {"b": 2, "c": 125}
    rows = quantize_rows(csr([dict(zip(idx.tolist(), val.tolist()))], 4), ["q1"], vocab, 100, what="query")
    assert dict(zip(vocab.tokens[rows.indices].tolist(), rows.values.tolist())) == {"b": 2, "c": 125}
    assert row_weight_map(np.array([], dtype=np.int64), np.array([]), vocab, 100, "empty") == {}
    for bad, message in (([0.5, np.nan], "query 'q2': weight nan of token 'b'.*not finite"),
                         ([0.5, -0.1], "query 'q2': weight -0.1 .* is negative"),
                         ([0.5, 3e7], "query 'q2'.*exceeds")):
        with pytest.raises(InputError, match=message):
            row_weight_map(np.array([0, 1]), np.array(bad), vocab, 100, "q2")
    with pytest.raises(InputError, match=r"token 'two words' \(vocabulary id 3\) contains whitespace.*query 'q3'"):
        row_weight_map(np.array([3]), np.array([1.0]), vocab, 100, "q3")
