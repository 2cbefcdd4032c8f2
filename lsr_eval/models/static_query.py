"""Inference-free query encoder: tokenise the query and look up one weight per vocabulary id, no forward pass.

Weights: the corpus's Robertson-Sparck Jones idf, as BM25's with Lucene's ``1 +`` (Robertson & Zaragoza, 2009,
eq. 3.3), ``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))``, a learned table (OpenSearch doc-only models,
sentence-transformers ``SparseStaticEmbedding``), or 1 for every token (``binary``: the bag of the query's tokens,
naver/splade's ``SpladeDoc`` query side, the efficiency paper's VI-doc models).

Design notes: docs/design.md."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from lsr_eval.errors import InputError
from lsr_eval.manifest import load_json, read_json_object, write_json, write_manifest
from lsr_eval.models.encoder import Encoded
from lsr_eval.models.offline import resolve_model
from lsr_eval.models.options import BATCH_SIZE, MAX_LENGTH
from lsr_eval.models.precision import resolve_precision
from lsr_eval.models.sparsify import SPARSIFY, Sparsify
from lsr_eval.models.terms import VocabularyTerms
from lsr_eval.settings import check
from lsr_eval.workdir import cache_slot, cached
from lsr_eval.workdir import work_dir as default_work

log = logging.getLogger(__name__)

#: ``query_model`` value that selects the corpus's IDF as the query encoder.
IDF = "idf"
#: ``query_model`` value that selects the binary bag of the query's tokens (weight 1 each, special tokens 0).
BINARY = "binary"
BINARY_RULE = "1 per distinct token of the query, special tokens 0 (naver/splade SpladeDoc)"
#: ``query_model`` prefix that reads the rest as an inference-free model (needed for a hub id).
STATIC_PREFIX = "static:"
STATIC_CONFIG = "static_query.json"
FORMAT = "lsr-eval-static-query"
FORMAT_VERSION = 1
IDF_JSON = "idf.json"
IDF_FORMULA = "ln(1 + (N - df + 0.5) / (df + 0.5))"
#: documents tokenised per call while counting document frequencies (bounds memory)
IDF_CHUNK = 1000
_ST_TYPES = ("SparseStaticEmbedding", "IDF")   # the module's name in sentence-transformers >= 5.1 and before


def rsj_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """``ln(1 + (N - df + 0.5) / (df + 0.5))`` per id (float32); see the module doc."""
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)


def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 (hex) of a tokenizer's full definition (the fast backend's JSON, else its class and vocabulary)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else json.dumps(
        [type(tokenizer).__name__, sorted(tokenizer.get_vocab().items())])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def document_frequencies(texts, tokenizer, vocab_size: int, chunk: int = IDF_CHUNK) -> tuple[np.ndarray, int]:
    """(df per vocabulary id, documents counted) of an iterable of texts, read ``chunk`` at a time."""
    df = np.zeros(vocab_size, dtype=np.int64)
    n = 0
    batch: list[str] = []

    def flush() -> None:
        ids = tokenizer(batch, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        distinct = [np.unique(np.asarray(row, dtype=np.int64)) for row in ids]
        flat = np.concatenate(distinct) if distinct else np.zeros(0, np.int64)
        if flat.size and (flat.max() >= vocab_size or flat.min() < 0):
            raise InputError(f"the tokenizer produced id {int(flat.max())}, outside the {vocab_size} vocabulary ids")
        df[:] += np.bincount(flat, minlength=vocab_size)
        batch.clear()

    for text in texts:
        batch.append(text)
        n += 1
        if len(batch) == chunk:
            flush()
    if batch:
        flush()
    return df, n


def _tokenizer_and_size(tokenizer, vocab_size: int | None) -> tuple[Any, int]:
    """(the tokenizer, the vocabulary size) of a tokenizer, an encoder holding one (its ``vocab_size`` is taken
    too), or a model folder / hub id / offline alias."""
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = _load_tokenizer(str(tokenizer))
    elif hasattr(tokenizer, "tokenizer") and hasattr(tokenizer, "vocab_size"):
        vocab_size = vocab_size or tokenizer.vocab_size
        tokenizer = tokenizer.tokenizer
    return tokenizer, int(vocab_size or len(tokenizer))


class StaticQueryEncoder(VocabularyTerms, nn.Module):
    """Query encoder of one weight per vocabulary id (docs/design.md): the query-side interface of
    :class:`~lsr_eval.models.encoder.SpladeEncoder` (``tokenize``, ``forward``, ``encode``, ``terms``,
    ``special_ids``, ``vocab_size``, ``max_length``, ``sparsify``, ``resolved_precision``, ``describe``,
    ``save_pretrained``). ``weight`` is a buffer, never trained; ``source`` records where it came from."""

    runtime = "static"
    kind = "static"

    def __init__(self, weight, tokenizer, max_length: int = 64, *, sparsify: Sparsify = Sparsify(),
                 source: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        w = torch.as_tensor(np.asarray(weight, dtype=np.float32)).flatten().clone()
        if w.numel() == 0 or not torch.isfinite(w).all() or (w < 0).any():
            raise InputError(f"{dict(source or {}).get('path', 'static query weights')}: expected finite, "
                             f"non-negative weights, one per vocabulary id")
        check("max_length", max_length, int, MAX_LENGTH)
        check("sparsify", sparsify, Sparsify, SPARSIFY)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.sparsify = sparsify
        self.source = dict(source or {})
        self.precision = "fp32"
        special = [i for i in sorted(set(tokenizer.all_special_ids)) if 0 <= i < w.numel()]
        w[special] = 0.0                 # special tokens carry no lexical meaning (OpenSearch drops them too)
        self.register_buffer("weight", w)
        self._table = w.numpy()          # the lookup of the query path (the buffer's memory while on the CPU)
        self._terms: list[str] | None = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self._tok = None
        if backend is not None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_str(backend.to_str())
            tok.no_padding()
            tok.enable_truncation(max_length, strategy="longest_first",
                                  direction=getattr(tokenizer, "truncation_side", "right"))
            self._tok = tok

    # -- constructors -------------------------------------------------------------------------------------------
    @classmethod
    def from_idf(cls, dataset, tokenizer, *, work_dir: str | os.PathLike | None = None,
                 vocab_size: int | None = None, max_length: int = 64,
                 sparsify: Sparsify = Sparsify()) -> StaticQueryEncoder:
        """The corpus IDF of ``dataset`` (a :class:`~lsr_eval.data.datasets.Dataset`) on ``tokenizer``: a
        tokenizer, an encoder holding one (its ``vocab_size`` is taken too), or a model folder / hub id / offline
        alias. Counted once per (corpus, tokenizer) and cached under ``work_dir`` (default: the work folder)."""
        tokenizer, size = _tokenizer_and_size(tokenizer, vocab_size)
        key = {"stage": "idf", "corpus": dataset.corpus_key(), "tokenizer_sha256": tokenizer_fingerprint(tokenizer),
               "vocab_size": size, "counted_on": "contents, no special tokens, no truncation"}
        slot = cache_slot(default_work(work_dir), "idf", key, dataset.corpus_label())

        def build() -> None:
            docs = dataset.docs()
            df, n = document_frequencies((d.contents for d in docs), tokenizer, size)
            read = dataset.doc_stats.read
            if read and read != n:
                raise InputError(f"{slot}: documents read ({read}) != documents counted ({n})")
            if n == 0:
                raise InputError(f"{dataset.describe().get('name', 'dataset')}: the corpus has no documents; "
                                 f"the IDF needs at least one")
            slot.mkdir(parents=True, exist_ok=True)
            np.save(slot / "df.npy", df)
            write_manifest(slot, "idf", key, counts={"documents": n, "ids_seen": int((df > 0).sum())},
                           formula=IDF_FORMULA, outputs=["df.npy"])
            log.info("IDF of %d documents counted into %s", n, slot)

        manifest = cached(slot, key, build=build)
        try:
            df = np.load(slot / "df.npy")
        except (OSError, ValueError) as e:
            raise InputError(f"{slot}/df.npy: unreadable ({e}); remove {slot} to recount it") from None
        n = int(manifest["counts"]["documents"])
        if df.shape != (size,):
            raise InputError(f"{slot}/df.npy: {df.shape} counts for {size} vocabulary ids; remove {slot}")
        return cls(rsj_idf(df, n), tokenizer, max_length, sparsify=sparsify,
                   source={"kind": IDF, "formula": IDF_FORMULA, "documents": n, "corpus": dataset.corpus_key(),
                           "tokenizer_sha256": key["tokenizer_sha256"], "cache": str(slot)})

    @classmethod
    def binary(cls, tokenizer, *, vocab_size: int | None = None, max_length: int = 64,
               sparsify: Sparsify = Sparsify()) -> StaticQueryEncoder:
        """Weight 1 for every vocabulary id (special tokens 0): a query is the binary bag of its tokens, as
        naver/splade's ``SpladeDoc`` builds it (``generate_bow``, then pad, CLS and SEP zeroed). ``tokenizer``: a
        tokenizer or an encoder holding one (its ``vocab_size`` is taken too)."""
        tokenizer, size = _tokenizer_and_size(tokenizer, vocab_size)
        return cls(np.ones(size, dtype=np.float32), tokenizer, max_length, sparsify=sparsify,
                   source={"kind": BINARY, "rule": BINARY_RULE,
                           "tokenizer_sha256": tokenizer_fingerprint(tokenizer)})

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, max_length: int | None = None, *,
                        sparsify: Sparsify | None = None) -> StaticQueryEncoder:
        """A learned table from a folder or hub id in one of the layouts of docs/design.md. ``max_length`` and
        ``sparsify`` left None take the saved values, else 64 and Sparsify()."""
        folder = _local_folder(str(path))
        saved = read_json_object(folder / STATIC_CONFIG)
        if saved is not None and saved.get("format") != FORMAT:
            raise InputError(f"{folder / STATIC_CONFIG}: not an lsr-eval static query encoder "
                             f"(expected \"format\": \"{FORMAT}\")")
        module = folder if saved is not None or (folder / IDF_JSON).is_file() else _st_module_folder(folder)
        tokenizer = _load_tokenizer(str(module))
        config = read_json_object(module / "config.json") or {}
        json_file = module / IDF_JSON
        if saved is None and isinstance(config.get("path"), str) and config["path"].endswith(".json"):
            json_file = module / config["path"]
        if json_file.is_file():
            weight = _weights_from_json(json_file, tokenizer, int((saved or {}).get("vocab_size", len(tokenizer))))
            kind = "lsr-eval" if saved is not None else "opensearch-idf-json"
        else:
            weight = _weights_from_module(module)
            kind = "sentence-transformers-static"
        source = {**(saved or {}).get("source", {}), "kind": (saved or {}).get("source", {}).get("kind", kind),
                  "path": str(path)}
        if max_length is None:
            max_length = int((saved or {}).get("max_length", 64))
        if sparsify is None:
            sparsify = Sparsify.from_dict((saved or {}).get("sparsify"))
        return cls(weight, tokenizer, max_length, sparsify=sparsify, source=source)

    # -- what the SPLADE encoder has ------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self.weight.shape[0])

    @property
    def device(self) -> torch.device:
        return self.weight.device

    @property
    def bf16(self) -> bool:
        return False

    def resolved_precision(self, requested: str | None = None):
        """Always fp32: a table lookup has no lower-precision path (``requested`` is validated, not used)."""
        if requested is not None:
            resolve_precision(requested, self.device)
        return resolve_precision("fp32", self.device)

    def _apply(self, fn, *args, **kwargs):
        out = super()._apply(fn, *args, **kwargs)
        self._table = self.weight.detach().cpu().numpy()
        return out

    # -- encoding -----------------------------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str]):
        """Padded, truncated ``BatchEncoding`` (PyTorch tensors) of ``texts``."""
        return self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                              return_tensors="pt")

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """B x V float32 weights: presence of each id among the real tokens x its weight (no gradient)."""
        presence = torch.zeros(input_ids.shape[0], self.vocab_size, device=input_ids.device)
        presence.scatter_add_(1, input_ids, attention_mask.to(presence.dtype))
        return presence.clamp_(max=1.0) * self.weight

    def row(self, ids: Sequence[int], rule: Sparsify | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(vocabulary ids ascending, float32 weights > 0)`` of one token id sequence, sparsified by ``rule``
        (default: the encoder's) as :meth:`Sparsify.apply` does: threshold, then the top-k (ties: lower id)."""
        rule = self.sparsify if rule is None else rule
        idx = np.unique(np.asarray(ids, dtype=np.int64))
        values = self._table[idx]
        keep = values > rule.threshold
        idx, values = idx[keep], values[keep]
        if rule.top_k is not None and len(values) > rule.top_k:
            top = np.sort(np.argsort(-values, kind="stable")[:rule.top_k])
            idx, values = idx[top], values[top]
        return idx, values

    def _ids(self, text: str) -> tuple[list[int], bool]:
        if self._tok is not None:
            enc = self._tok.encode(text)
            return enc.ids, bool(enc.overflowing)
        ids = self.tokenizer(text, truncation=False)["input_ids"]
        return ids[:self.max_length], len(ids) > self.max_length

    def encode(self, texts: Sequence[str], batch_size: int = 32, *, bf16: bool | None = None,
               sparse: bool = False, sparsify: Sparsify | None = None, precision: str | None = None):
        """As :meth:`SpladeEncoder.encode`: an :class:`~lsr_eval.models.encoder.Encoded` of ``texts`` in order
        (``batch_size``, ``bf16`` and ``precision`` are checked, not used: the lookup is exact in float32)."""
        import scipy.sparse as sp

        check("batch_size", batch_size, int, BATCH_SIZE)
        self.resolved_precision(precision)
        rule = self.sparsify if sparsify is None else sparsify
        check("sparsify", rule, Sparsify, SPARSIFY)
        texts = list(texts)
        n_tokens = np.zeros(len(texts), dtype=np.int64)
        truncated = np.zeros(len(texts), dtype=bool)
        rows_idx, rows_val = [], []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"text {i}: expected a string, got {type(text).__name__}")
            ids, truncated[i] = self._ids(text)
            n_tokens[i] = len(ids)
            idx, val = self.row(ids, rule)
            rows_idx.append(idx)
            rows_val.append(val)
        indptr = np.zeros(len(texts) + 1, dtype=np.int32)
        np.cumsum([len(r) for r in rows_idx], out=indptr[1:])
        indices = np.concatenate(rows_idx).astype(np.int32) if texts else np.zeros(0, np.int32)
        data = np.concatenate(rows_val).astype(np.float32) if texts else np.zeros(0, np.float32)
        weights = sp.csr_matrix((data, indices, indptr), shape=(len(texts), self.vocab_size), dtype=np.float32)
        return Encoded(weights if sparse else torch.from_numpy(weights.toarray()), n_tokens, truncated)

    # -- records and files --------------------------------------------------------------------------------------
    def describe(self) -> dict:
        """What a manifest / ``splade_config.json`` records about this encoder."""
        return {"kind": self.kind, "source": {k: v for k, v in self.source.items() if k != "cache"},
                "vocab_size": self.vocab_size, "max_length": self.max_length, "sparsify": self.sparsify.to_dict(),
                "weights_sha256": hashlib.sha256(self._table.tobytes()).hexdigest(),
                "precision": self.resolved_precision().name}

    def save_pretrained(self, folder: str | os.PathLike) -> Path:
        """``idf.json`` (token -> weight, non-zero weights: the OpenSearch layout), the tokenizer and
        ``static_query.json``; loads back with :meth:`from_pretrained`."""
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save_pretrained(root)
        n = min(len(self.tokenizer), self.vocab_size)
        tokens = self.tokenizer.convert_ids_to_tokens(list(range(n)))
        table = {t: float(self._table[i]) for i, t in enumerate(tokens) if t is not None and self._table[i] > 0}
        lost = int((self._table[n:] > 0).sum())
        if lost:
            raise InputError(f"{root}: {lost} weighted ids have no token string in the tokenizer; cannot save them")
        write_json(root / IDF_JSON, table, indent=None, ensure_ascii=False, newline=False)
        write_json(root / STATIC_CONFIG, {
            "format": FORMAT, "format_version": FORMAT_VERSION, "vocab_size": self.vocab_size,
            "max_length": self.max_length, "sparsify": self.sparsify.to_dict(),
            "source": {k: v for k, v in self.source.items() if k != "cache"}})
        return root


