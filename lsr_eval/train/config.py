"""Typed training configurations, read from YAML and validated before anything is loaded.

Design notes: docs/design.md."""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Union, get_args, get_origin

from lsr_eval.errors import ConfigError
from lsr_eval.models.options import MAX_LENGTH, RESCALE_K, TiedInput
from lsr_eval.models.options import HeadInitRule as HeadInit
from lsr_eval.settings import KEY, Setting, SettingError, Validated, check, describe, section, setting, validate
from lsr_eval.train.losses import LOSSES, loss_names
from lsr_eval.train.regularizers import regularizer_names

#: A config file's top level (sections by name), its base file, a list value, a seed.
SECTIONS = Setting(help="a config: a mapping of sections")
BASE = Setting(help="the config file this one overrides (a file name, relative to this one)", min_items=1)
ITEMS = Setting(help="a list value: at least one item", min_items=1)
SEED = Setting(help="the run's seed", ge=0)
#: Stop a training run after this step, with a checkpoint (resumed later).
STOP_AFTER = Setting(help="stop after this step with a checkpoint (resume later)", ge=1, unit="steps")

RescaleK = Union[float, Literal["suggested"], None]
DataSource = Literal["dataset", "irds-triples"]
Decay = Literal["linear", "constant"]
Device = Literal["auto", "cpu", "cuda"]
Trainable = Literal["all", "head"]
DecayParams = Literal["matrices", "all"]
OptimPreset = Literal["naver"]
MiddleFrom = Literal["naver", "ours"]
#: The help of every ``rescale_k`` of a training config.
RESCALE_HELP = "divide the MLM head by k at initialisation: a number, or suggested (lsr_eval.models.suggest_k)"

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

    layers: int = setting(2, ge=1, help="transformer layers")
    hidden: int = setting(128, ge=1, help="hidden size")
    heads: int = setting(2, ge=1, help="attention heads (hidden must be divisible by them)")
    intermediate: int = setting(512, ge=1, help="feed-forward size")
    max_positions: int = setting(512, ge=1, unit="tokens", help="position embeddings")

    def __post_init__(self) -> None:
        validate(self)
        if self.hidden % self.heads:
            raise ConfigError(f"model.query.build: hidden={self.hidden} is not divisible by heads={self.heads}")


@dataclass
class QueryEncoderConfig:
    """A query encoder distinct from the document encoder: a checkpoint (``path``) or built (``build``).

    Either way it must use the document encoder's vocabulary (a checkpoint's tokenizer is compared to it).
    """

    path: str | None = setting(None, help="a checkpoint: folder, hub id or offline alias")
    build: BuildConfig | None = None
    head_init: HeadInit = setting("auto", help="the MLM head's initialisation rule")
    rescale_k: RescaleK = setting(None, like=RESCALE_K, help=RESCALE_HELP)

    def __post_init__(self) -> None:
        if (self.path is None) == (self.build is None):
            raise ConfigError("model.query: give exactly one of 'path' (a checkpoint) or 'build' (built from a "
                              "config)")
        validate(self)


@dataclass
class BackboneConfig(Validated):
    """A checkpoint to start from and what is done to its MLM head. ``path``: folder, hub id or offline alias
    (``splade-tiny``, ``minilm``: :data:`lsr_eval.models.offline.OFFLINE_MODELS`).

    ``rescale_k``: divide the MLM head by k at initialisation (:func:`lsr_eval.models.rescale_head`), a number or
    ``suggested`` (:func:`lsr_eval.models.suggest_k` on the loaded head). ``tied_input``: for tied heads,
    ``divided`` (the input embeddings shrink with the head, the paper's recipe) or ``compensated`` (the lookup is
    multiplied back by k). ``trust_remote_code``: run model code shipped with a checkpoint
    (``Alibaba-NLP/gte-en-mlm-base``).
    """

    path: str = setting(help="the checkpoint: folder, hub id or offline alias")
    head_init: HeadInit = setting("auto", help="the MLM head's initialisation rule")
    rescale_k: RescaleK = setting(None, like=RESCALE_K, help=RESCALE_HELP)
    scale_bias: bool = setting(False, help="divide the head's bias by k too")
    tied_input: TiedInput = setting("divided", help="a tied head's input side: divided (the paper's) or compensated")
    trust_remote_code: bool = setting(False, help="run model code shipped with the checkpoint")


