"""Typed training configurations, read from YAML and validated before anything is loaded.

Design notes: docs/design.md."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Union, get_args, get_origin

from lsr_eval.errors import ConfigError

HeadInit = Literal["auto", "identity", "random", "error"]
RescaleK = Union[float, Literal["suggested"], None]
TiedInput = Literal["divided", "compensated"]
LossName = Literal["infonce", "margin_mse", "kl_div"]
RegKind = Literal["none", "l1", "flops"]
DataSource = Literal["dataset", "irds-triples"]
Decay = Literal["linear", "constant"]
Device = Literal["auto", "cpu", "cuda"]
Trainable = Literal["all", "head"]
DecayParams = Literal["matrices", "all"]
OptimPreset = Literal["naver"]
MiddleFrom = Literal["naver", "ours"]

#: Keys that may differ between a checkpoint's config and the resuming one (they do not change the numbers).
RESUME_FREE_KEYS = ("output", "train.checkpoint_every", "train.keep_checkpoints", "train.log_every",
                    "train.num_threads", "train.progress")
#: Keys added after runs were recorded, with the value every earlier run had: left out of a run's identity while at
#: that value, so that a run recorded before the key existed is the same experiment (resume, grids, reproduce).
ADDED_KEYS = {"optim.preset": None, "optim.weight_decay_params": "matrices", "regularizer.naver_sum": False,
              "model.middle_from": None}


# -- model ------------------------------------------------------------------------------------------------------
@dataclass
class BuildConfig:
    """A BERT masked LM built from scratch (random weights) on the document encoder's vocabulary and tokenizer.

    Defaults are BERT-tiny (Turc et al. 2019; ``prajjwal1/bert-tiny``): 2 layers, 128 hidden, 2 heads, 512 FFN.
    """

    layers: int = 2
    hidden: int = 128
    heads: int = 2
    intermediate: int = 512
    max_positions: int = 512

    def __post_init__(self) -> None:
        for name in ("layers", "hidden", "heads", "intermediate", "max_positions"):
            if getattr(self, name) < 1:
                raise ConfigError(f"model.query.build.{name}={getattr(self, name)}: expected an integer >= 1")
        if self.hidden % self.heads:
            raise ConfigError(f"model.query.build: hidden={self.hidden} is not divisible by heads={self.heads}")


@dataclass
class QueryEncoderConfig:
    """A query encoder distinct from the document encoder: a checkpoint (``path``) or built (``build``).

    Either way it must use the document encoder's vocabulary (a checkpoint's tokenizer is compared to it).
    """

    path: str | None = None
    build: BuildConfig | None = None
    head_init: HeadInit = "auto"
    rescale_k: RescaleK = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.build is None):
            raise ConfigError("model.query: give exactly one of 'path' (a checkpoint) or 'build' (built from a "
                              "config)")
        _check_k("model.query.rescale_k", self.rescale_k)


@dataclass
class BackboneConfig:
    """A checkpoint to start from and what is done to its MLM head. ``path``: folder, hub id or offline alias
    (``splade-tiny``, ``minilm``: :data:`lsr_eval.models.offline.OFFLINE_MODELS`).

    ``rescale_k``: divide the MLM head by k at initialisation (:func:`lsr_eval.models.rescale_head`), a number or
    ``suggested`` (:func:`lsr_eval.models.suggest_k` on the loaded head). ``tied_input``: for tied heads,
    ``divided`` (the input embeddings shrink with the head, the paper's recipe) or ``compensated`` (the lookup is
    multiplied back by k). ``trust_remote_code``: run model code shipped with a checkpoint
    (``Alibaba-NLP/gte-en-mlm-base``).
    """

    path: str
    head_init: HeadInit = "auto"
    rescale_k: RescaleK = None
    scale_bias: bool = False
    tied_input: TiedInput = "divided"
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        _check_k("model.rescale_k", self.rescale_k)


@dataclass
class ModelConfig(BackboneConfig):
    """The SPLADE model to train: the backbone (:class:`BackboneConfig`) is the document encoder, and the query
    encoder too unless ``query`` is given. Rescaling applies to each checkpoint loaded here (a built query encoder
    has its own ``rescale_k``).

    ``middle_from``: where the middle-trained checkpoints the encoders start from came from, ``naver`` (naver/splade's
    ``mlm_flops.tar.gz``) or ``ours`` (``lsr-eval middle-train``); part of the run's identity and shown beside its
    rows in the efficiency paper's table (None: not said, the run is no such start)."""

    max_length_q: int = 64
    max_length_d: int = 256
    query: QueryEncoderConfig | None = None
    middle_from: MiddleFrom | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("max_length_q", "max_length_d"):
            if getattr(self, name) < 2:
                raise ConfigError(f"model.{name}={getattr(self, name)}: expected an integer >= 2")


