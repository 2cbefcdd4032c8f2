"""SPLADE model = a query encoder and a document encoder, shared (one backbone) or distinct.

Distinct encoders have their own backbone, tokenizer and max length (e.g. a BERT-tiny query encoder in front of a
BERT-base document encoder, as in Lassance & Clinchant, "An Efficiency Study for SPLADE Models", SIGIR 2022).
A shared model has one backbone and tokenizer; its two encoders differ only in max length and sparsification.

Design notes: docs/design.md."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from torch import nn

from lsr_eval import __version__
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.manifest import read_json_object, write_json
from lsr_eval.models.encoder import SpladeEncoder
from lsr_eval.models.options import DEFAULT_PRECISION, SCALE, HeadInitRule, IdentityHead
from lsr_eval.models.sentence_transformers_files import write_files
from lsr_eval.models.sparsify import Sparsify
from lsr_eval.models.static_query import BINARY, IDF, StaticQueryEncoder, is_static_model, static_location
from lsr_eval.settings import check

log = logging.getLogger(__name__)

SPLADE_CONFIG = "splade_config.json"
FORMAT = "lsr-eval-splade"
FORMAT_VERSION = 1
#: Default max lengths (tokens, special tokens included): SPLADE's usual query / passage settings.
MAX_LENGTH_QUERY = 64
MAX_LENGTH_DOCUMENT = 256
#: Weights are multiplied by this and rounded to integer impacts for Anserini (Formal et al. use 100).
POOLING = "max"
ACTIVATION = "log1p_relu"


class SpladeModel(nn.Module):
    """``query`` and ``document`` :class:`SpladeEncoder` s; ``shared`` when they wrap the same backbone."""

    def __init__(self, query: SpladeEncoder, document: SpladeEncoder, *,
                 quantization_scale: float = DEFAULT_SCALE) -> None:
        super().__init__()
        self.query = query
        self.document = document
        self.quantization_scale = float(check("quantization_scale", quantization_scale, float, SCALE))
        self.train(document.training)

    @property
    def shared(self) -> bool:
        return getattr(self.query, "mlm", None) is self.document.mlm

    @property
    def inference_free(self) -> bool:
        """Whether the query encoder is a weight table (:class:`~lsr_eval.models.static_query.StaticQueryEncoder`)."""
        return getattr(self.query, "kind", None) == "static"

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, query_model: str | os.PathLike | None = None, *,
                        max_length_q: int | None = None, max_length_d: int | None = None,
                        head_init: HeadInitRule = "auto", identity: IdentityHead = IdentityHead(),
                        rescale_k: float | None = None, scale_bias: bool = False,
                        sparsify_q: Sparsify | None = None, sparsify_d: Sparsify | None = None,
                        bf16: bool = False, quantization_scale: float | None = None,
                        trust_remote_code: bool = False, precision: str = DEFAULT_PRECISION,
                        idf_corpus=None, work_dir: str | os.PathLike | None = None) -> SpladeModel:
        """Build from a checkpoint (folder or hub id) or from a folder written by :meth:`save_pretrained`.

        ``path`` is the document encoder, and the query encoder too unless ``query_model`` names another: a
        checkpoint, an inference-free model folder or hub id (:func:`~lsr_eval.models.static_query.is_static_model`;
        ``static:<folder or hub id>`` forces that reading, e.g. for a hub id), ``idf``: the IDF of ``idf_corpus`` (a
        dataset) on the document encoder's tokenizer, cached under ``work_dir`` (:meth:`StaticQueryEncoder.from_idf`),
        or ``binary``: the bag of the query's tokens (:meth:`StaticQueryEncoder.binary`).
        ``head_init``/``identity``/``rescale_k``/``scale_bias`` apply to each backbone as loaded (a saved
        model's head is already rescaled: a new ``rescale_k`` divides it again). Arguments left None take the
        saved values, else the defaults (max lengths 64 / 256, Sparsify(), scale 100).
        """
        saved = read_splade_config(path)
        enc_cfg = (saved or {}).get("encoders", {})
        q_cfg, d_cfg = enc_cfg.get("query", {}), enc_cfg.get("document", {})
        if saved is not None and query_model is not None:
            raise ConfigError(f"{path}: a saved SPLADE model already defines its query encoder; "
                              f"query_model must not be given")
        max_q = max_length_q if max_length_q is not None else q_cfg.get("max_length", MAX_LENGTH_QUERY)
        max_d = max_length_d if max_length_d is not None else d_cfg.get("max_length", MAX_LENGTH_DOCUMENT)
        sp_q = sparsify_q if sparsify_q is not None else Sparsify.from_dict(q_cfg.get("sparsify"))
        sp_d = sparsify_d if sparsify_d is not None else Sparsify.from_dict(d_cfg.get("sparsify"))
        scale = quantization_scale if quantization_scale is not None else (saved or {}).get(
            "quantization_scale", DEFAULT_SCALE)
        common = dict(head_init=head_init, identity=identity, rescale_k=rescale_k, scale_bias=scale_bias,
                      bf16=bf16, precision=precision, trust_remote_code=trust_remote_code)

        if saved is not None and not saved.get("shared", True):
            root = Path(path)
            if q_cfg.get("kind") == "static":
                query = StaticQueryEncoder.from_pretrained(root / q_cfg.get("path", "query"), max_q, sparsify=sp_q)
            else:
                query = SpladeEncoder.from_pretrained(root / q_cfg.get("path", "query"), max_q, sparsify=sp_q,
                                                      **common)
            document = SpladeEncoder.from_pretrained(root / d_cfg.get("path", "document"), max_d, sparsify=sp_d,
                                                     **common)
        elif query_model is not None and str(query_model) == IDF:
            if idf_corpus is None:
                raise ConfigError("query_model='idf' needs the corpus to count the IDF on (idf_corpus=<dataset>)")
            document = SpladeEncoder.from_pretrained(path, max_d, sparsify=sp_d, **common)
            query = StaticQueryEncoder.from_idf(idf_corpus, document, work_dir=work_dir, max_length=max_q,
                                                sparsify=sp_q)
        elif query_model is not None and str(query_model) == BINARY:
            document = SpladeEncoder.from_pretrained(path, max_d, sparsify=sp_d, **common)
            query = StaticQueryEncoder.binary(document, max_length=max_q, sparsify=sp_q)
        elif query_model is not None and is_static_model(query_model):
            query = StaticQueryEncoder.from_pretrained(static_location(query_model), max_q, sparsify=sp_q)
            document = SpladeEncoder.from_pretrained(path, max_d, sparsify=sp_d, **common)
        elif query_model is not None:
            query = SpladeEncoder.from_pretrained(query_model, max_q, sparsify=sp_q, **common)
            document = SpladeEncoder.from_pretrained(path, max_d, sparsify=sp_d, **common)
        else:
            document = SpladeEncoder.from_pretrained(path, max_d, sparsify=sp_d, **common)
            query = SpladeEncoder(document.mlm, document.tokenizer, max_q, sparsify=sp_q, bf16=bf16,
                                  precision=precision, head_init=document.head_init)
        if getattr(query, "kind", None) == "static":
            check_same_vocabulary(query, document, str(query_model or path))
        return cls(query, document, quantization_scale=scale)

    def config_dict(self) -> dict:
        """The content of ``splade_config.json``."""
        q, d = self.query.describe(), self.document.describe()
        for e in (q, d):
            e.pop("precision")   # how it ran here, not a property of the saved model
        q["path"], d["path"] = (".", ".") if self.shared else ("query", "document")
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "lsr_eval_version": __version__,
            "shared": self.shared,
            "pooling": POOLING,
            "activation": ACTIVATION,
            "quantization_scale": self.quantization_scale,
            "encoders": {"query": q, "document": d},
        }

    def save_pretrained(self, folder: str | os.PathLike) -> Path:
        """Write the model folder(s), ``splade_config.json`` and, when the model is representable there, the
        sentence-transformers ``SparseEncoder`` module files (:mod:`lsr_eval.models.sentence_transformers_files`);
        returns ``folder``."""
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        if self.shared:
            self.document.save_pretrained(root)
        else:
            self.query.save_pretrained(root / "query")
            self.document.save_pretrained(root / "document")

        st = write_files(self, root)  # sentence-transformers SparseEncoder files, when representable
        write_json(root / SPLADE_CONFIG, {**self.config_dict(), "sentence_transformers": st})
        log.info("SPLADE model saved to %s (%s)", root, "shared backbone" if self.shared else "query/ + document/")
        return root


def check_same_vocabulary(query, document, where: str) -> None:
    """Query and document vectors must index one vocabulary: same size, same tokenizer vocabulary."""
    if query.vocab_size != document.vocab_size or query.tokenizer.get_vocab() != document.tokenizer.get_vocab():
        raise ConfigError(f"{where}: the query encoder's vocabulary ({query.vocab_size} ids) differs from the document "
                          f"encoder's ({document.vocab_size} ids); both must use one tokenizer")


def read_splade_config(path: str | os.PathLike) -> dict | None:
    """``splade_config.json`` of a local folder (None when ``path`` is not a folder or has none)."""
    file = Path(path) / SPLADE_CONFIG
    data = read_json_object(file)
    if data is None:
        return None
    if data.get("format") != FORMAT:
        raise InputError(f"{file}: not an lsr-eval SPLADE config (expected \"format\": \"{FORMAT}\")")
    if data.get("format_version", 0) > FORMAT_VERSION:
        raise InputError(f"{file}: format_version {data['format_version']} is newer than this lsr-eval "
                         f"({FORMAT_VERSION})")
    return data
