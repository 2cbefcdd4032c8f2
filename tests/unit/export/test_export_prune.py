"""Pruning encoded vectors at export (a sparsity sweep over one encoding), hand-checked and against the encoder's
own sparsification."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.errors import ConfigError
from lsr_eval.export.prune import Prune


def _csr(rows):
    return sp.csr_matrix(np.array(rows, dtype=np.float32))


def test_top_k_and_threshold_by_hand():
    w = _csr([[0.5, 0.0, 2.0, 1.0], [0.1, 0.2, 0.0, 0.0], [0, 0, 0, 0]])
    assert Prune(top_k=2).apply(w).toarray().tolist() == [[0, 0, 2, 1], [pytest.approx(0.1), pytest.approx(0.2), 0, 0],
                                                          [0, 0, 0, 0]]
    assert Prune(threshold=0.5).apply(w).toarray().tolist() == [[0, 0, 2, 1], [0, 0, 0, 0], [0, 0, 0, 0]]
    # threshold first, then top-k
    assert Prune(top_k=1, threshold=0.15).apply(w).toarray()[1].tolist() == [0, pytest.approx(0.2), 0, 0]
    assert Prune().apply(w).nnz == w.nnz and not Prune().active and Prune(top_k=3).active


def test_ties_go_to_the_lower_vocabulary_id():
    w = _csr([[1.0, 3.0, 1.0, 1.0]])
    assert Prune(top_k=2).apply(w).toarray().tolist() == [[1, 3, 0, 0]]


def test_explicit_zeros_are_never_kept():
    w = sp.csr_matrix((np.array([0.0, 1.0], dtype=np.float32), np.array([0, 1]), np.array([0, 2])), shape=(1, 3))
    out = Prune(top_k=2).apply(w)
    assert out.nnz == 1 and out.toarray().tolist() == [[0, 1, 0]]


def test_pruning_a_capped_encoding_equals_sparsifying_to_the_smaller_budget():
    import torch

    from lsr_eval.models.sparsify import Sparsify

    rng = np.random.default_rng(0)
    dense = rng.random((20, 300)).astype(np.float32) * (rng.random((20, 300)) < 0.3)  # distinct weights
    t = torch.from_numpy(dense)
    capped = sp.csr_matrix(Sparsify(top_k=64, drop_special=False).apply(t).numpy())
    for k, thr in ((1, 0.0), (8, 0.0), (32, 0.5), (64, 0.0), (100, 0.2)):
        direct = Sparsify(top_k=k, threshold=thr, drop_special=False).apply(t).numpy()
        pruned = Prune(top_k=k, threshold=thr).apply(capped).toarray()
        if k <= 64:
            np.testing.assert_array_equal(pruned, direct)
        else:  # a budget above the encoding's cap cannot bring terms back
            assert (np.count_nonzero(pruned, axis=1) <= 64).all()


@pytest.mark.parametrize("kwargs", [{"top_k": 0}, {"top_k": 2.5}, {"top_k": True}, {"threshold": -1},
                                    {"threshold": float("nan")}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ConfigError, match="^(top_k|threshold) must be "):
        Prune(**kwargs)