# -- data -------------------------------------------------------------------------------------------------------
@dataclass
class DataConfig:
    """Training examples: (query, positive, ``n_negatives`` hard negatives[, teacher scores]).

    ``source: dataset``: queries, qrels and documents of ``dataset`` (BEIR folder, registry name or
    ``irds:<id>``; ``split`` for BEIR folders, default ``train``); positives = qrels with grade > 0; hard
    negatives from ``negatives`` (a TREC run, e.g. ``lsr-eval bm25 --split train``'s ``run.trec``, or lines
    ``qid<TAB>docid,docid,...``), or a list of such files (e.g. BM25's and the model's own run; the pool is the
    union of each file's top ``negatives_top_k``): its top ``negatives_top_k`` per query minus the judged positives.
    ``teacher_scores``: lines ``qid docid score`` for distillation; without a negatives file the negatives are
    the teacher-scored documents that are not positives.

    ``source: irds-triples``: the ir_datasets docpairs ``triples`` (MS MARCO ``triples-small``), read in file
    order, one negative each.
    """

    source: DataSource = "dataset"
    dataset: str | None = None
    split: str | None = None
    negatives: str | list[str] | None = None
    negatives_top_k: int = 100
    n_negatives: int = 1
    teacher_scores: str | None = None
    triples: str = "msmarco-passage/train/triples-small"

    def __post_init__(self) -> None:
        if self.source == "dataset" and not self.dataset:
            raise ConfigError("missing required value 'data.dataset' (source: dataset)")
        if self.source == "irds-triples":
            if self.n_negatives != 1:
                raise ConfigError(f"data.n_negatives={self.n_negatives}: triples have exactly one negative")
            if self.negatives:
                raise ConfigError("data.negatives: triples bring their own negatives; remove the key")
        if self.negatives_top_k < 1:
            raise ConfigError(f"data.negatives_top_k={self.negatives_top_k}: expected an integer >= 1")
        if self.n_negatives < 0:
            raise ConfigError(f"data.n_negatives={self.n_negatives}: expected an integer >= 0")


# -- objective --------------------------------------------------------------------------------------------------
@dataclass
class LossConfig:
    """Ranking loss (:mod:`lsr_eval.train.losses`). ``in_batch`` (InfoNCE only): the positives and negatives of
    the other queries of the batch, over all processes, are negatives too."""

    name: LossName = "infonce"
    in_batch: bool = True


