"""Query-encoder GFLOP per query against the hand formula of a BERT (lsr_eval/efficiency/encoder_flops.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def bert_flops(n: int, layers: int, hidden: int, ffn: int, vocab: int) -> int:
    """By hand: per layer Q, K, V, output (4 x 2nH^2), scores and their weighted sum (2 x 2n^2H), feed-forward
    (2 x 2nHI); the MLM head's transform (2nH^2) and decoder (2nHV)."""
    return layers * (8 * n * hidden ** 2 + 4 * n * n * hidden + 4 * n * hidden * ffn) + 2 * n * hidden ** 2 + \
        2 * n * hidden * vocab


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_forward_flops_equal_the_bert_formula_by_hand(attention):
    from transformers import BertConfig, BertForMaskedLM

    from lsr_eval.efficiency.encoder_flops import forward_flops

    cfg = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                     max_position_embeddings=64, attn_implementation=attention)
    mlm = BertForMaskedLM(cfg).eval()
    # n = 5: 2 * (8*5*64 + 4*25*8 + 4*5*8*16) + 2*5*64 + 2*5*8*30 = 2 * 8000 ... = 14,880
    assert forward_flops(mlm, 5) == bert_flops(5, 2, 8, 16, 30) == 14_880
    assert forward_flops(mlm, 12) == bert_flops(12, 2, 8, 16, 30)


def test_query_cost_is_the_mean_over_the_queries_token_lengths():
    from transformers import BertConfig, BertForMaskedLM

    from lsr_eval.efficiency.encoder_flops import query_encoder_cost

    class Tokenizer:
        unk_token_id = 3

        def __call__(self, texts, truncation, max_length):
            return {"input_ids": [[0] * min(len(t.split()) + 2, max_length) for t in texts]}

    class Encoder:
        mlm = BertForMaskedLM(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=16, max_position_embeddings=64)).eval()
        tokenizer = Tokenizer()
        max_length = 6

    cost = query_encoder_cost(Encoder(), ["a b c", "a", "a b c d e f g"])   # 5, 3 and 6 (truncated) tokens
    expected = (bert_flops(5, 2, 8, 16, 30) + bert_flops(3, 2, 8, 16, 30) + bert_flops(6, 2, 8, 16, 30)) / 3
    assert cost.gflop_per_query == pytest.approx(expected / 1e9)
    assert cost.queries == 3 and cost.mean_tokens == pytest.approx(14 / 3)

    class Table:
        tokenizer = Tokenizer()
        max_length = 6

    free = query_encoder_cost(Table(), ["a b"])
    assert free.gflop_per_query == 0.0 and "inference-free" in free.counted
