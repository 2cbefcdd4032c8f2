"""MLM-head diagnostics: head norms and initial SPLADE activation statistics per rescaling factor k, and a
suggested k.

Per k: head norms, the mean max logit, active terms, expected FLOPs (Paria et al., ICLR 2020), the cross-text
score and the input token cosine. :func:`suggest_k` picks the smallest power of two k whose logits and first
in-batch scores are in a healthy range; :func:`identity_warning` flags one whose input no longer tells texts apart.

Design notes: docs/design.md."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import torch

from lsr_eval.errors import ConfigError, InputError
from lsr_eval.manifest import write_manifest
from lsr_eval.models.heads import head_parts, tied
from lsr_eval.models.loading import load_mlm
from lsr_eval.models.options import RESCALE_K, TIED_INPUT_CHOICES, TiedInput, check_choice
from lsr_eval.models.rescale import input_scale, set_input_scale
from lsr_eval.settings import check

#: Upper edge of the mean max logit of a pretrained BERT MLM head on ordinary text (docs/models.md).
HEALTHY_MAX_LOGIT = 24.0
#: Upper edge of the mean SPLADE score between two different sample texts at initialisation (docs/models.md).
HEALTHY_MEAN_SCORE = 300.0
#: Above this same-position input cosine between different texts, the encoder input has lost token identity.
MAX_INPUT_TOKEN_COSINE = 0.5
#: The factors the rule measures (powers of two keep the division exact); the largest is suggested when none passes.
SUGGEST_KS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
DEFAULT_KS = (1, 2, 4, 8, 16)
DEFAULT_MAX_LENGTH = 256
BATCH_SIZE = 16

#: Built-in sample (general and biomedical English), used when no text file is given.
SAMPLE_TEXTS = (
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Aspirin reduces the risk of heart attack in adults with cardiovascular disease.",
    "The European Central Bank raised interest rates to curb inflation in the euro area.",
    "Mutations in the BRCA1 gene raise the lifetime risk of breast and ovarian cancer.",
    "She finished the marathon in under four hours despite the heat and a sore knee.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "What are the side effects of long-term use of proton pump inhibitors?",
    "The committee approved the new budget after a long debate on Tuesday evening.",
    "Vitamin D deficiency is associated with bone loss and fractures in older women.",
    "How does a search engine build an inverted index from a collection of documents?",
)


@dataclass(frozen=True, slots=True)
class KStats:
    """Head and activation statistics at one rescaling factor (definitions in docs/design.md)."""

    k: float
    frobenius: float
    mean_row_norm: float
    mean_max_logit: float
    mean_active: float
    active_fraction: float
    expected_flops: float
    mean_score: float  #: the cross-text score (between different texts)
    input_token_cosine: float = math.nan  #: NaN where not measured (no embedding module found, older diagnoses)


@dataclass
class HeadDiagnosis:
    """What ``lsr-eval inspect-head`` reports."""

    model: str
    family: str
    architecture: str
    vocab_size: int
    tied: bool
    head_init: dict
    rescale_k_applied: float
    n_texts: int
    n_tokens: int
    max_length: int
    rows: list[KStats]
    baseline_max_logit: float
    baseline_mean_score: float
    suggested_k: int
    rule: str = field(default=f"smallest power of two k in [1, 64] with mean max logit <= {HEALTHY_MAX_LOGIT:g} "
                              f"and mean score <= {HEALTHY_MEAN_SCORE:g}")
    warning: str = ""   #: :func:`identity_warning` of the suggested k ("" when none)

    def to_dict(self) -> dict:
        return asdict(self)


def suggest_k(rows: Sequence[KStats], *, max_logit: float = HEALTHY_MAX_LOGIT,
              max_score: float = HEALTHY_MEAN_SCORE) -> int:
    """Smallest ``k`` among ``rows`` with ``mean_max_logit <= max_logit`` and ``mean_score <= max_score``; the
    largest k measured when none passes. ``rows``: :func:`activation_stats` at :data:`SUGGEST_KS`."""
    if not rows:
        raise ConfigError("suggest_k needs the statistics of at least one k")
    for r in rows:
        if not (math.isfinite(r.mean_max_logit) and math.isfinite(r.mean_score)):
            raise ConfigError(f"k={r.k:g}: mean max logit {r.mean_max_logit!r} / mean score {r.mean_score!r}: "
                              f"expected finite numbers")
    ordered = sorted(rows, key=lambda r: r.k)
    for r in ordered:
        if r.mean_max_logit <= max_logit and r.mean_score <= max_score:
            return int(r.k)
    return int(ordered[-1].k)


def measure_suggested_k(model, tokenizer, texts: Sequence[str] = SAMPLE_TEXTS, *, max_length: int,
                        scale_bias: bool = False, tied_input: TiedInput = "divided") -> tuple[int, list[KStats]]:
    """:func:`suggest_k` of ``model``'s head on ``texts``, with the statistics at :data:`SUGGEST_KS`."""
    rows, _ = activation_stats(model, tokenizer, list(texts), SUGGEST_KS, max_length=max_length,
                               scale_bias=scale_bias, tied_input=tied_input)
    return suggest_k(rows), rows