@dataclass
class RegularizerConfig:
    """Sparsity regularisers (:mod:`lsr_eval.train.regularizers`) with quadratic warm-up of their weights:
    ``lambda_t = lambda * (min(t, T) / T)^2`` at optimizer step t (naver/splade's ``RegWeightScheduler``).

    ``naver_sum``: count the document regulariser twice and the query one once, as naver/splade's trainer does
    (``splade/tasks/transformer_trainer.py``: ``loss += sum(regularization_losses.values())`` inside the loop over
    the regularisers, so the first listed, FLOPS on documents in every efficient SPLADE V and VI-BT config, is added
    once per regulariser). The effective document weight is then ``2 * lambda_d`` (:attr:`doc_count`); it needs both
    regularisers (with one, naver's loop counts it once)."""

    query: RegKind = "flops"
    lambda_q: float = 0.0
    warmup_q: int = 0
    document: RegKind = "flops"
    lambda_d: float = 0.0
    warmup_d: int = 0
    naver_sum: bool = False

    def __post_init__(self) -> None:
        for name in ("lambda_q", "lambda_d"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"regularizer.{name}={value}: expected a finite number >= 0")
        for name in ("warmup_q", "warmup_d"):
            if getattr(self, name) < 0:
                raise ConfigError(f"regularizer.{name}={getattr(self, name)}: expected an integer >= 0")
        if self.naver_sum and "none" in (self.query, self.document):
            raise ConfigError(f"regularizer.naver_sum=true with regularizer.query={self.query}, document="
                              f"{self.document}: naver's sum counts the document regulariser twice only beside a "
                              f"query regulariser (alone, it is counted once): remove naver_sum")

    @property
    def doc_count(self) -> int:
        """How many times the document regulariser is added to the loss: 2 under ``naver_sum``, else 1."""
        return 2 if self.naver_sum else 1

    @property
    def effective_lambda_d(self) -> float:
        """The document regulariser's weight in the loss: ``doc_count * lambda_d``."""
        return self.doc_count * self.lambda_d


@dataclass
class OptimConfig:
    """AdamW (decoupled weight decay on ``weight_decay_params``: ``matrices``, none on biases and norm weights, or
    ``all`` parameters) with linear LR warm-up then ``decay`` (:mod:`lsr_eval.train.schedule`); gradients clipped
    to ``max_grad_norm`` (null: no clipping). ``preset: naver`` is naver/splade's optimiser (:data:`PRESETS`)."""

    lr: float = 2e-5
    weight_decay: float = 0.01
    adam_eps: float = 1e-8
    warmup_steps: int = 0
    decay: Decay = "linear"
    max_grad_norm: float | None = 1.0
    weight_decay_params: DecayParams = "matrices"
    preset: OptimPreset | None = None

    def __post_init__(self) -> None:
        if self.weight_decay_params not in get_args(DecayParams):
            raise ConfigError(f"optim.weight_decay_params={self.weight_decay_params!r}: expected one of "
                              f"{', '.join(get_args(DecayParams))}")
        if self.preset is not None:
            if self.preset not in PRESETS:
                raise ConfigError(f"optim.preset={self.preset!r}: expected one of {', '.join(PRESETS)} (or none)")
            for key, value in PRESETS[self.preset].items():
                mine, default = getattr(self, key), OptimConfig.__dataclass_fields__[key].default
                if mine != default and mine != value:
                    raise ConfigError(f"optim.{key}={mine!r} contradicts optim.preset={self.preset} ({key} "
                                      f"{value!r}): remove one of them")
                setattr(self, key, value)
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ConfigError(f"optim.lr={self.lr}: expected a number > 0")
        if self.warmup_steps < 0:
            raise ConfigError(f"optim.warmup_steps={self.warmup_steps}: expected an integer >= 0")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ConfigError(f"optim.max_grad_norm={self.max_grad_norm}: expected a number > 0 or null")


#: Named optimiser settings. ``naver``: naver/splade's AdamW for SPLADE training (``splade/optim/bert_optim.py``:
#: eps 1e-6, weight decay on every parameter; ``splade/tasks/amp.py``/``base/trainer.py``: no gradient clipping).
PRESETS: dict[str, dict[str, Any]] = {"naver": {"adam_eps": 1e-6, "weight_decay_params": "all",
                                                "max_grad_norm": None}}


