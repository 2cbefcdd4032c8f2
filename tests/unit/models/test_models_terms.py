"""Term strings of vocabulary ids, {term: weight} conversion, and Sparsify."""

from __future__ import annotations

import pytest
import scipy.sparse as sp
import torch

from lsr_eval.errors import ConfigError
from lsr_eval.models.sparsify import Sparsify
from lsr_eval.models.terms import to_term_weights, vocab_terms


class FakeTokenizer:
    """Five vocabulary strings, one with a space and one duplicating another after escaping."""

    def __init__(self, vocab):
        self.vocab = vocab

    def __len__(self):
        return len(self.vocab)

    def convert_ids_to_tokens(self, ids):
        return [self.vocab[i] for i in ids]


def test_vocab_terms_rules():
    tok = FakeTokenizer(["[CLS]", "cell", "new york", "new<U+0020>york", "Ġcell"])
    # vocabulary padded to 7 rows (ModernBERT-style): ids 5 and 6 have no string
    assert vocab_terms(tok, 7) == ["[CLS]", "cell", "new<U+0020>york", "new<U+0020>york[id:3]", "Ġcell",
                                   "[id:5]", "[id:6]"]
    assert vocab_terms(tok, 2) == ["[CLS]", "cell"]
    tab = FakeTokenizer(["a\tb", "c\nd"])
    assert vocab_terms(tab, 2) == ["a<U+0009>b", "c<U+000A>d"]


def test_to_term_weights_dense_and_sparse_agree():
    terms = ["[CLS]", "cell", "heart", "risk"]
    w = torch.tensor([[0.5, 0.0, 2.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    expected = [{"heart": 2.0, "risk": 1.0, "[CLS]": 0.5}, {}]
    assert to_term_weights(w, terms) == expected
    assert list(to_term_weights(w, terms)[0]) == ["heart", "risk", "[CLS]"]  # decreasing weight
    assert to_term_weights(sp.csr_matrix(w.numpy()), terms) == expected
    # sparsify drops the special id 0, then keeps the top 1
    assert to_term_weights(w, terms, sparsify=Sparsify(top_k=1), special_ids=[0]) == [{"heart": 2.0}, {}]
    assert to_term_weights(sp.csr_matrix(w.numpy()), terms, sparsify=Sparsify(), special_ids=[0]) == [
        {"heart": 2.0, "risk": 1.0}, {}]


def test_to_term_weights_width_mismatch():
    with pytest.raises(ConfigError, match="4 columns but the vocabulary has 3 terms"):
        to_term_weights(torch.zeros(1, 4), ["a", "b", "c"])


def test_sparsify_order_and_values():
    w = torch.tensor([[3.0, 0.25, 0.5, 1.5, 0.0, 0.75]])
    assert Sparsify().apply(w, [0]).tolist() == [[0.0, 0.25, 0.5, 1.5, 0.0, 0.75]]
    assert Sparsify(drop_special=False).apply(w, [0]).tolist() == w.tolist()
    assert Sparsify(threshold=0.5).apply(w, [0]).tolist() == [[0.0, 0.0, 0.0, 1.5, 0.0, 0.75]]  # strictly above
    # special dropped before top-k: the top 2 of the rest are 1.5 and 0.75
    assert Sparsify(top_k=2).apply(w, [0]).tolist() == [[0.0, 0.0, 0.0, 1.5, 0.0, 0.75]]
    assert Sparsify(top_k=10).apply(w, []).tolist() == w.tolist()
    assert w[0, 0] == 3.0  # input untouched


def test_sparsify_dict_round_trip_and_validation():
    s = Sparsify(top_k=128, threshold=0.1, drop_special=False)
    assert s.to_dict() == {"top_k": 128, "threshold": 0.1, "drop_special": False}
    assert Sparsify.from_dict(s.to_dict()) == s
    assert Sparsify.from_dict(None) == Sparsify()
    with pytest.raises(ConfigError, match="^top_k must be >= 1, got 0$"):
        Sparsify(top_k=0)
    with pytest.raises(ConfigError, match="^threshold must be >= 0, got -1$"):
        Sparsify(threshold=-1)
    with pytest.raises(ConfigError, match=r"unknown keys \['topk'\]"):
        Sparsify.from_dict({"topk": 3})