@dataclass
class ModelConfig(BackboneConfig):
    """The SPLADE model to train: the backbone (:class:`BackboneConfig`) is the document encoder, and the query
    encoder too unless ``query`` is given. Rescaling applies to each checkpoint loaded here (a built query encoder
    has its own ``rescale_k``).

    ``middle_from``: where the middle-trained checkpoints the encoders start from came from, ``naver`` (naver/splade's
    ``mlm_flops.tar.gz``) or ``ours`` (``lsr-eval middle-train``); part of the run's identity and shown beside its
    rows in the efficiency paper's table (None: not said, the run is no such start)."""

    max_length_q: int = setting(64, like=MAX_LENGTH, help="query token limit")
    max_length_d: int = setting(256, like=MAX_LENGTH, help="document token limit")
    query: QueryEncoderConfig | None = None
    middle_from: MiddleFrom | None = setting(None, help="where the middle-trained start came from")


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

    source: DataSource = setting("dataset", help="dataset (queries, qrels, documents) or irds-triples")
    dataset: str | None = setting(None, help="BEIR folder, registry name or irds:<id>")
    split: str | None = setting(None, help="the split of a BEIR folder (default train)")
    negatives: str | list[str] | None = None
    negatives_top_k: int = setting(100, ge=1, help="the depth of each negatives file drawn from")
    n_negatives: int = setting(1, ge=0, help="hard negatives per example")
    teacher_scores: str | None = setting(None, help="lines qid docid score, for distillation")
    triples: str = setting("msmarco-passage/train/triples-small", help="the ir_datasets docpairs id")

    def __post_init__(self) -> None:
        if self.source == "dataset" and not self.dataset:
            raise ConfigError("missing required key 'data.dataset' (source: dataset)")
        if self.source == "irds-triples":
            if self.n_negatives != 1:
                raise ConfigError(f"data.n_negatives={self.n_negatives}: triples have exactly one negative")
            if self.negatives:
                raise ConfigError("data.negatives: triples bring their own negatives; remove the key")
        validate(self)


# -- objective --------------------------------------------------------------------------------------------------
@dataclass
class LossConfig(Validated):
    """Ranking loss (:mod:`lsr_eval.train.losses`). ``in_batch`` (InfoNCE only): the positives and negatives of
    the other queries of the batch, over all processes, are negatives too."""

    name: str = setting("infonce", choices=loss_names, help="the ranking loss (lsr_eval.train.losses.LOSSES)")
    in_batch: bool = setting(True, help="the batch's other documents are negatives too (InfoNCE)")