@dataclass
class TrainConfig:
    """Loop settings. ``batch_size``: queries per micro-batch summed over all processes (each process takes
    ``batch_size / world_size``); an optimizer step sees ``batch_size * grad_accum`` queries."""

    steps: int
    batch_size: int
    grad_accum: int = 1
    bf16: bool | None = None  # None: bf16 autocast where native (CUDA with bf16, CPUs with avx512_bf16/AMX), else fp32
    seed: int = 123
    device: Device = "auto"
    checkpoint_every: int = 1000
    keep_checkpoints: int = 2
    log_every: int = 1
    num_threads: int | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "grad_accum", "log_every", "keep_checkpoints"):
            if getattr(self, name) < 1:
                raise ConfigError(f"train.{name}={getattr(self, name)}: expected an integer >= 1")
        if self.checkpoint_every < 0:
            raise ConfigError(f"train.checkpoint_every={self.checkpoint_every}: expected an integer >= 0 "
                              f"(0: only the final model)")


@dataclass
class OutputConfig:
    """``dir``: small outputs (``log.jsonl``, ``manifest.json``, ``config.yaml``), e.g. ``results/train/<run>``;
    ``model_dir``: checkpoints and the final model (``model/``), e.g. under the git-ignored ``work/``."""

    dir: str
    model_dir: str