@torch.inference_mode()
def activation_stats(model, tokenizer, texts: Sequence[str], ks: Sequence[float], *, max_length: int,
                     scale_bias: bool = False, tied_input: TiedInput = "divided",
                     batch_size: int = BATCH_SIZE) -> tuple[list[KStats], int]:
    """:class:`KStats` per k for ``model`` (a ``*ForMaskedLM``) on ``texts``, and the number of real tokens.

    The decoder weight (and bias with ``scale_bias``) is divided in place for each k and restored afterwards; a
    tied head with ``tied_input="compensated"`` gets its embedding lookup multiplied by k meanwhile, as
    :func:`~lsr_eval.models.rescale.rescale_head` would.
    """
    check_choice("tied_input", tied_input, TIED_INPUT_CHOICES)
    if not texts:
        raise ConfigError("activation statistics need at least one text")
    for k in ks:
        check("k", k, float, RESCALE_K)
    parts = head_parts(model)
    weight, bias = parts.decoder.weight, getattr(parts.decoder, "bias", None)
    w0 = weight.detach().clone()
    b0 = bias.detach().clone() if bias is not None else None
    vocab = weight.shape[0]
    keep = torch.ones(vocab, dtype=torch.bool)
    keep[[i for i in tokenizer.all_special_ids if i < vocab]] = False
    n_terms = int(keep.sum())
    if n_terms == 0:  # every row is a special token: there is no term to activate
        raise InputError(f"the MLM head has {vocab} vocabulary rows and all are special tokens of the tokenizer "
                         f"({', '.join(tokenizer.all_special_tokens)}): no term to measure activations on")
    batches = [tokenizer(list(texts[i:i + batch_size]), padding=True, truncation=True, max_length=max_length,
                         return_tensors="pt") for i in range(0, len(texts), batch_size)]
    n_tokens = int(sum(int(b["attention_mask"].sum()) for b in batches))
    device = weight.device
    scale0 = input_scale(model)
    compensate = tied_input == "compensated" and tied(model)
    special = torch.tensor(sorted(tokenizer.all_special_ids), dtype=torch.long)
    embeddings = getattr(getattr(model, "base_model", None), "embeddings", None)
    seen: list[torch.Tensor] = []
    hook = (embeddings.register_forward_hook(lambda _m, _i, out: seen.append(out[0] if isinstance(out, tuple)
                                                                                else out))
            if isinstance(embeddings, torch.nn.Module) else None)
    model.eval()
    rows = []
    try:
        for k in ks:
            weight.copy_(w0 / k)
            if compensate:
                set_input_scale(model, scale0 * k)
            if b0 is not None:
                bias.copy_(b0 / k if scale_bias else b0)
            max_logits, active, vectors, inputs, real = [], [], [], [], []
            counts = torch.zeros(n_terms, dtype=torch.float64)
            for b in batches:
                mask = b["attention_mask"].to(device)
                seen.clear()
                logits = model(input_ids=b["input_ids"].to(device), attention_mask=mask).logits.float().cpu()
                if seen:
                    inputs += list(seen[0].float().cpu())
                    real += list(b["attention_mask"].bool() & ~torch.isin(b["input_ids"], special))
                pooled = logits.masked_fill(~mask.cpu().bool().unsqueeze(-1), float("-inf")).amax(1)[:, keep]
                max_logits.append(pooled.amax(1))
                on = pooled > 0
                active.append(on.sum(1).double())
                counts += on.sum(0).double()
                vectors.append(torch.log1p(torch.relu(pooled)).double())
            p = counts / len(texts)
            mean_active = float(torch.cat(active).mean())
            rows.append(KStats(float(k), float(w0.float().norm()) / k, float(w0.float().norm(dim=1).mean()) / k,
                               float(torch.cat(max_logits).mean()), mean_active, mean_active / n_terms,
                               float((p ** 2).sum()), _mean_cross_text_score(torch.cat(vectors)),
                               input_token_cosine(inputs, real) if inputs else math.nan))
    finally:
        if hook is not None:
            hook.remove()
        weight.copy_(w0)
        if compensate:
            set_input_scale(model, scale0)
        if b0 is not None:
            bias.copy_(b0)
    return rows, n_tokens


