"""Texts -> sparse vectors -> an engine's index -> runs, in memory: a SPLADE encoder and an index to search."""

from __future__ import annotations

import os
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Iterable, Union

from lsr_eval.data.datasets import Dataset
from lsr_eval.data.types import Document, Query, Run
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.encode.protocol import SparseVectors
from lsr_eval.errors import ConfigError

#: Texts to encode: a dataset (its documents, or its queries for :meth:`Splade.encode_queries`), its ``docs``
#: method, documents, queries, ``(id, text)`` pairs, or plain strings (numbered ``0``, ``1``, ...).
Texts = Union[Dataset, Callable[[], Iterable[Any]], Iterable[Union[Document, Query, tuple[str, str], str]]]

__all__ = ["Splade", "Index"]


def _as_queries(texts: Texts, documents: bool) -> list[Query]:
    """The texts to encode as ``Query(id, text)`` records (a document's text is its ``contents``: title + text)."""
    if isinstance(texts, Dataset):
        texts = texts.docs() if documents else texts.queries()
    elif callable(texts):
        texts = texts()
    out = []
    for i, t in enumerate(texts):
        if isinstance(t, Document):
            out.append(Query(t.id, t.contents))
        elif isinstance(t, Query):
            out.append(t)
        elif isinstance(t, str):
            out.append(Query(str(i), t))
        elif isinstance(t, tuple) and len(t) == 2:
            out.append(Query(str(t[0]), str(t[1])))
        else:
            raise ConfigError(f"cannot encode item {i} ({type(t).__name__}): give documents, queries, (id, text) "
                              "pairs or strings")
    return out


class Splade:
    """A SPLADE model (a hub id, a local folder or an offline alias such as ``splade-tiny``) that encodes texts
    into :class:`~lsr_eval.encode.protocol.SparseVectors` in memory. ``settings`` are those of
    :class:`lsr_eval.experiments.splade.SpladeSettings` (``max_length_d``, ``doc_top_k``, ``precision``,
    ``device``, ``batch_size``, ...); the model is loaded on first use."""

    def __init__(self, model: str, **settings: Any) -> None:
        from lsr_eval.experiments.splade import SpladeSettings
        from lsr_eval.models.offline import resolve_model

        known = {f.name for f in fields(SpladeSettings)} - {"model"}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ConfigError(f"Splade: unknown settings {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        if settings.get("query_model"):
            settings["query_model"] = resolve_model(settings["query_model"])
        self.settings = SpladeSettings(model=resolve_model(model), **settings)
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The loaded :class:`lsr_eval.models.splade.SpladeModel` (document and query encoders)."""
        if self._model is None:
            from lsr_eval.experiments.splade import load_model

            self._model = load_model(self.settings)
        return self._model

    def _encode(self, texts: Texts, documents: bool) -> SparseVectors:
        from lsr_eval.encode.queries import encode_queries
        from lsr_eval.encode.splade import SpladeTextEncoder

        encoder = self.model.document if documents else self.model.query
        return encode_queries(_as_queries(texts, documents), SpladeTextEncoder(encoder),
                              batch_size=self.settings.batch_size).vectors

    def encode(self, docs: Texts) -> SparseVectors:
        """Document vectors (the document encoder on ``title + " " + text``), in input order."""
        return self._encode(docs, documents=True)

    def encode_queries(self, queries: Texts) -> SparseVectors:
        """Query vectors (the query encoder), in input order."""
        return self._encode(queries, documents=False)


class Index:
    """An engine's impact index of document vectors, searched with query vectors. Build it with :meth:`build`."""

    def __init__(self, engine: Any, path: Path, scale: float, counts: dict[str, Any],
                 search_options: dict[str, Any]) -> None:
        self.engine, self.path, self.scale, self.counts = engine, path, scale, counts
        self.search_options = search_options

    @classmethod
    def build(cls, vectors: SparseVectors, engine: str = "pisa", scale: float = DEFAULT_SCALE,
              work: str | os.PathLike | None = None, threads: int = 2, **options: Any) -> "Index":
        """Quantise ``vectors`` (weights x ``scale``, rounded) and index them with ``engine`` (anserini, pisa,
        seismic; ``options`` are its build settings and search knobs, as ``--engine-option``).

        Every engine indexes files: the vectors, their JSON collection and the index go to a new temporary folder
        under ``<work>/api`` (``work`` default ``$LSR_EVAL_WORK`` or ./work), left there for the index to be opened.
        """
        from lsr_eval.encode.corpus import write_vectors
        from lsr_eval.engines.registry import get_engine, split_options
        from lsr_eval.errors import LsrEvalError
        from lsr_eval.export.documents import COLLECTION_DIR, export_documents
        from lsr_eval.workdir import work_dir

        build_options, search_options = split_options(engine, dict(options))
        eng = get_engine(engine, **build_options)
        eng.check_search(**search_options)
        parent = work_dir(work) / "api"
        parent.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"index-{engine}-", dir=parent))
        key = {"stage": "api-index", "documents": len(vectors.ids)}
        write_vectors(vectors, folder / "vectors", key)
        exported = export_documents(folder / "vectors", folder / "collection", key, scale=scale, progress=False)
        counts = eng.build(folder / "collection" / COLLECTION_DIR, folder / "index", threads=threads)
        if counts.documents_indexed != exported["counts"]["documents_out"]:
            raise LsrEvalError(f"{folder}: documents exported ({exported['counts']['documents_out']}) != documents "
                               f"indexed ({counts.documents_indexed})")
        return cls(eng, folder / "index", scale, {"export": exported["counts"], "index": counts.to_dict()},
                   search_options)

    def search(self, queries: SparseVectors, k: int = 1000, threads: int = 2, remove_query: bool = False) -> Run:
        """The top ``k`` documents of each query (vectors quantised with the index's scale); ``remove_query`` drops
        hits whose document id is the query id (BEIR's convention)."""
        from lsr_eval.export.queries import query_weight_maps

        maps = query_weight_maps(queries, self.scale)
        with self.engine.open(self.path, **self.search_options) as searcher:
            run, _ = searcher.batch_search(maps, k=k, threads=threads, remove_query=remove_query)
        return run