def static_location(name: str | os.PathLike) -> str:
    """``name`` without the :data:`STATIC_PREFIX`."""
    name = str(name)
    return name[len(STATIC_PREFIX):] if name.startswith(STATIC_PREFIX) else name


def is_static_model(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an inference-free model: ``static:<folder or hub id>``, or a local folder
    :meth:`StaticQueryEncoder.from_pretrained` reads (docs/design.md)."""
    if str(path).startswith(STATIC_PREFIX):
        return True
    folder = Path(path)
    if not folder.is_dir():
        return False
    if (folder / STATIC_CONFIG).is_file() or (folder / IDF_JSON).is_file():
        return True
    try:
        _st_module_folder(folder)
    except InputError:
        return False
    return True


def _local_folder(path: str) -> Path:
    """``path`` itself when it is a folder, else the hub snapshot of the id ``path``."""
    if Path(path).is_dir():
        return Path(path)
    if Path(path).exists():
        raise InputError(f"{path}: not a folder (expected a static query model folder or a hub id)")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(path))
    except Exception as e:  # noqa: BLE001 - offline, unknown id, no access: one line, not the hub's traceback
        raise InputError(f"{path}: not a local folder, and the hub could not provide it "
                         f"({type(e).__name__}); download it and pass the folder") from None


def _load_tokenizer(path: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(resolve_model(path))
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: no tokenizer could be loaded ({str(e).splitlines()[0]})") from None


def _st_module_folder(folder: Path) -> Path:
    """The folder of the ``SparseStaticEmbedding`` module that encodes queries: ``folder`` itself (a module
    folder), or, for a whole ``SparseEncoder``, its module (or its Router's query route) of that type."""
    config = folder / "config.json"
    if (folder / "modules.json").is_file():
        for m in load_json(folder / "modules.json"):
            kind = str(m.get("type", "")).rsplit(".", 1)[-1]
            sub = folder / m.get("path", "")
            if kind in _ST_TYPES:
                return sub
            if kind == "Router" and (sub / "router_config.json").is_file():
                router = load_json(sub / "router_config.json")
                for model_id in router.get("structure", {}).get("query", []):
                    if str(router.get("types", {}).get(model_id, "")).rsplit(".", 1)[-1] in _ST_TYPES:
                        return sub / model_id
        raise InputError(f"{folder}: a sentence-transformers model without a SparseStaticEmbedding query module "
                         f"(not an inference-free model)")
    if config.is_file() and any((folder / f).is_file() for f in ("model.safetensors", "pytorch_model.bin")):
        data = load_json(config)
        if isinstance(data, dict) and "frozen" in data and "model_type" not in data:
            return folder
    raise InputError(f"{folder}: not a static query model (expected {STATIC_CONFIG}, {IDF_JSON}, a "
                     f"SparseStaticEmbedding module folder or a sentence-transformers model using one)")


def _weights_from_json(file: Path, tokenizer, vocab_size: int) -> np.ndarray:
    """``{token: weight}`` -> one weight per id (tokens absent weigh 0); unknown tokens are refused."""
    table = load_json(file)
    if not isinstance(table, dict) or not all(isinstance(v, (int, float)) and math.isfinite(v)
                                              for v in table.values()):
        raise InputError(f"{file}: expected a JSON object of token: weight (finite numbers)")
    vocab = tokenizer.get_vocab()
    unknown = [t for t in table if t not in vocab]
    if unknown:
        raise InputError(f"{file}: {len(unknown)} tokens are not in the tokenizer's vocabulary "
                         f"(first: {unknown[0]!r}); use the tokenizer saved beside it")
    weight = np.zeros(max(vocab_size, len(tokenizer)), dtype=np.float32)
    for token, w in table.items():
        weight[vocab[token]] = w
    return weight


def _weights_from_module(folder: Path) -> np.ndarray:
    """The ``weight`` tensor of a ``SparseStaticEmbedding`` module's ``model.safetensors`` or
    ``pytorch_model.bin``."""
    st, pt = folder / "model.safetensors", folder / "pytorch_model.bin"
    try:
        if st.is_file():
            from safetensors.torch import load_file

            state, file = load_file(str(st)), st
        elif pt.is_file():
            state, file = torch.load(pt, map_location="cpu", weights_only=True), pt
        else:
            raise InputError(f"{folder}: no model.safetensors or pytorch_model.bin holding the query weights")
    except (OSError, RuntimeError, ValueError) as e:
        raise InputError(f"{folder}: the weights file is unreadable ({str(e).splitlines()[0]})") from None
    if "weight" not in state or state["weight"].dim() != 1:
        raise InputError(f"{file}: expected a 1-d tensor 'weight' (one weight per vocabulary id), got "
                         f"{sorted(state)}")
    return state["weight"].float().numpy()