def _mean_cross_text_score(w: torch.Tensor) -> float:
    """Mean of w_a . w_b over ordered pairs of distinct rows, i.e. between different texts (0.0 for a single
    row)."""
    n = w.shape[0]
    if n < 2:
        return 0.0
    total = w.sum(0)
    return float(((total @ total) - (w * w).sum()) / (n * (n - 1)))


def input_token_cosine(inputs: Sequence[torch.Tensor], real: Sequence[torch.Tensor]) -> float:
    """Mean over pairs of different texts a != b and positions t real in both (``real[a][t]``) of the cosine of
    their input vectors ``inputs[a][t]`` (L x H each, padded); NaN when no pair shares a real position."""
    total, count = 0.0, 0
    for a in range(len(inputs)):
        for b in range(a + 1, len(inputs)):
            n = min(len(inputs[a]), len(inputs[b]))
            both = real[a][:n] & real[b][:n]
            if both.any():
                cos = torch.nn.functional.cosine_similarity(inputs[a][:n][both].double(),
                                                            inputs[b][:n][both].double(), dim=-1)
                total += float(cos.sum())
                count += int(both.sum())
    return total / count if count else math.nan


def identity_warning(rows: Sequence[KStats], k: float, max_cosine: float = MAX_INPUT_TOKEN_COSINE) -> str:
    """A warning when, at ``k``, the encoder input no longer tells texts apart (``input_token_cosine`` above
    ``max_cosine``, or above that of k = 1 when k = 1 already exceeds it); "" otherwise or when not measured."""
    by_k = {r.k: getattr(r, "input_token_cosine", math.nan) for r in rows}
    at_k, at_1 = by_k.get(float(k), math.nan), by_k.get(1.0, math.nan)
    if math.isnan(at_k) or at_k <= max_cosine or (not math.isnan(at_1) and at_k <= at_1):
        return ""
    return (f"at k={k:g} the encoder input no longer tells texts apart: same-position input cosine between "
            f"different texts {at_k:.3f} (k=1: {at_1:.3f}; limit {max_cosine:g}); the rule bounds magnitudes only, "
            f"so this k may collapse training: prefer tied_input=compensated or a smaller k")


def inspect_head(model: str | os.PathLike, ks: Sequence[float] = DEFAULT_KS, texts: Sequence[str] | None = None,
                 *, head_init: str = "auto", max_length: int = DEFAULT_MAX_LENGTH,
                 scale_bias: bool = False, tied_input: TiedInput = "divided",
                 trust_remote_code: bool = False) -> HeadDiagnosis:
    """Load ``model`` (folder or hub id) as :func:`~lsr_eval.models.loading.load_mlm` does and diagnose its head
    on ``texts`` (default :data:`SAMPLE_TEXTS`)."""
    mlm, tokenizer, report = load_mlm(model, head_init=head_init, trust_remote_code=trust_remote_code)
    texts = list(SAMPLE_TEXTS if texts is None else texts)
    all_ks = sorted({*SUGGEST_KS, *map(float, ks)})
    rows, n_tokens = activation_stats(mlm, tokenizer, texts, all_ks, max_length=max_length, scale_bias=scale_bias,
                                      tied_input=tied_input)
    wanted = {float(k) for k in ks}
    at_1 = next(r for r in rows if r.k == 1.0)   # SUGGEST_KS holds 1; asked-for k < 1 sort before it
    record = getattr(mlm.config, "lsr_eval", None) or {}
    chosen = suggest_k([r for r in rows if r.k in SUGGEST_KS])
    return HeadDiagnosis(
        model=os.fspath(model), family=head_parts(mlm).family, architecture=type(mlm).__name__,
        vocab_size=int(mlm.get_output_embeddings().weight.shape[0]), tied=tied(mlm), head_init=report.to_dict(),
        rescale_k_applied=float(record.get("head_rescale_k", 1.0)), n_texts=len(texts), n_tokens=n_tokens,
        max_length=max_length, rows=[r for r in rows if r.k in wanted],
        baseline_max_logit=at_1.mean_max_logit, baseline_mean_score=at_1.mean_score,
        suggested_k=chosen, warning=identity_warning(rows, chosen))


