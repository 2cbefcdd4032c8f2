"""The model a training recipe starts from: checkpoints loaded, MLM heads rescaled at initialisation, and an
optional distinct (possibly small, built-from-config) query encoder.

Design notes: docs/design.md."""

from __future__ import annotations

import logging
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from torch import nn

from lsr_eval.errors import ConfigError
from lsr_eval.models.diagnostics import identity_warning, measure_suggested_k
from lsr_eval.models.encoder import SpladeEncoder
from lsr_eval.models.loading import load_mlm
from lsr_eval.models.offline import resolve_model
from lsr_eval.models.rescale import rescale_head
from lsr_eval.models.splade import SpladeModel, check_same_vocabulary
from lsr_eval.models.static_query import BINARY, IDF, StaticQueryEncoder, is_static_model, static_location
from lsr_eval.train.config import BuildConfig, MiddleModelConfig, ModelConfig

log = logging.getLogger(__name__)


@dataclass
class InitReport:
    """What was done to one encoder's head at initialisation (for the manifest)."""

    source: str
    head_init: dict
    rescale_k: float                      # 1.0 when not rescaled
    rescale_rule: str                     # "none", "config" or "suggested"
    head_norm_before: float
    head_norm_after: float
    suggest_stats: dict | None = None     # for "suggested": the diagnostics at k=1 and at the k chosen
    extra: dict[str, Any] = field(default_factory=dict)


def head_norm(mlm: nn.Module) -> float:
    """Frobenius norm of the MLM decoder (output embedding) weight."""
    return float(mlm.get_output_embeddings().weight.detach().float().norm())


def _finite(stats: dict) -> dict:
    """``stats`` with NaN (a statistic not measured) as None: manifests are strict JSON."""
    return {key: None if isinstance(v, float) and math.isnan(v) else v for key, v in stats.items()}


def rescale_at_init(mlm: nn.Module, tokenizer, k, *, scale_bias: bool, max_length: int,
                    tied_input: str = "divided") -> tuple[float, str, dict | None]:
    """Divide the head of ``mlm`` by ``k`` (number, ``suggested`` or None); returns (k, rule, the suggestion's
    statistics or None)."""
    if k is None:
        return 1.0, "none", None
    measured = None
    rule = "config"
    if k == "suggested":
        was_training = mlm.training
        chosen, rows = measure_suggested_k(mlm, tokenizer, max_length=max_length, scale_bias=scale_bias,
                                           tied_input=tied_input)
        mlm.train(was_training)
        k = float(chosen)
        pick = {r.k: r for r in rows}
        measured = {"at_k1": _finite(asdict(pick[1.0])), "at_suggested": _finite(asdict(pick[k]))}
        rule = "suggested"
        log.info("suggested k = %g (at k=1: mean max logit %.2f, cross-text score %.1f; at k=%g: %.2f, %.1f)", k,
                 pick[1.0].mean_max_logit, pick[1.0].mean_score, k, pick[k].mean_max_logit, pick[k].mean_score)
        warning = identity_warning(rows, k)
        if warning:
            measured["warning"] = warning
            log.warning("suggested k: %s", warning)
    if k != 1.0 or rule == "config":
        rescale_head(mlm, float(k), scale_bias=scale_bias, tied_input=tied_input)
    return float(k), rule, measured


def _load(path: str, max_length: int, head_init: str, k, scale_bias: bool, tied_input: str, bf16: bool,
          trust_remote_code: bool = False):
    source = resolve_model(path)
    enc = SpladeEncoder.from_pretrained(source, max_length, head_init=head_init, bf16=bf16,
                                        trust_remote_code=trust_remote_code)
    before = head_norm(enc.mlm)
    applied, rule, measured = rescale_at_init(enc.mlm, enc.tokenizer, k, scale_bias=scale_bias,
                                              max_length=min(max_length, 256), tied_input=tied_input)
    report = InitReport(source, enc.head_init.to_dict() if enc.head_init else {}, applied, rule, before,
                        head_norm(enc.mlm), measured)
    return enc, report