@dataclass
class RegularizerConfig:
    """Sparsity regularisers (:mod:`lsr_eval.train.regularizers`) with quadratic warm-up of their weights:
    ``lambda_t = lambda * (min(t, T) / T)^2`` at optimizer step t (naver/splade's ``RegWeightScheduler``).

    ``naver_sum``: count the document regulariser twice and the query one once, as naver/splade's trainer does
    (``splade/tasks/transformer_trainer.py``: ``loss += sum(regularization_losses.values())`` inside the loop over
    the regularisers, so the first listed, FLOPS on documents in every efficient SPLADE V and VI-BT config, is added
    once per regulariser). The effective document weight is then ``2 * lambda_d`` (:attr:`doc_count`); it needs both
    regularisers (with one, naver's loop counts it once)."""

    query: str = setting("flops", choices=regularizer_names, help="the query regulariser (lsr_eval.train."
                                                                  "regularizers.REGULARIZERS, or none)")
    lambda_q: float = setting(0.0, ge=0, help="the query regulariser's weight")
    warmup_q: int = setting(0, ge=0, unit="steps", help="quadratic warm-up of lambda_q")
    document: str = setting("flops", choices=regularizer_names, help="the document regulariser (lsr_eval.train."
                                                                     "regularizers.REGULARIZERS, or none)")
    lambda_d: float = setting(0.0, ge=0, help="the document regulariser's weight")
    warmup_d: int = setting(0, ge=0, unit="steps", help="quadratic warm-up of lambda_d")
    naver_sum: bool = setting(False, help="count the document regulariser twice, as naver/splade's trainer does")

    def __post_init__(self) -> None:
        validate(self)
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

    lr: float = setting(2e-5, gt=0, help="peak learning rate")
    weight_decay: float = setting(0.01, ge=0, help="AdamW's decoupled weight decay")
    adam_eps: float = setting(1e-8, gt=0, help="AdamW's epsilon")
    warmup_steps: int = setting(0, ge=0, unit="steps", help="linear learning-rate warm-up")
    decay: Decay = setting("linear", help="the learning rate after warm-up")
    max_grad_norm: float | None = setting(1.0, gt=0, help="gradient clipping (null: none)")
    weight_decay_params: DecayParams = setting("matrices", help="which parameters decay: matrices or all")
    preset: OptimPreset | None = setting(None, help="naver: naver/splade's optimiser")

    def __post_init__(self) -> None:
        validate(self)
        if self.preset is not None:
            for key, value in PRESETS[self.preset].items():
                mine, default = getattr(self, key), OptimConfig.__dataclass_fields__[key].default
                if mine != default and mine != value:
                    raise ConfigError(f"optim.{key}={mine!r} contradicts optim.preset={self.preset} ({key} "
                                      f"{value!r}): remove one of them")
                setattr(self, key, value)


#: Named optimiser settings. ``naver``: naver/splade's AdamW for SPLADE training (``splade/optim/bert_optim.py``:
#: eps 1e-6, weight decay on every parameter; ``splade/tasks/amp.py``/``base/trainer.py``: no gradient clipping).
PRESETS: dict[str, dict[str, Any]] = {"naver": {"adam_eps": 1e-6, "weight_decay_params": "all",
                                                "max_grad_norm": None}}


@dataclass
class TrainConfig(Validated):
    """Loop settings. ``batch_size``: queries per micro-batch summed over all processes (each process takes
    ``batch_size / world_size``); an optimizer step sees ``batch_size * grad_accum`` queries."""

    steps: int = setting(ge=1, unit="optimizer steps", help="training length")
    batch_size: int = setting(ge=1, unit="queries", help="queries per micro-batch, summed over all processes")
    grad_accum: int = setting(1, ge=1, help="micro-batches per optimizer step")
    bf16: bool | None = setting(None, help="bf16 autocast (null: where native: CUDA with bf16, CPUs with "
                                           "avx512_bf16/AMX; else fp32)")
    seed: int = setting(123, like=SEED)
    device: Device = setting("auto", help="auto, cpu or cuda")
    checkpoint_every: int = setting(1000, ge=0, unit="steps", help="checkpoint interval (0: only the final model)")
    keep_checkpoints: int = setting(2, ge=1, help="checkpoints kept")
    log_every: int = setting(1, ge=1, unit="steps", help="log interval")
    num_threads: int | None = setting(None, ge=1, help="torch CPU threads (null: torch's default)")
    progress: bool = setting(True, help="show a progress bar")


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
        if LOSSES[self.loss.name].distils:
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

    max_length: int = setting(256, like=MAX_LENGTH)
    trainable: Trainable = setting("all", help="all parameters, or only the head's own")


