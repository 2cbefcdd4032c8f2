"""Vocabulary-chunked SPLADE max pooling (forward and sparse backward) against the B x L x V reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tiny_models import tiny_model

from lsr_eval.models.encoder import SpladeEncoder, splade_pool
from lsr_eval.models.kernels import (
    PAD_LOGIT,
    _max_batched,
    _max_per_document,
    chunk_size,
    chunked_max_logits,
    l2_cache_bytes,
    splade_weights,
)
from lsr_eval.models.options import IdentityHead
from lsr_eval.models.sparsify import Sparsify

#: Run on this CPU and on one with native bf16 simulated (tests/conftest.py): the default must not depend on it.
pytestmark = pytest.mark.precision_sensitive

TEXTS = ["aspirin", "the cell membrane controls the movement of substances in and out of cells " * 3,
         "heart attack risk in adults", ""]


def _reference(hidden, mask, weight, bias):
    logits = hidden @ weight.T + (bias if bias is not None else 0)
    return splade_pool(logits, mask)


def _inputs(seed=0, b=3, length=7, e=5, v=23):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(b, length, e, generator=g)
    weight = torch.randn(v, e, generator=g)
    bias = torch.randn(v, generator=g)
    mask = torch.ones(b, length, dtype=torch.long)
    mask[1, 4:] = 0
    mask[2, 1:] = 0   # one real token only
    return hidden, mask, weight, bias


def test_hand_computed():
    # tokens h = (1, 0), (0, 2), (9, 9) [padding]; terms W = (1, 0), (0, -1), (1, 1); bias (0, 0, -1)
    hidden = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [9.0, 9.0]]])
    mask = torch.tensor([[1, 1, 0]])
    weight = torch.tensor([[1.0, 0.0], [0.0, -1.0], [1.0, 1.0]])
    bias = torch.tensor([0.0, 0.0, -1.0])
    z = chunked_max_logits(hidden, mask, weight, bias, chunk=2)
    # term 0: max(1, 0) = 1; term 1: max(0, -2) = 0; term 2: max(1, 2) - 1 = 1 (the padding's 18 - 1 never wins)
    assert z.tolist() == [[1.0, 0.0, 1.0]]
    w = splade_weights(hidden, mask, weight, bias, chunk=2)
    assert torch.allclose(w, torch.tensor([[math.log(2.0), 0.0, math.log(2.0)]]))


@pytest.fixture(params=["per_document", "batched"])
def cpu_layout(request, monkeypatch):
    """Both CPU layouts: the per-document one for every batch, or never (``MIN_TOKENS_PER_DOCUMENT``)."""
    import lsr_eval.models.kernels as kernels

    monkeypatch.setattr(kernels, "MIN_TOKENS_PER_DOCUMENT", 0 if request.param == "per_document" else 10 ** 9)
    return request.param


@pytest.mark.parametrize("chunk", [1, 4, 7, 23, 100, None])
@pytest.mark.parametrize("with_bias", [True, False])
def test_forward_equals_reference(chunk, with_bias, cpu_layout):
    hidden, mask, weight, bias = _inputs()
    bias = bias if with_bias else None
    torch.testing.assert_close(splade_weights(hidden, mask, weight, bias, chunk),
                               _reference(hidden, mask, weight, bias), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chunk", [3, None])
def test_sparse_backward_equals_reference(chunk, cpu_layout):
    hidden, mask, weight, bias = _inputs(seed=1)
    coef = torch.randn(hidden.shape[0], weight.shape[0], generator=torch.Generator().manual_seed(2))
    grads = []
    for fn in (lambda h, w, c: splade_weights(h, mask, w, c, chunk), lambda h, w, c: _reference(h, mask, w, c)):
        h, w, c = (t.clone().requires_grad_() for t in (hidden, weight, bias))
        loss = (fn(h, w, c) * coef).sum()
        loss.backward()
        grads.append((loss.detach(), h.grad, w.grad, c.grad))
    for ours, ref in zip(*grads):
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)
    assert grads[0][1][1, 4:].abs().max() == 0   # padding positions get no gradient


@pytest.mark.parametrize("chunk", [1, 5, None])
def test_cpu_and_gpu_layouts_agree_on_left_padding_and_empty_rows(chunk):
    hidden, mask, weight, _ = _inputs(seed=3, b=4)
    mask[0] = torch.tensor([0, 0, 1, 1, 1, 1, 1])     # left padding: real tokens are not a prefix
    mask[3] = 0                                       # no real token
    logits = (hidden @ weight.T).masked_fill(~mask.bool().unsqueeze(-1), float("-inf")).amax(1)
    per_doc = _max_per_document(hidden, mask, weight, chunk)
    batched = _max_batched(hidden, mask, weight, chunk)
    torch.testing.assert_close(per_doc[:3], logits[:3], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(batched[:3], logits[:3], rtol=1e-6, atol=1e-6)
    assert (per_doc[3] == PAD_LOGIT).all() and (batched[3] <= PAD_LOGIT / 2).all()


def test_l2_cache_bytes_reads_sysfs(tmp_path):
    for i, (level, kind, size) in enumerate([("1", "Data", "48K"), ("1", "Instruction", "32K"),
                                             ("2", "Unified", "2048K"), ("3", "Unified", "32M")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert l2_cache_bytes(tmp_path) == 2048 * 1024
    assert l2_cache_bytes(tmp_path / "absent", default=123) == 123


def test_chunk_size_bounds_the_block():
    assert chunk_size(8192, 30522, block_elements=1 << 22) == 512 and chunk_size(8192, 30522) == 1024
    assert chunk_size(10, 30522) == 30522
    assert chunk_size(10**9, 30522) == 64


@pytest.mark.parametrize("family", ["bert", "distilbert", "albert", "roberta", "modernbert"])
def test_encoder_chunked_equals_full_logits(family):
    enc = SpladeEncoder.from_pretrained(tiny_model(family), 64, sparsify=Sparsify(drop_special=False))
    fast = enc.encode(TEXTS, batch_size=4).weights
    enc.chunked = False
    full = enc.encode(TEXTS, batch_size=4).weights
    torch.testing.assert_close(fast, full, rtol=1e-5, atol=1e-6)
    assert fast.abs().sum() > 0


@pytest.mark.parametrize("identity", [IdentityHead(), IdentityHead(norm="bypass")])
@pytest.mark.parametrize("rescale_k", [None, 4.0])
def test_identity_and_rescaled_heads(identity, rescale_k):
    enc = SpladeEncoder.from_pretrained(tiny_model("bert", head=False), 64, identity=identity, rescale_k=rescale_k)
    assert enc.head_init.applied == "identity"
    fast = enc.encode(TEXTS).weights
    enc.chunked = False
    torch.testing.assert_close(fast, enc.encode(TEXTS).weights, rtol=1e-5, atol=1e-6)


def _unambiguous_terms(enc, batch, gap: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor]:
    """B x V mask of the terms whose SPLADE gradient is unique: the top token's logit leads the runner-up by more
    than ``gap`` and the pooled logit is ``gap`` away from ReLU's kink. Elsewhere the max (or ReLU) has several valid
    subgradients, and two float32 summation orders may legitimately route the gradient to different tokens (this
    made the test flaky across CPUs). Also returns the mask of the terms that carry a gradient (pooled logit > gap)."""
    with torch.no_grad():
        torch.manual_seed(0)   # the same dropout masks as the forward passes compared
        logits = enc.mlm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    pad = ~batch["attention_mask"].bool().unsqueeze(-1)
    top2 = logits.masked_fill(pad, float("-inf")).topk(2, dim=1).values           # B x 2 x V
    one_token = batch["attention_mask"].sum(1, keepdim=True) < 2
    clear_max = one_token | ((top2[:, 0] - top2[:, 1]) > gap)
    return clear_max & ((top2[:, 0].abs()) > gap), top2[:, 0] > gap


def test_encoder_gradients_equal_full_logits(cpu_layout):
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 32)
    enc.train()
    batch = enc.tokenize(TEXTS)
    keep, carries = _unambiguous_terms(enc, batch)
    assert carries.sum() > 100 and keep[carries].float().mean() > 0.9, "near-ties should be rare"
    keep = keep.float()
    results = []
    for chunked in (True, False):
        enc.chunked = chunked
        enc.zero_grad(set_to_none=True)
        torch.manual_seed(0)   # same dropout masks
        w = enc(batch["input_ids"], batch["attention_mask"])
        loss = ((w ** 2 + w) * keep).sum()
        loss.backward()
        results.append((loss.detach(), {n: p.grad.clone() for n, p in enc.named_parameters() if p.grad is not None}))
    (loss_a, grads_a), (loss_b, grads_b) = results
    torch.testing.assert_close(loss_a, loss_b, rtol=1e-5, atol=1e-5)
    assert grads_a.keys() == grads_b.keys() and grads_a
    for name in grads_a:   # float32 sums in another order: within 1e-5 of the gradient's scale
        scale = max(1.0, float(grads_b[name].abs().max()))
        torch.testing.assert_close(grads_a[name], grads_b[name], rtol=1e-5, atol=1e-5 * scale, msg=name)


def test_bf16_precision_runs_the_chunked_kernel():
    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 32, precision="bf16")
    assert enc.bf16 and enc.resolved_precision().reason == "requested"
    w = enc.encode(TEXTS[:2]).weights
    ref = enc.encode(TEXTS[:2], precision="fp32").weights
    assert w.dtype == torch.float32 and 0 < (w - ref).abs().max() < 2 ** -7  # bf16's rounding (test_models_encoder)


@pytest.mark.parametrize("family", ["bert", "roberta", "modernbert"])
def test_single_text_lean_path_equals_batched(family):
    enc = SpladeEncoder.from_pretrained(tiny_model(family), 24, sparsify=Sparsify(top_k=7))
    for text in TEXTS:
        alone = enc.encode([text], sparse=True)
        batched = enc.encode([text, TEXTS[1]], sparse=True)
        np.testing.assert_allclose(alone.weights.toarray()[0], batched.weights[0].toarray()[0], rtol=1e-5, atol=1e-6)
        assert alone.n_tokens[0] == batched.n_tokens[0] and alone.truncated[0] == batched.truncated[0]
    long = enc.encode([TEXTS[1]])          # longer than 24 tokens: the batched path truncates it
    assert long.truncated.tolist() == [True] and long.n_tokens.tolist() == [24]


def test_copies_and_pickles_keep_their_own_decoder():
    import copy
    import pickle

    enc = SpladeEncoder.from_pretrained(tiny_model("bert"), 32)
    enc.encode(TEXTS[:2])                       # installs the decoder switch
    twin = copy.deepcopy(enc)
    with torch.no_grad():
        twin.mlm.get_output_embeddings().bias.add_(1.0)
    batch = enc.tokenize(TEXTS[:2])
    for other in (twin, pickle.loads(pickle.dumps(twin))):
        other.chunked = False                   # full logits: the copy's decoder forward, its own bias
        full = other.encode(TEXTS[:2]).weights
        other.chunked = True
        torch.testing.assert_close(other.encode(TEXTS[:2]).weights, full, rtol=1e-5, atol=1e-6)
        assert not torch.equal(full, enc.encode(TEXTS[:2]).weights)
    assert batch["input_ids"].shape[0] == 2
