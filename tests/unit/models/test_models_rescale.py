"""MLM-head rescaling W <- W / k on every supported family."""

from __future__ import annotations

import pytest
import torch
from tiny_models import FAMILIES, tiny_model
from transformers import AutoModelForMaskedLM, AutoTokenizer

from lsr_eval.errors import ConfigError
from lsr_eval.models.heads import head_parts, tied
from lsr_eval.models.rescale import rescale_head

TEXTS = ["aspirin reduces the risk of heart attack", "cells"]


def _load(family, tied_head=True):
    folder = tiny_model(family, tied=tied_head)
    return AutoModelForMaskedLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def _logits(model, tok):
    b = tok(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits


@pytest.mark.parametrize("family", FAMILIES)
def test_tied_head_divided_in_place(family):
    model, _ = _load(family)
    parts = head_parts(model)
    assert parts.family == family
    assert tied(model)
    w0 = parts.decoder.weight.detach().clone()
    b0 = parts.decoder.bias.detach().clone()
    ptr = parts.decoder.weight.data_ptr()
    u = torch.randn(3, w0.shape[1])  # fixed decoder input
    with torch.no_grad():
        before = parts.decoder(u)
    report = rescale_head(model, 4, scale_bias=True)
    out = model.get_output_embeddings()
    assert out.weight is model.get_input_embeddings().weight and out.weight.data_ptr() == ptr  # tie intact
    assert torch.equal(out.weight, w0 / 4)                    # k = 4 is exact in binary floating point
    assert torch.equal(model.get_input_embeddings().weight, w0 / 4)  # ... so the input embeddings scale too
    assert torch.equal(out.bias, b0 / 4)
    with torch.no_grad():
        torch.testing.assert_close(out(u), before / 4)
    assert report.tied and report.bias_scaled and report.k == 4.0 and report.total_k == 4.0
    assert report.norm_after == pytest.approx(report.norm_before / 4, rel=1e-6)
    assert report.norm_before == pytest.approx(float(w0.norm()), rel=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_untied_logits_scale_exactly(family):
    model, tok = _load(family, tied_head=False)
    assert not tied(model)
    emb0 = model.get_input_embeddings().weight.detach().clone()
    before = _logits(model, tok)
    report = rescale_head(model, 2, scale_bias=True)
    assert not report.tied
    assert torch.equal(model.get_input_embeddings().weight, emb0)  # encoder untouched
    torch.testing.assert_close(_logits(model, tok), before / 2, rtol=1e-5, atol=1e-6)


def test_bias_unchanged_by_default():
    model, tok = _load("bert", tied_head=False)
    bias = model.get_output_embeddings().bias.detach().clone()
    assert bias.abs().max() > 0  # the tiny models have a random, non-zero logits bias
    before = _logits(model, tok)
    report = rescale_head(model, 2)
    assert not report.bias_scaled
    assert torch.equal(model.get_output_embeddings().bias, bias)
    torch.testing.assert_close(_logits(model, tok), (before - bias) / 2 + bias, rtol=1e-5, atol=1e-6)


def test_k_recorded_and_survives_save_load(tmp_path):
    model, _ = _load("roberta")
    rescale_head(model, 2)
    report = rescale_head(model, 8, scale_bias=True)
    assert report.total_k == 16.0
    model.save_pretrained(tmp_path)
    again = AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert again.config.lsr_eval["head_rescale_k"] == 16.0
    assert again.config.lsr_eval["head_rescale"] == [{"k": 2.0, "scale_bias": False, "tied_input": "divided"},
                                               {"k": 8.0, "scale_bias": True, "tied_input": "divided"}]
    assert torch.equal(again.get_output_embeddings().weight, model.get_output_embeddings().weight)
    assert tied(again)


@pytest.mark.parametrize("k", [0, -2, float("inf"), float("nan"), "2", True])
def test_invalid_k(k):
    model, _ = _load("bert")
    with pytest.raises(ConfigError, match="^rescale_k must be (> 0|a number > 0), got "):
        rescale_head(model, k)


def test_generic_route_any_output_embeddings():
    """A family without a known head layout (ELECTRA's generator) is rescaled through get_output_embeddings()."""
    from transformers import ElectraConfig, ElectraForMaskedLM

    torch.manual_seed(0)
    model = ElectraForMaskedLM(ElectraConfig(vocab_size=50, embedding_size=16, hidden_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=64))
    assert head_parts(model).family == "generic"
    w0 = model.get_output_embeddings().weight.detach().clone()
    report = rescale_head(model, 16)
    assert report.family == "generic" and report.tied == tied(model)
    assert torch.equal(model.get_output_embeddings().weight, w0 / 16)
    assert model.config.lsr_eval["head_rescale_k"] == 16.0


@pytest.mark.parametrize("family", FAMILIES)
def test_tied_compensated_keeps_encoder_input(family, tmp_path):
    """tied_input="compensated": the shared matrix is divided (tie intact) but the encoder sees the same inputs,
    so the hidden states are unchanged and the logits (bias scaled too) are exactly divided by k."""
    from lsr_eval.models.loading import load_mlm

    model, tok = _load(family)
    before = _logits(model, tok)
    w0 = model.get_input_embeddings().weight.detach().clone()
    report = rescale_head(model, 4, scale_bias=True, tied_input="compensated")
    assert report.tied and report.tied_input == "compensated"
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert torch.equal(model.get_input_embeddings().weight, w0 / 4)
    torch.testing.assert_close(_logits(model, tok), before / 4, rtol=1e-4, atol=1e-5)
    rescale_head(model, 2, scale_bias=True, tied_input="compensated")  # factors compose, one hook
    torch.testing.assert_close(_logits(model, tok), before / 8, rtol=1e-4, atol=1e-5)
    assert model.config.lsr_eval["input_scale"] == 8.0
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded, ltok, _ = load_mlm(tmp_path)  # the compensation is restored from config.json
    torch.testing.assert_close(_logits(loaded, ltok), before / 8, rtol=1e-4, atol=1e-5)


def test_divided_tied_input_changes_bert_encoder(caplog):
    """The paper's recipe on a tied BERT: the word embeddings shrink beside the position embeddings, so the
    hidden states move (the reason ``compensated`` exists), and a warning says so."""
    model, tok = _load("bert")
    b = tok(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        h0 = model.bert(**b).last_hidden_state
        with caplog.at_level("WARNING", logger="lsr_eval.models.rescale"):
            rescale_head(model, 16)
        h1 = model.bert(**b).last_hidden_state
    assert not torch.allclose(h0, h1, atol=1e-3)
    assert "tied_input='compensated' keeps it" in caplog.text


def test_compensated_untied_is_plain_division():
    model, tok = _load("bert", tied_head=False)
    report = rescale_head(model, 2, tied_input="compensated")
    assert report.tied_input == "untied" and "input_scale" not in model.config.lsr_eval


def test_tied_input_choice_is_checked():
    model, _ = _load("bert")
    with pytest.raises(ConfigError, match="^tied_input must be one of divided, compensated, got 'both'$"):
        rescale_head(model, 2, tied_input="both")
