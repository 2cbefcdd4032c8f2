"""SPLADE encoder: one masked LM + tokenizer + max length -> sparse vocabulary-sized vectors.

SPLADE max pooling (Formal et al., "SPLADE v2", arXiv:2109.10086, eq. 1 with max instead of sum):

    w_j = max_{t real token} log(1 + ReLU(z_tj)),   z = MLM logits (positions x vocabulary).

Design notes: docs/design.md."""

from __future__ import annotations

import os
import threading
import types
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.models.head_init import HeadInitReport
from lsr_eval.models.kernels import splade_weights
from lsr_eval.models.loading import load_mlm
from lsr_eval.models.options import (
    BATCH_SIZE,
    DEFAULT_PRECISION,
    MAX_LENGTH,
    HeadInitRule,
    IdentityHead,
    TiedInput,
)
from lsr_eval.models.precision import Precision, resolve_precision
from lsr_eval.models.rescale import rescale_head
from lsr_eval.models.sparsify import SPARSIFY, Sparsify
from lsr_eval.models.terms import VocabularyTerms
from lsr_eval.settings import check

#: tokenizer.model_max_length above this means "no limit recorded" (transformers uses int(1e30)).
_UNSET_MODEL_MAX_LENGTH = 1_000_000
#: per thread: True while a forward pass wants the decoder's input (head features) instead of its logits.
_FEATURES = threading.local()


class _SwitchableForward:
    """A decoder's forward with the :func:`head_features` switch: returns its input while the switch is on, else
    runs the decoder's own forward. An object, not a closure, so deep copies and pickles call their own module."""

    def __init__(self, module: nn.Module, base) -> None:
        self.module = module
        self.base = base          # the class's forward (a function), or an earlier per-instance override's

    def __call__(self, x):
        return x if getattr(_FEATURES, "on", False) else self.base(self.module, x)


def _install_feature_switch(decoder: nn.Module) -> None:
    """Let :func:`head_features` make ``decoder`` return its input (idempotent; parameters unchanged)."""
    own = decoder.__dict__.get("forward")
    if isinstance(own, _SwitchableForward):
        return
    base = own.__func__ if isinstance(own, types.MethodType) else type(decoder).forward
    decoder.forward = _SwitchableForward(decoder, base)


def chunkable_decoder(mlm: nn.Module) -> nn.Linear | None:
    """The decoder when it is a plain ``nn.Linear`` (its forward is ``x @ W.T + b``), else None."""
    decoder = mlm.get_output_embeddings()
    return decoder if type(decoder) is nn.Linear else None


def head_features(mlm: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  net: nn.Module | None = None) -> torch.Tensor:
    """B x L x E inputs of the decoder: the whole model (backbone, head transform, any bypasses) but the last
    projection. The decoder must be :func:`chunkable_decoder`. ``net``: what to call instead of ``mlm`` (a DDP
    wrapper of it)."""
    decoder = mlm.get_output_embeddings()
    _install_feature_switch(decoder)
    _FEATURES.on = True
    try:
        out = (net or mlm)(input_ids=input_ids, attention_mask=attention_mask).logits
    finally:
        _FEATURES.on = False
    if out.shape[-1] != decoder.in_features:
        raise ConfigError(f"{type(mlm).__name__}: the MLM output without its decoder has {out.shape[-1]} dims, "
                          f"expected the decoder's {decoder.in_features}; pass chunked=False")
    return out


