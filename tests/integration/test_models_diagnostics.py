"""Head diagnostics, the suggested-k rule, and ``lsr-eval inspect-head``."""

from __future__ import annotations

import json

import pytest
import torch
from tiny_models import tiny_model

from lsr_eval.cli import main
from lsr_eval.errors import ConfigError
from lsr_eval.models.diagnostics import (
    HEALTHY_MAX_LOGIT,
    HEALTHY_MEAN_SCORE,
    MAX_INPUT_TOKEN_COSINE,
    SAMPLE_TEXTS,
    SUGGEST_KS,
    KStats,
    _mean_cross_text_score,
    activation_stats,
    format_diagnosis,
    identity_warning,
    input_token_cosine,
    inspect_head,
    suggest_k,
)
from lsr_eval.models.encoder import SpladeEncoder
from lsr_eval.models.loading import load_mlm


def _rows(logit_at_1: float, score_at_1: float) -> list[KStats]:
    """Statistics of a head whose logits and scores divide exactly by k (as with an untied, zero-bias head)."""
    return [KStats(k, 1.0, 1.0, logit_at_1 / k, 10.0, 0.1, 5.0, score_at_1 / k) for k in SUGGEST_KS]


@pytest.mark.parametrize("logit,score,k", [
    (11.86, 100.0, 1), (HEALTHY_MAX_LOGIT, HEALTHY_MEAN_SCORE, 1), (24.01, 10.0, 2), (48.0, 10.0, 2),
    (48.1, 10.0, 4), (384.0, 10.0, 16), (385.0, 10.0, 32), (1e6, 10.0, 64), (-3.0, 0.0, 1),
    (10.0, HEALTHY_MEAN_SCORE * 2, 2), (10.0, HEALTHY_MEAN_SCORE * 2 + 1, 4), (30.0, HEALTHY_MEAN_SCORE * 16, 16),
])
def test_suggest_k_rule(logit, score, k):
    assert suggest_k(_rows(logit, score)) == k


def test_suggest_k_score_decides_for_dense_small_logit_heads():
    # every term active with small logits (all-MiniLM-L6-v2's random head): the logit test passes at k=1, the
    # score test does not
    rows = _rows(5.8, 8 * HEALTHY_MEAN_SCORE)
    assert suggest_k(rows) == 8
    assert suggest_k(rows, max_score=float("inf")) == 1


def test_suggest_k_takes_the_largest_when_none_passes():
    assert suggest_k(_rows(1e9, 1.0)) == 64


def test_suggest_k_rejects_nan():
    with pytest.raises(ConfigError, match="expected finite numbers"):
        suggest_k(_rows(float("nan"), 1.0))
    with pytest.raises(ConfigError, match="at least one k"):
        suggest_k([])


def test_mean_cross_text_score_by_hand():
    w = torch.tensor([[1.0, 0.0, 2.0], [0.5, 1.0, 0.0], [0.0, 3.0, 1.0]], dtype=torch.float64)
    # pairs: (0,1) 0.5, (0,2) 2.0, (1,2) 3.0 -> each counted twice over 6 ordered pairs: mean 5.5 / 3
    assert _mean_cross_text_score(w) == pytest.approx(5.5 / 3)
    assert _mean_cross_text_score(w[:1]) == 0.0


