"""Head initialisation for checkpoints without an MLM head; trained heads left bit for bit."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file
from tiny_models import tiny_model
from torch import nn
from transformers import AutoModelForMaskedLM

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.heads import head_parts, tied
from lsr_eval.models.loading import load_mlm
from lsr_eval.models.options import IdentityHead


def test_bert_without_head_gets_identity():
    model, _, report = load_mlm(tiny_model("bert", head=False))
    assert report.applied == "identity" and report.rule == "auto" and report.family == "bert"
    assert "cls.predictions.transform.dense.weight" in report.missing
    transform = model.cls.predictions.transform
    assert torch.equal(transform.dense.weight, torch.eye(32))
    assert torch.equal(transform.dense.bias, torch.zeros(32))
    assert isinstance(transform.transform_act_fn, nn.Identity)
    assert torch.equal(transform.LayerNorm.weight, torch.ones(32))
    assert torch.equal(transform.LayerNorm.bias, torch.zeros(32))
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    assert torch.equal(model.cls.predictions.bias, torch.zeros(600))
    assert model.config.lsr_eval["head_init"]["applied"] == "identity"
    # logits = E . LayerNorm(h) exactly (no activation, unit LayerNorm, zero bias)
    ids = torch.tensor([[2, 40, 41, 3]])
    with torch.no_grad():
        h = model.bert(input_ids=ids).last_hidden_state
        embeddings = model.bert.embeddings.word_embeddings.weight
        expected = nn.functional.layer_norm(h, (32,), eps=model.config.layer_norm_eps) @ embeddings.T
        torch.testing.assert_close(model(input_ids=ids).logits, expected)


def test_identity_with_norm_bypassed():
    model, _, report = load_mlm(tiny_model("bert", head=False), identity=IdentityHead(norm="bypass"))
    assert report.identity == {"activation": "bypass", "norm": "bypass"}
    ids = torch.tensor([[2, 40, 41, 3]])
    with torch.no_grad():
        h = model.bert(input_ids=ids).last_hidden_state
        torch.testing.assert_close(model(input_ids=ids).logits, h @ model.bert.embeddings.word_embeddings.weight.T)


def test_trained_head_untouched_bit_for_bit():
    folder = tiny_model("bert", head=True)
    saved = load_file(folder / "model.safetensors")
    model, _, report = load_mlm(folder)
    assert report.applied == "loaded" and report.missing == []
    state = model.state_dict()
    head_keys = [k for k in saved if k.startswith("cls.")]
    assert "cls.predictions.transform.dense.weight" in head_keys
    for key in saved:
        assert torch.equal(state[key], saved[key]), key
    assert not isinstance(model.cls.predictions.transform.transform_act_fn, nn.Identity)


# the whole head as each family's forward runs it, on fixed hidden states u
HEAD_FORWARD = {
    "distilbert": lambda m, u: m.vocab_projector(m.vocab_layer_norm(m.activation(m.vocab_transform(u)))),
    "roberta": lambda m, u: m.lm_head(u),
    "modernbert": lambda m, u: m.decoder(m.head(u)),
}


@pytest.mark.parametrize("family,dense,act", [("distilbert", "vocab_transform", "activation"),
                                              ("roberta", "lm_head.dense", None),
                                              ("modernbert", "head.dense", "head.act")])
def test_identity_other_families(family, dense, act):
    model, _, report = load_mlm(tiny_model(family, head=False))
    assert report.applied == "identity" and report.family == family
    assert torch.equal(model.get_submodule(dense).weight, torch.eye(32))
    if act is not None:
        assert isinstance(model.get_submodule(act), nn.Identity)
    assert tied(model)
    parts = head_parts(model)
    assert torch.equal(parts.decoder.bias, torch.zeros_like(parts.decoder.bias))
    u = torch.randn(2, 32)
    with torch.no_grad():  # head(u) = E . LayerNorm(u): activation bypassed (RoBERTa's is a function call)
        expected = nn.functional.layer_norm(u, (32,), eps=parts.norm.eps) @ parts.decoder.weight.T
        torch.testing.assert_close(HEAD_FORWARD[family](model, u), expected)


def test_albert_identity_impossible():
    with pytest.raises(ConfigError, match="albert head dense maps 32 -> 16 dims.*head_init='random'"):
        load_mlm(tiny_model("albert", head=False))


def test_random_and_error_rules():
    model, _, report = load_mlm(tiny_model("bert", head=False), head_init="random")
    assert report.applied == "random"
    assert not torch.equal(model.cls.predictions.transform.dense.weight, torch.eye(32))
    with pytest.raises(InputError, match="no trained MLM head"):
        load_mlm(tiny_model("bert", head=False), head_init="error")
    _, _, ok = load_mlm(tiny_model("bert", head=True), head_init="error")
    assert ok.applied == "loaded"


def test_identity_forced_over_trained_head():
    model, _, report = load_mlm(tiny_model("bert", head=True), head_init="identity")
    assert report.applied == "identity" and report.missing == []
    assert torch.equal(model.cls.predictions.transform.dense.weight, torch.eye(32))


def test_option_validation_lists_allowed_values():
    with pytest.raises(ConfigError, match="^head_init must be one of auto, identity, random, error, got 'none'$"):
        load_mlm(tiny_model("bert"), head_init="none")
    with pytest.raises(ConfigError, match="^norm must be one of bypass, keep, got 'skip'$"):
        IdentityHead(norm="skip")


@pytest.mark.parametrize("family", ["bert", "roberta", "modernbert"])
def test_identity_head_saved_and_reloaded(tmp_path, family):
    model, tok, _ = load_mlm(tiny_model(family, head=False))
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    again, _, report = load_mlm(tmp_path)
    assert report.applied == "reapplied" and again.config.lsr_eval["head_init"]["applied"] == "identity"
    b = tok(["aspirin and the heart", "cells"], padding=True, return_tensors="pt")
    with torch.no_grad():
        a = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
        c = again(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
    assert torch.equal(a, c)
    if family == "modernbert":  # its config selects the head activation: plain transformers reproduces it
        plain = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
        with torch.no_grad():
            assert torch.equal(plain(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits, a)


def test_identity_needs_a_known_layout():
    from transformers import ElectraConfig, ElectraForMaskedLM

    from lsr_eval.models.head_init import init_identity_head

    model = ElectraForMaskedLM(ElectraConfig(vocab_size=50, embedding_size=32, hidden_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=64))
    with pytest.raises(ConfigError, match="ElectraForMaskedLM has no head transform of a known layout "
                                          r"\(bert, distilbert, albert, roberta, modernbert\)"):
        init_identity_head(model)