def build_query_mlm(cfg: BuildConfig, tokenizer, vocab_size: int) -> nn.Module:
    """A randomly initialised ``BertForMaskedLM`` of ``cfg``'s size on ``vocab_size`` terms (tied head)."""
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(vocab_size=vocab_size, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
                        num_attention_heads=cfg.heads, intermediate_size=cfg.intermediate,
                        max_position_embeddings=cfg.max_positions, pad_token_id=tokenizer.pad_token_id or 0,
                        tie_word_embeddings=True)
    return BertForMaskedLM(config)


def build_model(cfg: ModelConfig, *, bf16: bool = False, idf_corpus=None):
    """``(SpladeModel, {"document": InitReport, "query": InitReport})``. Seed torch first: built encoders and
    transformers' random heads draw from its generator. ``idf_corpus``: the dataset ``model.query.path: idf``
    counts its IDF on."""
    document, d_rep = _load(cfg.path, cfg.max_length_d, cfg.head_init, cfg.rescale_k, cfg.scale_bias,
                            cfg.tied_input, bf16,
                            cfg.trust_remote_code)
    reports = {"document": d_rep}
    q = cfg.query
    if q is None:
        query = SpladeEncoder(document.mlm, document.tokenizer, cfg.max_length_q, bf16=bf16,
                              head_init=document.head_init)
        reports["query"] = d_rep
    elif q.path is not None and (q.path in (IDF, BINARY) or is_static_model(q.path)):
        if q.path == BINARY:   # the efficiency paper's VI-doc: documents trained, queries a bag of tokens
            query = StaticQueryEncoder.binary(document, max_length=cfg.max_length_q)
        elif q.path == IDF:
            if idf_corpus is None:
                raise ConfigError("model.query.path=idf needs the training corpus (data.dataset)")
            query = StaticQueryEncoder.from_idf(idf_corpus, document, max_length=cfg.max_length_q)
        else:
            query = StaticQueryEncoder.from_pretrained(static_location(q.path), cfg.max_length_q)
        check_same_vocabulary(query, document, f"model.query.path={q.path}")
        reports["query"] = InitReport(q.path, {}, 1.0, "none", 0.0, 0.0, None,
                                      {"static": query.describe(), "trainable": False})
    elif q.path is not None:
        query, q_rep = _load(q.path, cfg.max_length_q, q.head_init, q.rescale_k, cfg.scale_bias, cfg.tied_input,
                             bf16, cfg.trust_remote_code)
        if query.tokenizer.get_vocab() != document.tokenizer.get_vocab() or query.vocab_size != document.vocab_size:
            raise ConfigError(f"model.query.path={q.path}: its vocabulary ({query.vocab_size} rows) differs from the "
                              f"document encoder's ({cfg.path}, {document.vocab_size} rows); SPLADE query and "
                              f"document vectors must share one vocabulary")
        reports["query"] = q_rep
    else:
        mlm = build_query_mlm(q.build, document.tokenizer, document.vocab_size)
        before = head_norm(mlm)
        applied, rule, measured = rescale_at_init(mlm, document.tokenizer, q.rescale_k, scale_bias=cfg.scale_bias,
                                                  max_length=min(cfg.max_length_q, q.build.max_positions),
                                                  tied_input=cfg.tied_input)
        query = SpladeEncoder(mlm, document.tokenizer, cfg.max_length_q, bf16=bf16)
        reports["query"] = InitReport("built", {}, applied, rule, before, head_norm(mlm), measured,
                                      {"build": vars(q.build)})
    return SpladeModel(query, document), reports


def build_mlm(cfg: MiddleModelConfig):
    """``(mlm, tokenizer, InitReport)`` for middle training."""
    source = resolve_model(cfg.path)
    mlm, tokenizer, init = load_mlm(os.fspath(source), head_init=cfg.head_init,
                                    trust_remote_code=cfg.trust_remote_code)
    before = head_norm(mlm)
    applied, rule, measured = rescale_at_init(mlm, tokenizer, cfg.rescale_k, scale_bias=cfg.scale_bias,
                                              max_length=min(cfg.max_length, 256), tied_input=cfg.tied_input)
    return mlm, tokenizer, InitReport(source, init.to_dict(), applied, rule, before, head_norm(mlm), measured)