@dataclass
class SpladeTrainConfig:
    """``lsr-eval train``: a SPLADE model trained on ranking examples."""

    model: ModelConfig
    data: DataConfig
    train: TrainConfig
    output: OutputConfig
    loss: LossConfig = field(default_factory=LossConfig)
    regularizer: RegularizerConfig = field(default_factory=RegularizerConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    name: str | None = None

    def __post_init__(self) -> None:
        if self.loss.name in ("margin_mse", "kl_div"):
            if not self.data.teacher_scores:
                raise ConfigError(f"loss.name={self.loss.name} distils teacher scores: set data.teacher_scores")
            if self.data.n_negatives < 1:
                raise ConfigError(f"loss.name={self.loss.name} needs data.n_negatives >= 1")
        if self.loss.name == "infonce" and not self.loss.in_batch and self.data.n_negatives < 1:
            raise ConfigError("loss.in_batch=false needs data.n_negatives >= 1 (no negative otherwise)")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# -- middle training --------------------------------------------------------------------------------------------
@dataclass
class MiddleModelConfig(BackboneConfig):
    """The masked LM to middle-train (:class:`BackboneConfig`). ``trainable``: ``all`` parameters, or only the
    ``head``'s own (transform and logits bias; a tied decoder is the frozen input embeddings):
    :func:`lsr_eval.train.freeze.freeze_to_head`."""

    max_length: int = 256
    trainable: Trainable = "all"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_length < 2:
            raise ConfigError(f"model.max_length={self.max_length}: expected an integer >= 2")


@dataclass
class MiddleDataConfig:
    """Texts to mask (:mod:`lsr_eval.train.mlm_text`): the documents of ``dataset`` (one or a list; ``split`` for
    BEIR folders), at most ``max_docs`` per dataset, and the queries of the qrels splits in ``queries`` of each
    dataset that has them. ``holdout``: the fraction of the distinct texts kept out of training for evaluation
    (``lsr-eval mlm-eval``), drawn with ``holdout_seed``."""

    dataset: str | list[str]
    split: str | None = None
    max_docs: int | None = None
    queries: list[str] | None = None
    holdout: float = 0.0
    holdout_seed: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.holdout < 1:
            raise ConfigError(f"data.holdout={self.holdout}: expected a fraction in [0, 1)")
        if self.max_docs is not None and self.max_docs < 0:
            raise ConfigError(f"data.max_docs={self.max_docs}: expected an integer >= 0")


@dataclass
class MlmConfig:
    """Masking (BERT's 80/10/10 rule on ``mask_prob`` of the real tokens) and the FLOPS weight on the SPLADE
    pooling of the MLM logits, with quadratic warm-up over ``warmup_d`` steps."""

    mask_prob: float = 0.15
    lambda_d: float = 0.0
    warmup_d: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.mask_prob < 1:
            raise ConfigError(f"mlm.mask_prob={self.mask_prob}: expected a number in (0, 1)")
        if not (math.isfinite(self.lambda_d) and self.lambda_d >= 0):
            raise ConfigError(f"mlm.lambda_d={self.lambda_d}: expected a finite number >= 0")
        if self.warmup_d < 0:
            raise ConfigError(f"mlm.warmup_d={self.warmup_d}: expected an integer >= 0")


@dataclass
class MiddleTrainConfig:
    """``lsr-eval middle-train``: MLM + FLOPS middle training of a backbone (Lassance & Clinchant 2022)."""

    model: MiddleModelConfig
    data: MiddleDataConfig
    train: TrainConfig
    output: OutputConfig
    mlm: MlmConfig = field(default_factory=MlmConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# -- loading ----------------------------------------------------------------------------------------------------
def _check_k(key: str, k: RescaleK) -> None:
    if k is not None and k != "suggested" and not (math.isfinite(k) and k > 0):
        raise ConfigError(f"{key}={k!r}: expected a number > 0, 'suggested' or null")


def read_yaml(path: str | os.PathLike, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The mapping in ``path`` with its ``base:`` chain merged in (the including file wins)."""
    import yaml

    p = Path(path)
    if p.resolve() in _seen:
        raise ConfigError(f"{p}: 'base' includes itself ({' -> '.join(map(str, _seen))})")
    try:
        with open(p, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the config: {e.strerror}") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise ConfigError(f"{where}: invalid YAML: {getattr(e, 'problem', e)}") from e
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: a config is a mapping of sections, got {type(data).__name__}")
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str):
        raise ConfigError(f"{p}: 'base' must be a file name, got {base!r}")
    parent = read_yaml(p.parent / base, _seen + (p.resolve(),))
    return merge(parent, data)


def merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge of two mappings: ``top`` wins; nested mappings are merged key by key."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``dotted.key=value`` strings (values parsed as YAML) to a raw config mapping."""
    import yaml

    out = dict(data)
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r}: expected KEY=VALUE with a dotted key, e.g. train.steps=100")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"override {item!r}: invalid YAML value: {e}") from e
        nested: Any = value
        for part in reversed(key.strip().split(".")):
            nested = {part: nested}
        out = merge(out, nested)
    return out


C = typing.TypeVar("C")


def from_dict(cls: type[C], data: Any, source: str, prefix: str = "") -> C:
    """Build dataclass ``cls`` from a raw mapping, checking keys and types (errors name ``source`` and the
    dotted key)."""
    where = prefix.rstrip(".") or "the config"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: '{where}' must be a mapping of keys, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            raise ConfigError(f"{source}: unknown key '{prefix}{key}' (known keys of '{where}': "
                              f"{', '.join(fields)})")
    kwargs = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{source}: missing required value '{prefix}{name}'")
            continue
        kwargs[name] = _coerce(data[name], hints[name], source, f"{prefix}{name}")
    try:
        return cls(**kwargs)
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def _coerce(value: Any, tp: Any, source: str, key: str) -> Any:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        members = get_args(tp)
        if value is None:
            if type(None) in members:
                return None
            raise ConfigError(f"{source}: '{key}' must not be null")
        errors = []
        for member in members:
            if member is type(None):
                continue
            try:
                return _coerce(value, member, source, key)
            except ConfigError as e:
                errors.append(str(e).split(": ", 1)[-1])
        raise ConfigError(f"{source}: {' or '.join(errors)}")
    if origin is Literal:
        allowed = get_args(tp)
        if value not in allowed:
            raise ConfigError(f"{source}: '{key}'={value!r}: expected one of {', '.join(map(str, allowed))}")
        return value
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, source, f"{key}.")
    if value is None:
        raise ConfigError(f"{source}: '{key}' must not be null")
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: '{key}'={value!r}: expected true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{source}: '{key}'={value!r}: expected an integer")
        return value
    if tp is float:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{source}: '{key}'={value!r}: expected a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{source}: '{key}'={value!r}: expected a string")
        return value
    if origin is list:
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{source}: '{key}'={value!r}: expected a non-empty list")
        (item,) = get_args(tp)
        return [_coerce(v, item, source, f"{key}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"config field {key}: unsupported type {tp!r}")  # a bug in this module, not bad input


#: Suffix of a seed's run in a fanned-out config (``name``, ``output.dir``, ``output.model_dir``).
SEED_SUFFIX = "-s{seed}"


#: A run name ending in its seed's suffix: ``<arm>-s<seed>``.
SEED_NAME = re.compile(r"^(?P<arm>.+)-s(?P<seed>\d+)$")


def seed_suffix(seed: int) -> str:
    """``-s<seed>``: what a fanned-out config appends to its run's name and folders."""
    return SEED_SUFFIX.format(seed=seed)


def seed_of(name: str) -> tuple[str, int] | None:
    """``(arm, seed)`` of a run named ``<arm>-s<seed>`` (:func:`seed_suffix`), else None."""
    m = SEED_NAME.match(name)
    return (m["arm"], int(m["seed"])) if m else None


def _fan_out(data: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """The raw mapping once per seed of its ``seeds`` list (once, unchanged, without the key)."""
    if "seeds" not in data:
        return [data]
    data = dict(data)
    seeds = data.pop("seeds")
    if (not isinstance(seeds, list) or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)):
        raise ConfigError(f"{source}: 'seeds'={seeds!r}: expected a non-empty list of integers >= 0")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{source}: 'seeds'={seeds!r}: a seed is listed twice")
    out = []
    for seed in seeds:
        tail = seed_suffix(seed)
        output = data.get("output")
        if not isinstance(output, Mapping) or not all(isinstance(output.get(k), str) for k in ("dir", "model_dir")):
            raise ConfigError(f"{source}: 'seeds' needs output.dir and output.model_dir (each seed's run is put "
                              f"under them, suffixed {tail})")
        one = merge(data, {"train": {"seed": seed},
                           "output": {"dir": output["dir"].rstrip("/") + tail,
                                      "model_dir": output["model_dir"].rstrip("/") + tail}})
        if isinstance(data.get("name"), str):
            one["name"] = data["name"] + tail
        out.append(one)
    return out


def load_configs(path: str | os.PathLike, overrides: list[str] | None = None,
                 cls: type[C] = SpladeTrainConfig) -> list[C]:  # type: ignore[assignment]
    """Read, merge (``base``, ``overrides``) and validate a config file into ``cls``: one config per seed of its
    ``seeds`` list, in that order, or the one config when it has no ``seeds``."""
    data = apply_overrides(read_yaml(path), list(overrides or []))
    return [from_dict(cls, one, str(path)) for one in _fan_out(data, str(path))]


def load_config(path: str | os.PathLike, overrides: list[str] | None = None,
                cls: type[C] = SpladeTrainConfig) -> C:  # type: ignore[assignment]
    """Read, merge (``base``, ``overrides``) and validate a config file of ONE run into ``cls`` (a ``seeds`` list
    of one seed is that seed's run; of several, an error: use :func:`load_configs`)."""
    configs = load_configs(path, overrides, cls)
    if len(configs) > 1:
        raise ConfigError(f"{path}: 'seeds' lists {len(configs)} seeds (one run each); select one with "
                          f"--set seeds=[N]")
    return configs[0]


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def result_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """The flattened config without :data:`RESUME_FREE_KEYS`, nor :data:`ADDED_KEYS` at their earlier value (what
    must match to resume a run)."""
    flat = flatten(config)
    return {k: v for k, v in flat.items()
            if not any(k == free or k.startswith(free + ".") for free in RESUME_FREE_KEYS)
            and not (k in ADDED_KEYS and v == ADDED_KEYS[k])}
