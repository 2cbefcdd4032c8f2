"""Query-encoder GFLOP per query: the floating-point operations of one query's forward pass through the encoder's
masked-language model, a cost that does not depend on the CPU (it separates a 45 ms DistilBERT query encoder from a
0.7 ms BERT-tiny one wherever they run).

Counted, not modelled: ``torch.utils.flop_counter.FlopCounterMode`` over one forward pass per distinct token length
of the queries (the count depends on the length only), with the convention of that counter and of the literature
(Kaplan et al. 2020, "Scaling Laws for Neural Language Models", sec. 2.1): a multiply-add is 2 FLOPs, and matrix
products (linear layers, attention scores and their use) are counted, element-wise operations (GELU, softmax, layer
norm, SPLADE's log-saturation and max-pooling) are not. For a BERT of L layers, hidden size H, feed-forward size I,
vocabulary V and n tokens this is

    L * (8 n H^2 + 4 n^2 H + 4 n H I) + 2 n H^2 + 2 n H V

(Q, K, V and output projections; scores and their weighted sum; the feed-forward; the MLM head's transform and
decoder). PyTorch's CPU attention kernel (``_scaled_dot_product_flash_attention_for_cpu``) has no entry in the counter;
it is given the counter's own SDPA formula. An inference-free query encoder (a term table) costs 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence


@dataclass(frozen=True)
class EncoderCost:
    """Mean GFLOP per query over ``queries`` texts of mean length ``mean_tokens`` (special tokens included)."""

    gflop_per_query: float
    queries: int
    mean_tokens: float
    counted: str = "matrix products of one forward pass (torch FlopCounterMode; a multiply-add is 2 FLOPs)"

    def to_dict(self) -> dict:
        return asdict(self)


def _cpu_sdpa(query, key, value, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query, key, value)


def forward_flops(mlm, length: int, token_id: int = 1) -> int:
    """FLOPs of ``mlm``'s forward pass over one sequence of ``length`` tokens (no padding)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    mapping = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa}
    device = next(mlm.parameters()).device
    ids = torch.full((1, length), token_id, dtype=torch.long, device=device)
    with torch.inference_mode(), FlopCounterMode(display=False, custom_mapping=mapping) as counter:
        mlm(input_ids=ids, attention_mask=torch.ones_like(ids))
    return int(counter.get_total_flops())


def query_encoder_cost(encoder, texts: Sequence[str]) -> EncoderCost:
    """Mean GFLOP per query of ``encoder`` (a :class:`~lsr_eval.models.SpladeEncoder`, or a static query encoder:
    0) over ``texts``, each tokenised as the encoder does (truncated at its max length)."""
    if not texts:
        return EncoderCost(0.0, 0, 0.0)
    lengths = [len(ids) for ids in encoder.tokenizer(list(texts), truncation=True,
                                                    max_length=encoder.max_length)["input_ids"]]
    mean_tokens = sum(lengths) / len(lengths)
    mlm = getattr(encoder, "mlm", None)
    if mlm is None:  # a term table: a lookup per token, no matrix product
        return EncoderCost(0.0, len(texts), mean_tokens, "none: an inference-free query encoder (a term table)")
    token = encoder.tokenizer.unk_token_id if encoder.tokenizer.unk_token_id is not None else 0
    per_length = {n: forward_flops(mlm, n, token) for n in set(lengths)}
    return EncoderCost(sum(per_length[n] for n in lengths) / len(lengths) / 1e9, len(texts), mean_tokens)