def format_diagnosis(d: HeadDiagnosis) -> str:
    """Human-readable report."""
    init = d.head_init
    if init["applied"] == "loaded":
        head = "loaded from the checkpoint"
    elif init["applied"] in ("identity", "reapplied"):
        ident = init.get("identity") or {}
        head = (f"identity head ({'initialised now' if init['applied'] == 'identity' else 'saved by lsr-eval'}; "
                f"activation {ident.get('activation')}, LayerNorm {ident.get('norm')})")
    else:
        head = "random (transformers' initialisation)"
    if init.get("missing"):
        head += f"; missing from the checkpoint: {', '.join(init['missing'])}"
    lines = [
        f"model:   {d.model}",
        f"family:  {d.family} ({d.architecture}), vocabulary {d.vocab_size}, decoder tied to input embeddings: "
        f"{'yes' if d.tied else 'no'}",
        f"head:    {head} (rule head_init={init['rule']})",
    ]
    if d.rescale_k_applied != 1.0:
        lines.append(f"already rescaled: k={d.rescale_k_applied:g}")
    lines += [f"sample:  {d.n_texts} texts, {d.n_tokens} tokens (max_length {d.max_length})", "",
              f"{'k':>5} {'||W||_F':>10} {'mean||W_j||':>12} {'mean max logit':>15} {'active/text':>12} "
              f"{'active %':>9} {'E[FLOPs]':>10} {'cross-text score':>16} {'input cos':>9}"]
    for r in d.rows:
        lines.append(f"{r.k:>5g} {r.frobenius:>10.2f} {r.mean_row_norm:>12.4f} {r.mean_max_logit:>15.2f} "
                     f"{r.mean_active:>12.1f} {100 * r.active_fraction:>9.2f} {r.expected_flops:>10.1f} "
                     f"{r.mean_score:>16.1f} {r.input_token_cosine:>9.3f}")
    lines += ["", f"suggested k: {d.suggested_k}  ({d.rule}; at k=1: mean max logit {d.baseline_max_logit:.2f}, "
                  f"cross-text score {d.baseline_mean_score:.1f})",
              "cross-text score: mean SPLADE score between different sample texts; input cos: mean cosine of "
              "same-position encoder inputs (after the embedding LayerNorm) between different texts",
              f"limit: the rule bounds magnitudes only; a k whose input cos exceeds {MAX_INPUT_TOKEN_COSINE:g} is "
              f"flagged (the encoder no longer tells texts apart)"]
    if d.warning:
        lines.append(f"WARNING: {d.warning}")
    return "\n".join(lines)


def save_diagnosis(d: HeadDiagnosis, out: str | os.PathLike, experiment: dict) -> Path:
    """``diagnosis.txt`` (:func:`format_diagnosis`), ``diagnosis.json`` and a manifest recording ``experiment`` (the
    inspection's settings) in ``out``; returns the folder."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "diagnosis.txt").write_text(format_diagnosis(d) + "\n", encoding="utf-8")
    (folder / "diagnosis.json").write_text(json.dumps(d.to_dict(), indent=2) + "\n", encoding="utf-8")
    write_manifest(folder, "inspect-head", experiment, outputs=["diagnosis.txt", "diagnosis.json"])
    return folder
