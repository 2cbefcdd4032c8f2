"""SPLADE max pooling over a vocabulary-chunked MLM-head projection (no B x L x V tensor, forward or backward).

SPLADE max pooling (Formal et al., "SPLADE v2", arXiv:2109.10086, eq. 1 with max):

    w_bv = log(1 + ReLU(z_bv)),   z_bv = max_{t real token of b} (h_bt . W_v) + c_v

Design notes: docs/design.md."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch

#: Batched layout: logits held per chunk (elements), a 32 MiB float32 block (largest of 4, 8, 16, 32 MiB measured
#: fastest on a 2-core AVX-512 Xeon; the full logits of 32 x 256 tokens take 1 GiB).
BLOCK_ELEMENTS = 1 << 23
#: logit of a padding position, or of a document without real tokens (see :func:`_max_batched`).
PAD_LOGIT = -1e30
#: CPU: the per-document layout runs when a batch's documents have this many real tokens on average (docs/design.md).
MIN_TOKENS_PER_DOCUMENT = 48
#: terms of one document handled at once in the backward pass (its tokens x these terms of logits).
BACKWARD_ROWS = 1 << 12


def chunk_size(rows: int, vocab: int, block_elements: int | None = None) -> int:
    """Terms per chunk so that ``rows x chunk <= block_elements`` (default :data:`BLOCK_ELEMENTS`; at least 64
    terms, at most the vocabulary)."""
    return max(64, min(vocab, (block_elements or BLOCK_ELEMENTS) // max(rows, 1)))


def _compute_dtype(hidden: torch.Tensor) -> torch.dtype:
    """The autocast dtype when autocast is on for this device, else the hidden states' dtype."""
    device = hidden.device.type
    if torch.is_autocast_enabled(device):
        return torch.get_autocast_dtype(device)
    return hidden.dtype


CPU_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


def l2_cache_bytes(root: Path = CPU_CACHE, default: int = 1 << 20) -> int:
    """The L2 (data or unified) cache of CPU 0 in bytes, from Linux sysfs ``root``; ``default`` where it cannot be
    read."""
    for index in sorted(root.glob("index*")):
        try:
            if (index / "level").read_text().strip() == "2" and (index / "type").read_text().strip() != "Instruction":
                size = (index / "size").read_text().strip().upper()
                unit = {"K": 1 << 10, "M": 1 << 20}.get(size[-1:], 1)
                value = int(size.rstrip("KM")) * unit
                if value > 0:
                    return value
        except (OSError, ValueError):
            continue
    return default


@lru_cache(maxsize=1)
def _l2_bytes() -> int:
    return l2_cache_bytes()


def _chunked_max(hidden: torch.Tensor, mask: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 chunk: int | None) -> torch.Tensor:
    """``z`` (B x V, in the compute dtype): the layout of the device (docs/design.md)."""
    dtype = _compute_dtype(hidden)
    with torch.autocast(hidden.device.type, enabled=False):
        h = hidden.to(dtype)
        w = weight.to(dtype)
        per_document = hidden.device.type == "cpu" and bool(
            mask.sum() >= MIN_TOKENS_PER_DOCUMENT * max(mask.shape[0], 1))
        layout = _max_per_document if per_document else _max_batched
        z = layout(h, mask, w, chunk)
        if bias is not None:
            z += bias.to(dtype)  # max_t (x_t + c) = max_t x_t + c, bit for bit (rounding is monotone): a pass saved
    return z