def test_input_token_cosine_by_hand():
    # three texts, 3 positions, 2-dim inputs; real positions: a all, b the first two, c the first and third
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = torch.tensor([[1.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    c = torch.tensor([[0.0, 2.0], [9.0, 9.0], [-1.0, -1.0]])
    real = [torch.tensor([True, True, True]), torch.tensor([True, True, False]), torch.tensor([True, False, True])]
    # (a,b): t0 cos 1, t1 cos 0 (t2 padded in b); (a,c): t0 cos 0, t2 cos -1; (b,c): t0 cos 0 (t1 not real in c,
    # t2 not real in b): sum 1 + 0 + 0 - 1 + 0 = 0 over 5 positions
    assert input_token_cosine([a, b, c], real) == pytest.approx(0.0)
    assert input_token_cosine([a, b], real[:2]) == pytest.approx(0.5)      # (1 + 0) / 2
    assert input_token_cosine([a], real[:1]) != input_token_cosine([a], real[:1])   # no pair: NaN


def test_identity_warning_flags_a_k_whose_input_lost_token_identity():
    rows = [KStats(k, 1, 1, 1, 1, 0.1, 1, 1, cos) for k, cos in ((1.0, 0.1), (8.0, 0.9), (16.0, 0.3))]
    assert "k=8" in identity_warning(rows, 8) and "0.900" in identity_warning(rows, 8)
    assert identity_warning(rows, 16) == "" and identity_warning(rows, 1) == ""
    assert identity_warning([KStats(1.0, 1, 1, 1, 1, 0.1, 1, 1)], 1) == ""      # not measured: nothing to flag
    assert MAX_INPUT_TOKEN_COSINE == 0.5


def test_divided_tied_head_loses_input_token_identity_and_compensated_keeps_it():
    mlm, tokenizer, _ = load_mlm(str(tiny_model("bert", tied=True)))
    texts = list(SAMPLE_TEXTS[:4])
    divided, _ = activation_stats(mlm, tokenizer, texts, [1.0, 1e4], max_length=32)
    compensated, _ = activation_stats(mlm, tokenizer, texts, [1.0, 1e4], max_length=32, tied_input="compensated")
    assert divided[0].input_token_cosine == pytest.approx(compensated[0].input_token_cosine)   # k = 1: the same
    assert compensated[1].input_token_cosine == pytest.approx(compensated[0].input_token_cosine, abs=1e-6)
    # divided by 10^4 the word embeddings vanish: every text's input at a position is its position embedding
    assert divided[1].input_token_cosine > 0.99 > divided[0].input_token_cosine
    d = inspect_head(str(tiny_model("bert", tied=True)), ks=[1, 64], texts=texts, max_length=32)
    assert "input cos" in format_diagnosis(d) and "bounds magnitudes only" in format_diagnosis(d)


def _head_with_logit_scale(tmp_path, target: float):
    """Untied tiny BERT with zero logits bias whose decoder is scaled so that the mean max logit == target."""
    model, tok, _ = load_mlm(tiny_model("bert", tied=False))
    with torch.no_grad():
        model.get_output_embeddings().bias.zero_()
    (row,), _ = activation_stats(model, tok, SAMPLE_TEXTS, [1], max_length=64)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(target / row.mean_max_logit)
    folder = tmp_path / f"head-{target:g}"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("target,expected_k", [(12.0, 1), (40.0, 2), (100.0, 8), (300.0, 16)])
def test_constructed_heads(tmp_path, target, expected_k):
    d = inspect_head(_head_with_logit_scale(tmp_path, target), ks=SUGGEST_KS, max_length=64)
    assert d.head_init["applied"] == "loaded" and not d.tied
    assert d.baseline_max_logit == pytest.approx(target, rel=1e-4)
    # the logit test alone gives expected_k; the suggestion is the first k from there whose score passes too
    scores = {r.k: r.mean_score for r in d.rows}
    first = next((k for k in SUGGEST_KS if k >= expected_k and scores[k] <= HEALTHY_MEAN_SCORE), 64)
    assert d.suggested_k == first
    base = d.rows[0]
    for row in d.rows:
        # untied head, zero bias: logits are exactly divided by k, so the active set does not move
        assert row.mean_max_logit == pytest.approx(target / row.k, rel=1e-4)
        assert row.frobenius == pytest.approx(base.frobenius / row.k, rel=1e-6)
        assert row.mean_row_norm == pytest.approx(base.mean_row_norm / row.k, rel=1e-6)
        assert row.mean_active == base.mean_active and row.expected_flops == base.expected_flops


def test_baseline_is_k1_even_with_smaller_k(tmp_path):
    d = inspect_head(_head_with_logit_scale(tmp_path, 12.0), ks=[0.5, 1, 2], max_length=64)
    assert [r.k for r in d.rows] == [0.5, 1.0, 2.0]
    assert d.baseline_max_logit == pytest.approx(12.0, rel=1e-4) == d.rows[1].mean_max_logit


@pytest.mark.precision_sensitive
def test_expected_flops_matches_encoded_vectors():
    model, tok, _ = load_mlm(tiny_model("bert"))
    texts = list(SAMPLE_TEXTS)
    (row,), n_tokens = activation_stats(model, tok, texts, [1], max_length=64)
    w = SpladeEncoder(model, tok, 64).encode(texts).weights  # drops special tokens, as the statistics do
    active = (w > 0).double()
    p = active.mean(0)
    assert row.expected_flops == pytest.approx(float((p ** 2).sum()), rel=1e-9)
    assert row.mean_active == pytest.approx(float(active.sum(1).mean()), rel=1e-9)
    scores = w.double() @ w.double().T
    n = len(texts)
    assert row.mean_score == pytest.approx(float((scores.sum() - scores.trace()) / (n * (n - 1))), rel=1e-6)
    assert n_tokens == sum(len(tok(t)["input_ids"]) for t in texts)
    assert torch.equal(model.get_output_embeddings().weight, load_mlm(tiny_model("bert"))[0]
                       .get_output_embeddings().weight)  # weights restored after the k loop


def test_cli_json_and_text(tmp_path, capsys):
    text_file = tmp_path / "texts.txt"
    text_file.write_text("aspirin and heart attack\n\n   \nthe cell membrane\n", encoding="utf-8")
    assert main(["inspect-head", str(tiny_model("bert", head=False)), "--k", "1", "4", "--text-file",
                 str(text_file), "--max-length", "32", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["k"] for r in report["rows"]] == [1.0, 4.0]
    assert report["n_texts"] == 2 and report["head_init"]["applied"] == "identity" and report["tied"]
    assert report["baseline_max_logit"] == report["rows"][0]["mean_max_logit"]
    assert main(["inspect-head", str(tiny_model("roberta")), "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert "head:    loaded from the checkpoint" in out and "suggested k:" in out and "family:  roberta" in out
    assert out.count("\n    2 ") == 1  # one table row, k = 2 (k = 1 is measured for the rule, not printed)


def test_cli_defaults_mirror_the_library():
    from lsr_eval.commands import inspect_head as command
    from lsr_eval.models import diagnostics

    assert command.DEFAULT_KS == list(diagnostics.DEFAULT_KS)
    assert command.DEFAULT_MAX_LENGTH == diagnostics.DEFAULT_MAX_LENGTH


def test_cli_errors(tmp_path, capsys):
    assert main(["inspect-head", str(tiny_model("bert")), "--text-file", str(tmp_path / "missing.txt")]) == 2
    assert f"{tmp_path / 'missing.txt'}: cannot read" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    assert main(["inspect-head", str(tiny_model("bert")), "--text-file", str(empty)]) == 2
    assert f"{empty}: no non-blank line" in capsys.readouterr().err
    assert main(["inspect-head", str(tmp_path / "nomodel")]) == 2
    assert "cannot load a masked LM" in capsys.readouterr().err


def test_a_vocabulary_of_special_tokens_only_is_a_clear_error(tmp_path, capsys):
    """Every head row a special token: nothing to measure (was an IndexError from an empty reduction)."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(tiny_model("bert"))
    assert sorted(tok.all_special_ids) == list(range(len(tok.all_special_ids)))  # [PAD] [UNK] [CLS] [SEP] [MASK]
    config = BertConfig(vocab_size=len(tok.all_special_ids), hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    folder = tmp_path / "specials-only"
    BertForMaskedLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    assert main(["inspect-head", str(folder), "--k", "1"]) == 2
    err = capsys.readouterr().err
    assert "5 vocabulary rows and all are special tokens" in err and "[MASK]" in err
