"""SPLADE pooling, encoders, shared/distinct SpladeModel save -> load."""

from __future__ import annotations

import json
import math

import pytest
import scipy.sparse as sp
import torch
from tiny_models import tiny_model
from transformers import AutoModelForMaskedLM, AutoTokenizer

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.encoder import SpladeEncoder, splade_pool
from lsr_eval.models.sparsify import Sparsify
from lsr_eval.models.splade import SPLADE_CONFIG, SpladeModel

#: Run on this CPU and on one with native bf16 simulated (tests/conftest.py): the default must not depend on it.
pytestmark = pytest.mark.precision_sensitive

SHORT = "aspirin"
LONG = "the cell membrane controls the movement of substances in and out of cells " * 4


def test_splade_pool_hand_computed():
    logits = torch.tensor([[[1.0, -2.0, 0.0], [math.e - 1, -5.0, -1.0], [100.0, 100.0, 100.0]]])
    mask = torch.tensor([[1, 1, 0]])  # the last position is padding: its 100s must not win the max
    assert torch.allclose(splade_pool(logits, mask), torch.tensor([[1.0, 0.0, 0.0]]))
    bf = splade_pool(logits.bfloat16(), mask)
    assert bf.dtype == torch.float32


def test_forward_is_differentiable():
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 32)
    b = enc.tokenize([SHORT, LONG])
    w = enc(b["input_ids"], b["attention_mask"])
    assert w.shape == (2, enc.vocab_size) and w.dtype == torch.float32 and w.min() >= 0
    w.sum().backward()
    assert enc.mlm.get_output_embeddings().weight.grad is not None


@pytest.mark.parametrize("family", ["bert", "roberta", "modernbert"])
def test_padding_does_not_change_a_vector(family):
    enc = SpladeEncoder.from_pretrained(tiny_model(family), 64)
    together = enc.encode([SHORT, LONG], batch_size=2).weights
    alone = torch.cat([enc.encode([SHORT]).weights, enc.encode([LONG]).weights])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-6)


def test_encode_counts_tokens_and_truncation():
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 16)
    assert not enc.training and not enc.mlm.training  # loaded for inference: eval mode, no dropout
    enc.train()
    out = enc.encode([LONG, SHORT, ""], batch_size=2)
    tok = AutoTokenizer.from_pretrained(tiny_model("bert"))
    n_short = len(tok(SHORT)["input_ids"])
    assert out.n_tokens.tolist() == [16, n_short, 2]  # "" is [CLS] [SEP]
    assert out.truncated.tolist() == [True, False, False] and out.n_truncated == 1
    assert out.weights[:, enc.special_ids].abs().max() == 0  # special tokens dropped by default
    assert enc.training and enc.mlm.training  # encode restores the mode it found


def test_encode_sparse_top_k_and_input_order():
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 32, sparsify=Sparsify(top_k=5))
    texts = [LONG, SHORT, "heart attack risk"]
    dense = enc.encode(texts, batch_size=1)
    sparse = enc.encode(texts, batch_size=2, sparse=True)
    assert sp.issparse(sparse.weights) and sparse.weights.shape == (3, enc.vocab_size)
    assert sparse.weights.getnnz(axis=1).tolist() == [5, 5, 5]
    torch.testing.assert_close(torch.from_numpy(sparse.weights.toarray()), dense.weights, rtol=1e-5, atol=1e-6)
    one = enc.encode([SHORT]).weights[0]
    torch.testing.assert_close(dense.weights[1], one, rtol=1e-5, atol=1e-6)  # rows follow input order


def test_bf16_returns_float32():
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 32, sparsify=Sparsify(drop_special=False))
    fp32 = enc.encode([SHORT, LONG], precision="fp32").weights
    bf16 = enc.encode([SHORT, LONG], bf16=True).weights
    assert bf16.dtype == torch.float32
    # bf16 keeps 8 mantissa bits (relative 2^-8 per rounding, sums in fp32); weights here are <= ~0.5: measured
    # max error 0.0019 (bert), 0.0020 (roberta), 0.0017 (modernbert); 2^-7 allows two roundings of O(1) values
    err = (bf16 - fp32).abs().max()
    assert 0 < err < 2 ** -7


def test_encoder_option_validation():
    with pytest.raises(ConfigError, match="max_length=1000: the model accepts at most 128 tokens"):
        SpladeEncoder.from_pretrained(tiny_model("bert"), 1000)
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 16)
    with pytest.raises(ConfigError, match="^batch_size must be >= 1, got 0$"):
        enc.encode([SHORT], batch_size=0)
    with pytest.raises(InputError, match="text 1: expected a string, got int"):
        enc.encode([SHORT, 3])


def _vectors(model, texts):
    return model.query.encode(texts).weights, model.document.encode(texts).weights


def test_shared_model_save_load_identical(tmp_path):
    model = SpladeModel.from_pretrained(tiny_model("bert", head=False), max_length_q=8, max_length_d=48,
                                        rescale_k=2, sparsify_d=Sparsify(top_k=50))
    assert model.shared and model.query.mlm is model.document.mlm
    assert model.query.max_length == 8 and model.document.max_length == 48
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / SPLADE_CONFIG).read_text())
    assert config["shared"] and config["pooling"] == "max" and config["activation"] == "log1p_relu"
    assert config["quantization_scale"] == 100
    doc = config["encoders"]["document"]
    assert doc["path"] == "." and doc["max_length"] == 48 and doc["head_rescale_k"] == 2.0
    assert doc["head_init"]["applied"] == "identity" and doc["sparsify"]["top_k"] == 50
    assert config["encoders"]["query"]["max_length"] == 8
    # plain transformers loads the folder
    AutoModelForMaskedLM.from_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(tmp_path)
    again = SpladeModel.from_pretrained(tmp_path)
    assert again.shared and again.document.sparsify == Sparsify(top_k=50)
    texts = [SHORT, LONG, "heart attack"]
    for a, b in zip(_vectors(model, texts), _vectors(again, texts)):
        assert torch.equal(a, b)


def test_distinct_encoders_save_load_identical(tmp_path):
    model = SpladeModel.from_pretrained(tiny_model("bert"), query_model=tiny_model("roberta"), max_length_q=16,
                                        max_length_d=64)
    assert not model.shared
    assert model.query.vocab_size == 600 and type(model.query.mlm).__name__ == "RobertaForMaskedLM"
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / SPLADE_CONFIG).read_text())
    assert not config["shared"]
    assert config["encoders"]["query"]["path"] == "query" and config["encoders"]["query"]["model_type"] == "roberta"
    for sub in ("query", "document"):
        AutoModelForMaskedLM.from_pretrained(tmp_path / sub)
        AutoTokenizer.from_pretrained(tmp_path / sub)
    again = SpladeModel.from_pretrained(tmp_path)
    texts = [SHORT, LONG]
    for a, b in zip(_vectors(model, texts), _vectors(again, texts)):
        assert torch.equal(a, b)
    with pytest.raises(ConfigError, match="query_model must not be given"):
        SpladeModel.from_pretrained(tmp_path, query_model=tiny_model("bert"))


def test_bad_splade_config(tmp_path):
    (tmp_path / SPLADE_CONFIG).write_text('{"format": "lsr-eval-splade",\n "shared": tru}')
    with pytest.raises(InputError, match=f"{SPLADE_CONFIG}:2: malformed JSON"):
        SpladeModel.from_pretrained(tmp_path)