def _max_per_document(h: torch.Tensor, mask: torch.Tensor, w: torch.Tensor, chunk: int | None) -> torch.Tensor:
    """CPU layout: ``max_t h_bt . W_v`` over each document's real tokens, vocabulary blocks of ``chunk`` terms
    (default: a chunk x tokens block fills the L2 cache). A document without real tokens gets :data:`PAD_LOGIT`."""
    b, length, _ = h.shape
    vocab = w.shape[0]
    real = mask.bool()
    n_real = real.sum(1)
    counts = n_real.tolist()
    prefix = bool((real == (torch.arange(length, device=h.device) < n_real.unsqueeze(1))).all())
    z = torch.empty(b, vocab, dtype=h.dtype, device=h.device)
    step = chunk or chunk_size(max(counts, default=1), vocab, _l2_bytes() // h.element_size())
    buf = torch.empty(min(step, vocab) * max(max(counts, default=1), 1), dtype=h.dtype, device=h.device)
    for i, n in enumerate(counts):
        if n == 0:
            z[i] = PAD_LOGIT
            continue
        tokens = h[i, :n] if prefix else h[i, real[i]]
        ht = tokens.t().contiguous()                                    # E x n
        for v0 in range(0, vocab, step):
            v1 = min(vocab, v0 + step)
            block = buf[:(v1 - v0) * n].view(v1 - v0, n)
            torch.mm(w[v0:v1], ht, out=block)
            torch.amax(block, dim=1, out=z[i, v0:v1])
    return z


def _max_batched(h: torch.Tensor, mask: torch.Tensor, w: torch.Tensor, chunk: int | None) -> torch.Tensor:
    """GPU layout, and CPU batches of short texts: the whole batch per vocabulary chunk.

    Padding: rather than a masked fill of every block (a third of the matrix product's time), one more column is
    appended: 0 for real tokens, -1e30 for padding, against a column of ones in W, so a padding logit is -1e30
    and never wins the max (a real token's logit gains an exact +0).
    """
    b, length, e = h.shape
    vocab = w.shape[0]
    dtype = h.dtype
    h = h.reshape(b * length, e)
    pad = ~mask.bool().reshape(b * length)
    if bool(pad.any()):
        h = torch.cat([h, (pad.to(dtype) * PAD_LOGIT).unsqueeze(1)], dim=1)
        w = torch.cat([w, torch.ones(vocab, 1, dtype=dtype, device=w.device)], dim=1)
    step = chunk or chunk_size(b * length, vocab)
    buf = torch.empty(b * length * min(step, vocab), dtype=dtype, device=h.device)
    z = torch.empty(b, vocab, dtype=dtype, device=h.device)
    for v0 in range(0, vocab, step):
        v1 = min(vocab, v0 + step)
        block = buf[:b * length * (v1 - v0)].view(b * length, v1 - v0)
        torch.mm(h, w[v0:v1].t(), out=block)
        torch.amax(block.view(b, length, v1 - v0), dim=1, out=z[:, v0:v1])
    return z


def chunked_max_logits(hidden: torch.Tensor, mask: torch.Tensor, weight: torch.Tensor,
                       bias: torch.Tensor | None = None, chunk: int | None = None) -> torch.Tensor:
    """``z_bv = max_{t: mask_bt} h_bt . W_v + c_v`` (B x V); differentiable with a sparse backward when any input
    requires a gradient (and grad mode is on). Every row of ``mask`` needs one real token."""
    needs_grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (hidden, weight, bias))
    if needs_grad:
        return ChunkedMaxLogits.apply(hidden, mask, weight, bias, chunk)
    return _chunked_max(hidden, mask, weight, bias, chunk)


def splade_weights(hidden: torch.Tensor, mask: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                   chunk: int | None = None) -> torch.Tensor:
    """SPLADE weights ``log1p(relu(z))`` (B x V float32) of :func:`chunked_max_logits`."""
    return torch.log1p(torch.relu(chunked_max_logits(hidden, mask, weight, bias, chunk).float()))


class ChunkedMaxLogits(torch.autograd.Function):
    """:func:`chunked_max_logits` with the sparse arg-max backward of docs/design.md.

    The forward keeps only ``z`` (no B x V arg-max: ``max`` with indices ran 5x slower than ``amax`` per block);
    the backward finds the arg-max token of each (document, term) pair with a non-zero gradient by recomputing
    that document's logits for those terms only (its real tokens x its active terms).
    """

    @staticmethod
    def forward(ctx, hidden, mask, weight, bias, chunk):
        z = _chunked_max(hidden, mask, weight, bias, chunk)
        ctx.save_for_backward(hidden, mask, weight)
        ctx.has_bias = bias is not None
        ctx.bias_dtype = bias.dtype if bias is not None else None
        return z

    @staticmethod
    def backward(ctx, grad):
        hidden, mask, weight = ctx.saved_tensors
        b, length, e = hidden.shape
        g = grad.float()
        need_h, _, need_w, need_b, _ = ctx.needs_input_grad
        h = hidden.float()
        w = weight.float()
        real = mask.bool()
        rows, terms = torch.nonzero(g, as_tuple=True)               # row-major: each document's terms together
        best = torch.empty_like(terms)                               # arg-max position of each (row, term)
        bounds = torch.cumsum(torch.bincount(rows, minlength=b), 0).tolist()
        start = 0
        for i, stop in enumerate(bounds):
            if stop > start:
                tokens = torch.nonzero(real[i]).flatten()
                h_i = h[i, tokens]                                   # real tokens x E
                for s in range(start, stop, BACKWARD_ROWS):
                    t = min(stop, s + BACKWARD_ROWS)
                    best[s:t] = tokens[torch.argmax(h_i @ w[terms[s:t]].T, dim=0)]
            start = stop
        g_v = g[rows, terms].unsqueeze(1)
        d_hidden = d_weight = d_bias = None
        if need_h:
            d_h = torch.zeros(b * length, e, dtype=torch.float32, device=hidden.device)
            d_h.index_add_(0, rows * length + best, g_v * w[terms])
            d_hidden = d_h.view(b, length, e).to(hidden.dtype)
        if need_w:
            src = h[rows, best]
            tied = (w == 0).all(dim=1)[terms]
            if bool(tied.any()):                                     # every token ties: torch.amax's mean
                real_f = real.float().unsqueeze(-1)
                mean_h = (h * real_f).sum(1) / real_f.sum(1)
                src[tied] = mean_h[rows[tied]]
            d_w = torch.zeros_like(w)
            d_w.index_add_(0, terms, g_v * src)
            d_weight = d_w.to(weight.dtype)
        if need_b and ctx.has_bias:
            d_bias = g.sum(0).to(ctx.bias_dtype)
        return d_hidden, None, d_weight, d_bias, None
