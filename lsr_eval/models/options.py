"""Option types of the model layer and their validation (messages list the allowed values)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from lsr_eval.settings import Setting, SettingError, Validated, check, setting

#: What to do with the MLM head when the checkpoint has none (see :mod:`lsr_eval.models.head_init`).
#: ``auto``: identity head when head weights are missing, else the loaded head untouched; ``identity``: identity
#: head even over a trained one; ``random``: keep transformers' random initialisation; ``error``: refuse.
HeadInitRule = Literal["auto", "identity", "random", "error"]
HEAD_INIT_RULES: tuple[str, ...] = get_args(HeadInitRule)

#: How the identity head treats the transform's activation / LayerNorm: ``bypass`` skips the module,
#: ``keep`` leaves it in the forward pass (LayerNorm reset to weight 1, bias 0: it still normalises).
Bypass = Literal["bypass", "keep"]

#: What rescaling does to the input side of a tied head (:func:`lsr_eval.models.rescale.rescale_head`):
#: ``divided``: the shared matrix is divided, so the input word embeddings are divided too (the paper's recipe);
#: ``compensated``: the shared matrix is divided and the embedding lookup is multiplied back by k, so the encoder
#: sees the same inputs as before and only the logits shrink.
TiedInput = Literal["divided", "compensated"]
TIED_INPUT_CHOICES: tuple[str, ...] = get_args(TiedInput)


#: The MLM-head rescaling factor k (:func:`lsr_eval.models.rescale.rescale_head`), declared once for every setting
#: that holds one (the SPLADE load settings, the training configs).
RESCALE_K = Setting(help="divide the MLM head by k before use (MLM-head rescaling)", gt=0)

#: Texts per forward pass, and a text's token limit (room for the special tokens), declared once for every encoder
#: and the settings that hold them.
#: A vocabulary's size (term ids 0 .. size - 1).
VOCAB_SIZE = Setting(help="terms in the vocabulary", ge=1, unit="terms")
#: The quantisation scale: an integer impact is round(weight x scale).
SCALE = Setting(help="quantisation scale (integer impact = round(weight x scale))", gt=0)
BATCH_SIZE = Setting(help="texts per forward pass", ge=1, unit="texts")
#: Documents per shard of an encoded folder: the work a crash can lose, and ~8 bytes x active dims of memory per
#: document.
SHARD_SIZE = Setting(help="documents per cached shard (what a crash loses)", ge=1, unit="documents")
DEFAULT_SHARD_SIZE = 50_000
#: A term budget, declared once for the encoders' sparsification, export pruning and the SPLADE settings that set
#: them: the top-k weights of a vector, and the threshold a weight must exceed.
TOP_K = Setting(help="keep the top-k weights of a vector", ge=1, unit="terms")
THRESHOLD = Setting(help="keep weights > threshold", ge=0)
MAX_LENGTH = Setting(help="a text's token limit (room for the special tokens)", ge=2, unit="tokens")

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
#: The declaration of every device setting: its forms.
DEVICE = Setting(help="where the model runs (auto: cuda:LOCAL_RANK when CUDA is available, else cpu)",
                 pattern=(r"auto|cpu|cuda(:\d+)?", DEVICE_CHOICES))
#: Runtimes of the single-query encoder (:mod:`lsr_eval.models.onnx_query`): the torch model itself, or ONNX Runtime.
QueryRuntime = Literal["torch", "onnx"]
QUERY_RUNTIMES: tuple[str, ...] = get_args(QueryRuntime)


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of ``allowed``, else the settings' error naming the option and listing the choices."""
    if value not in allowed:
        raise SettingError(name, f"one of {', '.join(allowed)}", value)
    return value


def check_device(value: Any, name: str = "device") -> str:
    """``value`` if it names a device (:data:`DEVICE`), else the settings' error listing the forms."""
    return check(name, value, str, DEVICE)


@dataclass(frozen=True, slots=True)
class IdentityHead(Validated):
    """Shape of the identity head: dense = I, zero biases, decoder tied to the input embeddings.

    Defaults follow the measurement in docs/models.md (all-MiniLM-L6-v2 on SciFact): activation bypassed,
    LayerNorm kept (weight 1, bias 0), which ranks a text's own tokens highest.
    """

    activation: Bypass = setting("bypass", help="the transform's activation: bypass (skip it) or keep")
    norm: Bypass = setting("keep", help="the transform's LayerNorm: keep (reset to weight 1, bias 0) or bypass")

    def to_dict(self) -> dict[str, str]:
        return {"activation": self.activation, "norm": self.norm}
