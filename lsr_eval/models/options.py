"""Option types of the model layer and their validation (messages list the allowed values)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from lsr_eval.errors import ConfigError

#: What to do with the MLM head when the checkpoint has none (see :mod:`lsr_eval.models.head_init`).
#: ``auto``: identity head when head weights are missing, else the loaded head untouched; ``identity``: identity
#: head even over a trained one; ``random``: keep transformers' random initialisation; ``error``: refuse.
HeadInitRule = Literal["auto", "identity", "random", "error"]
HEAD_INIT_RULES: tuple[str, ...] = get_args(HeadInitRule)

#: How the identity head treats the transform's activation / LayerNorm: ``bypass`` skips the module,
#: ``keep`` leaves it in the forward pass (LayerNorm reset to weight 1, bias 0: it still normalises).
Bypass = Literal["bypass", "keep"]
BYPASS_CHOICES: tuple[str, ...] = get_args(Bypass)

#: What rescaling does to the input side of a tied head (:func:`lsr_eval.models.rescale.rescale_head`):
#: ``divided``: the shared matrix is divided, so the input word embeddings are divided too (the paper's recipe);
#: ``compensated``: the shared matrix is divided and the embedding lookup is multiplied back by k, so the encoder
#: sees the same inputs as before and only the logits shrink.
TiedInput = Literal["divided", "compensated"]
TIED_INPUT_CHOICES: tuple[str, ...] = get_args(TiedInput)


#: Forward-pass precisions (``auto`` resolves at run time: :mod:`lsr_eval.models.precision`); torch-free, so the CLI
#: and config validation read it without importing torch.
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "bf16")
#: The precision of every stage that produces a reported number, unless the user opts in to ``bf16`` or ``auto``
#: for speed: fp32, as Pyserini's encoders and Sentence-Transformers, so that a figure is the same on every machine
#: (``auto`` would pick bf16 on CUDA and on CPUs with avx512_bf16/AMX). The one owner of that default; manifests
#: record each stage's resolved precision.
DEFAULT_PRECISION = "fp32"
#: Devices a model runs on: ``auto`` (``cuda:LOCAL_RANK`` when CUDA is available, else the CPU), ``cpu``, ``cuda``,
#: ``cuda:N`` (:func:`lsr_eval.models.device.resolve_device`).
DEVICE_CHOICES = "auto, cpu, cuda, cuda:N"
DEFAULT_DEVICE = "auto"
_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")
#: Runtimes of the single-query encoder (:mod:`lsr_eval.models.onnx_query`): the torch model itself, or ONNX Runtime.
QUERY_RUNTIMES: tuple[str, ...] = ("torch", "onnx")


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``, else a ConfigError naming the option and listing the choices."""
    if value not in allowed:
        raise ConfigError(f"{name}={value!r}: expected one of {', '.join(allowed)}")
    return value


def check_device(value: Any, name: str = "device") -> str:
    """``value`` if it names a device (:data:`DEVICE_CHOICES`), else a ConfigError listing the forms."""
    if not isinstance(value, str) or not _DEVICE.fullmatch(value):
        raise ConfigError(f"{name}={value!r}: expected one of {DEVICE_CHOICES}")
    return value


def check_term_budget(owner: str, top_k: int | None, threshold: float) -> None:
    """A term budget: ``top_k`` an integer >= 1 or None, ``threshold`` a finite number >= 0 (errors name ``owner``)."""
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ConfigError(f"{owner} top_k={top_k!r}: expected an integer >= 1 or None")
    if (isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold)
            or threshold < 0):
        raise ConfigError(f"{owner} threshold={threshold!r}: expected a finite number >= 0")


@dataclass(frozen=True, slots=True)
class IdentityHead:
    """Shape of the identity head: dense = I, zero biases, decoder tied to the input embeddings.

    Defaults follow the measurement in docs/models.md (all-MiniLM-L6-v2 on SciFact): activation bypassed,
    LayerNorm kept (weight 1, bias 0), which ranks a text's own tokens highest.
    """

    activation: Bypass = "bypass"
    norm: Bypass = "keep"

    def __post_init__(self) -> None:
        check_choice("identity activation", self.activation, BYPASS_CHOICES)
        check_choice("identity norm", self.norm, BYPASS_CHOICES)

    def to_dict(self) -> dict[str, str]:
        return {"activation": self.activation, "norm": self.norm}
