"""Texts for masked-LM training and its held-out evaluation.

The texts of a :class:`~lsr_eval.train.config.MiddleDataConfig`: the documents (title + text) of each dataset, in
corpus order, then the queries of each qrels split named in ``queries`` that the dataset has, in file order;
datasets in config order. Empty texts are skipped and exact duplicates are dropped (the first occurrence is kept),
so a text cannot be both trained on and held out.

Hold-out, by text (a document or a query is kept whole on one side): with ``n`` distinct texts,
``numpy.random.default_rng(holdout_seed).permutation(n)``; the first ``round(holdout * n)`` positions are held out,
the others trained on, each side in reading order. The split depends on the data and the seed only, not on the
training seed, so a training run and a later ``lsr-eval mlm-eval`` rebuild the same held-out texts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lsr_eval.data.datasets import load_dataset
from lsr_eval.errors import InputError
from lsr_eval.train.config import MiddleDataConfig


@dataclass
class MlmTexts:
    """Training texts, held-out texts and what was read (``counts``, for the manifest)."""

    train: list[str]
    heldout: list[str]
    counts: dict[str, Any] = field(default_factory=dict)


def texts_sha256(texts: list[str]) -> str:
    """sha256 of the texts joined by newlines: identifies a held-out set in manifests."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def _query_texts(spec: str, split: str) -> list[str] | None:
    """Query texts of ``spec``'s qrels split ``split``; None when a BEIR folder has no such split."""
    if Path(spec).is_dir() and not (Path(spec) / "qrels" / f"{split}.tsv").is_file():
        return None
    return [q.text for q in load_dataset(spec, split).queries()]


def _any_split(spec: str) -> str | None:
    """A qrels split to open a BEIR folder's corpus with (its documents do not depend on it): ``train`` when the
    folder has it, else the first by name; None for registry and ir_datasets names."""
    if not Path(spec).is_dir():
        return None
    splits = sorted(p.stem for p in (Path(spec) / "qrels").glob("*.tsv"))
    return "train" if "train" in splits or not splits else splits[0]


def read_texts(data: MiddleDataConfig) -> list[tuple[str, str]]:
    """``(source, text)`` in reading order (module doc), before deduplication; ``source`` is
    ``<dataset>:docs`` or ``<dataset>:queries/<split>``. Empty texts are skipped."""
    specs = [data.dataset] if isinstance(data.dataset, str) else list(data.dataset)
    out: list[tuple[str, str]] = []
    found_splits: set[str] = set()
    for spec in specs:
        ds = load_dataset(spec, data.split or _any_split(spec))
        n = 0
        for doc in ds.docs():
            if data.max_docs is not None and n >= data.max_docs:
                break
            n += 1
            if doc.contents.strip():
                out.append((f"{spec}:docs", doc.contents))
        for split in data.queries or []:
            texts = _query_texts(spec, split)
            if texts is None:
                continue
            found_splits.add(split)
            out.extend((f"{spec}:queries/{split}", t) for t in texts if t.strip())
    missing = sorted(set(data.queries or []) - found_splits)
    if missing:
        raise InputError(f"data.queries: no dataset of {', '.join(specs)} has the qrels split(s) "
                         f"{', '.join(missing)}")
    return out


def split_holdout(n: int, fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of the ``n`` texts held out (module doc)."""
    held = np.zeros(n, dtype=bool)
    held[np.random.default_rng(seed).permutation(n)[:int(round(fraction * n))]] = True
    return held


def collect_texts(data: MiddleDataConfig) -> MlmTexts:
    """The training and held-out texts of ``data`` (module doc), with counts per source."""
    raw = read_texts(data)
    seen: set[str] = set()
    texts, sources = [], []
    per_source: dict[str, dict[str, int]] = {}
    for source, text in raw:
        c = per_source.setdefault(source, {"read": 0, "duplicates_dropped": 0})
        c["read"] += 1
        if text in seen:
            c["duplicates_dropped"] += 1
            continue
        seen.add(text)
        texts.append(text)
        sources.append(source)
    if not texts:
        raise InputError("middle training: no text to train on")
    held = split_holdout(len(texts), data.holdout, data.holdout_seed)
    for source, h in zip(sources, held):
        key = "heldout" if h else "train"
        per_source[source][key] = per_source[source].get(key, 0) + 1
    train = [t for t, h in zip(texts, held) if not h]
    heldout = [t for t, h in zip(texts, held) if h]
    if not train:
        raise InputError(f"data.holdout={data.holdout} leaves no text to train on ({len(texts)} texts)")
    counts = {"sources": per_source, "texts_read": len(raw), "duplicates_dropped": len(raw) - len(texts),
              "distinct_texts": len(texts), "train_texts": len(train), "heldout_texts": len(heldout),
              "holdout": data.holdout, "holdout_seed": data.holdout_seed,
              "heldout_sha256": texts_sha256(heldout) if heldout else None}
    return MlmTexts(train, heldout, counts)