def splade_pool(logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``max_t log(1 + ReLU(logits[:, t]))`` over positions with ``attention_mask == 1``: B x L x V -> B x V."""
    pad = ~attention_mask.bool().unsqueeze(-1)
    z = logits.masked_fill(pad, torch.finfo(logits.dtype).min).amax(dim=1)
    return torch.log1p(torch.relu(z.float()))


@dataclass
class Encoded:
    """Vectors of a list of texts, in input order, with what the tokenizer did to each text."""

    weights: Any                       # N x V float32 torch.Tensor, or scipy.sparse.csr_matrix when sparse=True
    n_tokens: np.ndarray               # tokens fed to the model per text (special tokens included)
    truncated: np.ndarray              # bool: the text was cut at max_length

    @property
    def n_truncated(self) -> int:
        return int(self.truncated.sum())


class SpladeEncoder(VocabularyTerms, nn.Module):
    """Wraps one ``*ForMaskedLM`` (``self.mlm``), its tokenizer and a max length (in tokens, specials included).

    ``forward`` is differentiable (training); ``encode`` is batched inference with sparsification.
    """

    def __init__(self, mlm: nn.Module, tokenizer, max_length: int, *, sparsify: Sparsify = Sparsify(),
                 bf16: bool = False, head_init: HeadInitReport | None = None, precision: str = DEFAULT_PRECISION,
                 chunked: bool = True) -> None:
        super().__init__()
        self.mlm = mlm
        self.tokenizer = tokenizer
        self.max_length = _check_max_length(max_length, tokenizer, mlm)
        check("sparsify", sparsify, Sparsify, SPARSIFY)
        self.sparsify = sparsify
        self.precision = resolve_precision("bf16" if bf16 else precision).requested  # validated; bf16: alias
        self.chunked = bool(chunked)
        self.head_init = head_init
        self._terms: list[str] | None = None
        self.train(mlm.training)  # a new nn.Module is in training mode; follow the backbone (eval when loaded)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, max_length: int, *, head_init: HeadInitRule = "auto",
                        identity: IdentityHead = IdentityHead(), rescale_k: float | None = None,
                        scale_bias: bool = False, tied_input: TiedInput = "divided",
                        sparsify: Sparsify = Sparsify(), bf16: bool = False, precision: str = DEFAULT_PRECISION,
                        trust_remote_code: bool = False) -> SpladeEncoder:
        """Load ``path`` (folder or hub id) with :func:`~lsr_eval.models.loading.load_mlm`, then divide the
        head by ``rescale_k`` if given (:func:`~lsr_eval.models.rescale.rescale_head`)."""
        mlm, tokenizer, report = load_mlm(path, head_init=head_init, identity=identity,
                                          trust_remote_code=trust_remote_code)
        if rescale_k is not None:
            rescale_head(mlm, rescale_k, scale_bias=scale_bias, tied_input=tied_input)
        return cls(mlm, tokenizer, max_length, sparsify=sparsify, bf16=bf16, precision=precision, head_init=report)

    # -- properties -------------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self.mlm.get_output_embeddings().weight.shape[0])

    @property
    def device(self) -> torch.device:
        return next(self.mlm.parameters()).device

    @property
    def bf16(self) -> bool:
        """Whether :meth:`encode` runs under bf16 autocast on the current device."""
        return self.resolved_precision().bf16

    def resolved_precision(self, requested: str | None = None) -> Precision:
        """``requested`` (default: the encoder's precision) resolved for the device the model is on."""
        return resolve_precision(self.precision if requested is None else requested, self.device)

    def runtime(self) -> dict[str, Any]:
        """Where and how this encoder runs, as manifests record it beside its figures: the device and the resolved
        precision."""
        return {"device": str(self.device), "precision": self.resolved_precision().to_dict()}

    def in_precision(self, precision: str) -> SpladeEncoder:
        """An encoder that shares this one's model (weights, tokenizer, max length, sparsification) and runs in
        ``precision``: the same function, another forward-pass dtype."""
        return SpladeEncoder(self.mlm, self.tokenizer, self.max_length, sparsify=self.sparsify,
                             head_init=self.head_init, precision=precision, chunked=self.chunked)

    # -- model ------------------------------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str]):
        """Padded, truncated ``BatchEncoding`` (PyTorch tensors) of ``texts``."""
        return self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                              return_tensors="pt")

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """B x V float32 SPLADE weights (no sparsification, special tokens included)."""
        decoder = chunkable_decoder(self.mlm) if self.chunked else None
        if decoder is not None:
            hidden = head_features(self.mlm, input_ids, attention_mask)
            return splade_weights(hidden, attention_mask, decoder.weight, decoder.bias)
        logits = self.mlm(input_ids=input_ids, attention_mask=attention_mask).logits
        return splade_pool(logits, attention_mask)

    @torch.inference_mode()
    def encode(self, texts: Sequence[str], batch_size: int = 32, *, bf16: bool | None = None,
               sparse: bool = False, sparsify: Sparsify | None = None, precision: str | None = None) -> Encoded:
        """Vectors of ``texts`` in input order, sparsified with ``sparsify`` (default: the encoder's).

        Texts are batched by length (less padding; padding never changes a vector). The model runs in eval
        mode and is put back in its previous mode afterwards. ``precision`` (auto, fp32, bf16; default the
        encoder's) selects the forward pass's dtype; ``bf16=True``/``False`` is short for bf16/fp32.
        """
        check("batch_size", batch_size, int, BATCH_SIZE)
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(f"text {i}: expected a string, got {type(t).__name__}")
        rule = self.sparsify if sparsify is None else sparsify
        if bf16 is not None:
            precision = "bf16" if bf16 else "fp32"
        use_bf16 = self.resolved_precision(precision).bf16
        if len(texts) == 1:
            single = self._encode_single(texts[0], rule, use_bf16, sparse)
            if single is not None:
                return single
        order = np.argsort([len(t) for t in texts], kind="stable")
        n_tokens = np.zeros(len(texts), dtype=np.int64)
        truncated = np.zeros(len(texts), dtype=bool)
        parts = []
        was_training = self.training
        self.eval()
        device = self.device
        autocast = torch.autocast(device.type, dtype=torch.bfloat16) if use_bf16 else nullcontext()
        try:
            for start in range(0, len(texts), batch_size):
                idx = order[start:start + batch_size]
                batch = self.tokenize([texts[i] for i in idx])
                n_tokens[idx] = batch["attention_mask"].sum(1).numpy()
                truncated[idx] = self._truncated(batch, [texts[i] for i in idx])
                with autocast:
                    w = self(batch["input_ids"].to(device), batch["attention_mask"].to(device))
                w = rule.apply(w.float().cpu(), self.special_ids)
                parts.append(_to_csr(w) if sparse else w)
        finally:
            self.train(was_training)
        inverse = np.argsort(order, kind="stable")
        if sparse:
            import scipy.sparse as sp

            weights = (sp.vstack(parts).tocsr()[inverse] if parts
                       else sp.csr_matrix((0, self.vocab_size), dtype=np.float32))
        else:
            weights = torch.cat(parts)[torch.from_numpy(inverse)] if parts else torch.zeros(0, self.vocab_size)
        return Encoded(weights, n_tokens, truncated)

    @torch.inference_mode()
    def _encode_single(self, text: str, rule: Sparsify, use_bf16: bool, sparse: bool) -> Encoded | None:
        """One text on the lean path (a query): the fast tokenizer's backend without padding, the chunked head,
        sparsification on the pooled vector only. Same vector as the batched path; None when it does not apply
        (slow tokenizer, a text longer than the max length, a decoder that is not a plain linear layer)."""
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        decoder = chunkable_decoder(self.mlm) if self.chunked else None
        if backend is None or decoder is None:
            return None
        encoding = backend.encode(text)
        ids = encoding.ids
        if len(ids) > self.max_length or encoding.overflowing:
            return None
        was_training = self.training
        if was_training:
            self.eval()
        device = self.device
        try:
            input_ids = torch.tensor([ids], device=device)
            mask = torch.ones_like(input_ids)
            with torch.autocast(device.type, dtype=torch.bfloat16) if use_bf16 else nullcontext():
                hidden = head_features(self.mlm, input_ids, mask)
                w = splade_weights(hidden, mask, decoder.weight, decoder.bias)[0].cpu()
        finally:
            if was_training:
                self.train()
        w = rule.apply(w.unsqueeze(0), self.special_ids)[0]
        n_tokens, truncated = np.array([len(ids)], np.int64), np.zeros(1, bool)
        if not sparse:
            return Encoded(w.unsqueeze(0), n_tokens, truncated)
        import scipy.sparse as sp

        index = torch.nonzero(w).flatten()
        data = w[index].numpy()
        row = sp.csr_matrix((data, index.numpy().astype(np.int32), np.array([0, len(data)])),
                            shape=(1, self.vocab_size), dtype=np.float32)
        return Encoded(row, n_tokens, truncated)

    def _truncated(self, batch, texts: list[str]) -> np.ndarray:
        """Per text: was it cut? Fast tokenizers keep the cut-off part in ``Encoding.overflowing``."""
        encodings = getattr(batch, "encodings", None)
        if encodings is not None:
            return np.array([bool(e.overflowing) for e in encodings], dtype=bool)
        full = self.tokenizer(texts, truncation=False)["input_ids"]
        return np.array([len(ids) > self.max_length for ids in full], dtype=bool)

    def save_pretrained(self, folder: str | os.PathLike) -> None:
        """Model + tokenizer, loadable with ``AutoModelForMaskedLM`` / ``AutoTokenizer``."""
        self.mlm.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    def describe(self) -> dict:
        """What a manifest / splade_config.json records about this encoder."""
        record = getattr(self.mlm.config, "lsr_eval", None) or {}
        return {
            "model_type": self.mlm.config.model_type,
            "architecture": type(self.mlm).__name__,
            "vocab_size": self.vocab_size,
            "max_length": self.max_length,
            "sparsify": self.sparsify.to_dict(),
            "head_init": record.get("head_init"),
            "head_rescale_k": float(record.get("head_rescale_k", 1.0)),
            "head_rescale": record.get("head_rescale", []),
            "precision": self.resolved_precision().name,
        }


def _check_max_length(max_length, tokenizer, mlm) -> int:
    check("max_length", max_length, int, MAX_LENGTH)
    limits = [getattr(mlm.config, "max_position_embeddings", None)]
    if getattr(tokenizer, "model_max_length", None) and tokenizer.model_max_length < _UNSET_MODEL_MAX_LENGTH:
        limits.append(tokenizer.model_max_length)
    limit = min((x for x in limits if x), default=None)
    if limit is not None and max_length > limit:
        raise ConfigError(f"max_length={max_length}: the model accepts at most {limit} tokens")
    return max_length


def _to_csr(w: torch.Tensor):
    import scipy.sparse as sp

    return sp.csr_matrix(w.numpy())