@dataclass
class MiddleDataConfig(Validated):
    """Texts to mask (:mod:`lsr_eval.train.mlm_text`): the documents of ``dataset`` (one or a list; ``split`` for
    BEIR folders), at most ``max_docs`` per dataset, and the queries of the qrels splits in ``queries`` of each
    dataset that has them. ``holdout``: the fraction of the distinct texts kept out of training for evaluation
    (``lsr-eval mlm-eval``), drawn with ``holdout_seed``."""

    dataset: str | list[str]
    split: str | None = setting(None, help="the split of BEIR folders")
    max_docs: int | None = setting(None, ge=0, unit="documents", help="documents per dataset (null: all)")
    queries: list[str] | None = None
    holdout: float = setting(0.0, ge=0, lt=1, help="the fraction of texts kept out for evaluation")
    holdout_seed: int = setting(0, help="the seed the holdout is drawn with")


@dataclass
class MlmConfig(Validated):
    """Masking (BERT's 80/10/10 rule on ``mask_prob`` of the real tokens) and the FLOPS weight on the SPLADE
    pooling of the MLM logits, with quadratic warm-up over ``warmup_d`` steps."""

    mask_prob: float = setting(0.15, gt=0, lt=1, help="the fraction of real tokens masked")
    lambda_d: float = setting(0.0, ge=0, help="the FLOPS weight on the MLM logits' SPLADE pooling")
    warmup_d: int = setting(0, ge=0, unit="steps", help="quadratic warm-up of lambda_d")


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
    check("the config", data, dict, SECTIONS, str(p))
    base = data.pop("base", None)
    if base is None:
        return data
    check("base", base, str, BASE, str(p))
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
    section(cls, data, source, prefix)
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, f in {f.name: f for f in dataclasses.fields(cls)}.items():
        if name not in data:
            continue
        if KEY in f.metadata:   # a declared setting: read a YAML number as a float; its declaration checks it
            kwargs[name] = _as_number(data[name], hints[name])
        else:
            kwargs[name] = _coerce(data[name], hints[name], source, f"{prefix}{name}")
    try:
        return cls(**kwargs)
    except SettingError as e:
        raise e.at(source, prefix) from None
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def _as_number(value: Any, tp: Any) -> Any:
    """A YAML value for a setting of type ``tp``: an integer or a text like ``1e-5`` (YAML reads it as a string)
    becomes the float a float setting holds; anything else is left for the declaration to check."""
    members = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
    if float not in members or isinstance(value, bool):
        return value
    if isinstance(value, int) and int not in members:
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _coerce(value: Any, tp: Any, source: str, key: str, checked_as: Any = None) -> Any:
    """``value`` read as type ``tp`` (a YAML number for a float; a nested section as its dataclass); errors in the
    settings' one format (:class:`lsr_eval.settings.SettingError`)."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [m for m in get_args(tp) if m is not type(None)]
        if value is None:
            if len(members) < len(get_args(tp)):
                return None
            raise SettingError(key, describe(tp, Setting(help="")), value, source)
        if len(members) == 1:   # X | None: read as X, checked as X or null (the same words as the declaration)
            return _coerce(value, members[0], source, key, checked_as=tp)
        for member in members:
            try:
                return _coerce(value, member, source, key)
            except ConfigError:
                continue
        raise SettingError(key, describe(tp, Setting(help="")), value, source)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, source, f"{key}.")
    if origin is list:
        check(key, value, list, ITEMS, source)
        (item,) = get_args(tp)
        return [_coerce(v, item, source, f"{key}[{i}]") for i, v in enumerate(value)]
    if tp not in (bool, int, float, str) and origin is not Literal:
        raise TypeError(f"config field {key}: unsupported type {tp!r}")  # a bug in this module, not bad input
    return check(key, _as_number(value, tp), checked_as or tp, Setting(help=""), where=source)


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
    for i, seed in enumerate(check("seeds", seeds, list[int], ITEMS, str(source))):
        check(f"seeds[{i}]", seed, int, SEED, str(source))
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
