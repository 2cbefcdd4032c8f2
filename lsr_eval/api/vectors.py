"""Texts -> sparse vectors -> an engine's index -> runs: a SPLADE encoder whose document vectors are cached in the
work folder as the pipelines cache them, and an index to search: in the work folder's caches for those vectors, else
temporary unless ``out=`` keeps it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Union

from lsr_eval.data.datasets import Dataset, load_dataset
from lsr_eval.data.types import Document, Query, Run
from lsr_eval.defaults import DEFAULT_SCALE
from lsr_eval.encode.corpus import write_vectors
from lsr_eval.encode.protocol import SparseVectors
from lsr_eval.encode.queries import encode_queries
from lsr_eval.encode.reader import load_vectors
from lsr_eval.encode.splade import SpladeTextEncoder
from lsr_eval.engines.registry import DEFAULT_ENGINE, configure
from lsr_eval.errors import ConfigError, LsrEvalError, OutputExistsError
from lsr_eval.export.documents import COLLECTION_DIR, export_documents
from lsr_eval.export.prune import Prune
from lsr_eval.export.quantize import check_scale
from lsr_eval.export.queries import query_weight_maps
from lsr_eval.manifest import read_manifest, write_manifest
from lsr_eval.models.offline import resolve_model
from lsr_eval.pipeline.result import SystemResult
from lsr_eval.pipeline.reuse import RUN_FILE
from lsr_eval.pipeline.settings import (
    DEPRECATED,
    STAGE_OF,
    STAGES,
    EncodeOptions,
    ExportOptions,
    LoadOptions,
    SearchOptions,
    SpladeSettings,
    without_deprecated,
)
from lsr_eval.pipeline.splade import encoding_keys, ensure_encoding, ensure_encoding_index, run_splade
from lsr_eval.workdir import cache_slot, slot_label, work_dir

if TYPE_CHECKING:
    from lsr_eval.encode.corpus import EncodeSummary

#: Texts to encode: a dataset (its documents, or its queries for :meth:`Splade.encode_queries`), its ``docs``
#: method, documents, queries, ``(id, text)`` pairs, or plain strings (numbered ``0``, ``1``, ...).
Texts = Union[Dataset, Callable[[], Iterable[Any]], Iterable[Union[Document, Query, tuple[str, str], str]]]

__all__ = ["Splade", "Index", "LoadOptions", "EncodeOptions", "ExportOptions", "SearchOptions"]


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


def _dataset_of(texts: Texts) -> Dataset | None:
    """The dataset whose documents ``texts`` are (a dataset, or its ``docs`` method), else None."""
    if isinstance(texts, Dataset):
        return texts
    owner = getattr(texts, "__self__", None)
    return owner if isinstance(owner, Dataset) and getattr(texts, "__name__", None) == "docs" else None


class Splade:
    """A SPLADE model (a hub id, a local folder or an offline alias such as ``splade-tiny``) that encodes texts
    into :class:`~lsr_eval.encode.protocol.SparseVectors`; the model is loaded on first use. Its settings are
    typed, one class per stage (:mod:`lsr_eval.pipeline.settings`): ``load`` (:class:`LoadOptions`: query encoder,
    head, rescaling, precision, device), ``encode`` (:class:`EncodeOptions`: token limits, term budgets, batch
    size), and, for :meth:`run`, ``export`` (:class:`ExportOptions`: quantisation, pruning) and ``search``
    (:class:`SearchOptions`: engine, hits)::

        Splade("splade-tiny", encode=EncodeOptions(doc_top_k=1024, query_top_k=256))

    A dataset's documents are encoded into the work folder's encoding cache (``work``, default ``$LSR_EVAL_WORK``
    or ./work), the one ``lsr-eval splade`` and the benchmarks use, keyed by the model's files, the encoder's
    settings and the corpus: a second :meth:`encode` of that corpus with those settings loads the vectors from it
    (and says so on the log). ``cache=False``, or texts that are not a dataset, encode in memory and write nothing.

    Settings given flat (``Splade(model, doc_top_k=1024)``, as before the stages) still work for one release,
    with a DeprecationWarning naming their stage.
    """

    def __init__(self, model: str, *, load: LoadOptions | None = None, encode: EncodeOptions | None = None,
                 export: ExportOptions | None = None, search: SearchOptions | None = None,
                 work: str | os.PathLike | None = None, cache: bool = True, **flat: Any) -> None:
        given = {"load": load, "encode": encode, "export": export, "search": search}
        named = [k for k in flat if k not in DEPRECATED]   # a deprecated name warns on its own
        flat = without_deprecated(flat)
        if flat:
            unknown = sorted(set(flat) - set(STAGE_OF))
            if unknown:
                names = {stage: ", ".join(n for n, s in STAGE_OF.items() if s == stage) for stage in STAGES}
                by_stage = "; ".join(f"{stage}={STAGES[stage].__name__}({names[stage]})" for stage in STAGES)
                raise ConfigError(f"Splade: unknown setting {unknown[0]!r}; settings by stage: {by_stage}")
            clash = sorted(k for k in flat if given[STAGE_OF[k]] is not None)
            if clash:
                raise ConfigError(f"Splade: {clash[0]} is given both flat and in {STAGE_OF[clash[0]]}=: give it once, "
                                  f"in {STAGES[STAGE_OF[clash[0]]].__name__}")
            if named:
                warnings.warn("Splade(model, " + ", ".join(f"{k}=..." for k in named) + "): settings given flat are "
                              "deprecated; give them by stage: " + ", ".join(sorted({
                                  f"{STAGE_OF[k]}={STAGES[STAGE_OF[k]].__name__}(...)" for k in named})),
                              DeprecationWarning, stacklevel=2)
        settings = SpladeSettings(resolve_model(model), **{name: value if value is not None else STAGES[name]()
                                                           for name, value in given.items()}).replace(**flat)
        if settings.load.query_model:
            settings = settings.replace(query_model=resolve_model(settings.load.query_model))
        self.settings = settings
        self.work, self.cache = work, cache
        #: What the last :meth:`encode` did with the cache (an :class:`~lsr_eval.encode.corpus.EncodeSummary`:
        #: its ``folder``; ``shards_written`` 0 when it loaded every vector from there), None when in memory.
        self.last_encoding: EncodeSummary | None = None
        self._model: Any = None

    @classmethod
    def of(cls, settings: SpladeSettings, *, work: str | os.PathLike | None = None, cache: bool = True) -> Splade:
        """The model of whole :class:`~lsr_eval.pipeline.settings.SpladeSettings` (as the command line makes them)."""
        return cls(settings.model, load=settings.load, encode=settings.encode, export=settings.export,
                   search=settings.search, work=work, cache=cache)

    @property
    def model(self) -> Any:
        """The loaded :class:`lsr_eval.models.splade.SpladeModel` (document and query encoders)."""
        if self._model is None:
            from lsr_eval.pipeline.splade import load_model

            self._model = load_model(self.settings)
        return self._model

    def _encode(self, texts: Texts, documents: bool) -> SparseVectors:
        encoder = self.model.document if documents else self.model.query
        return encode_queries(_as_queries(texts, documents), SpladeTextEncoder(encoder),
                              batch_size=self.settings.encode.batch_size).vectors

    def encode(self, docs: Texts) -> SparseVectors:
        """Document vectors (the document encoder on ``title + " " + text``), in input order; a dataset's are
        read from (or written to) the work folder's encoding cache (see the class)."""
        dataset = _dataset_of(docs) if self.cache else None
        if dataset is None:
            self.last_encoding = None
            return self._encode(docs, documents=True)

        self.last_encoding = ensure_encoding(dataset, self.model, self.settings, work_dir(self.work))
        return load_vectors(self.last_encoding.folder)

    def encode_queries(self, queries: Texts) -> SparseVectors:
        """Query vectors (the query encoder), in input order, in memory."""
        return self._encode(queries, documents=False)

    def run(self, dataset: Dataset | str | os.PathLike, out: str | os.PathLike | None = None, *, threads: int = 2,
            overwrite: bool = False, evaluate: bool = True, run_file: str = RUN_FILE) -> SystemResult:
        """The whole chain on ``dataset`` (a dataset or its spec), as ``lsr-eval splade``: its documents encoded
        (the work folder's encoding cache), exported and indexed (its caches, ``search``'s engine), its queries
        encoded and searched, the run evaluated on the dataset's official measures (``evaluate=False``: not
        evaluated, no relevance grade used). With ``out``, the run (``run_file``), metrics.json, the query vectors
        and a manifest are written there, and a second call with the same settings reuses them; without, nothing
        is written beside the caches. Returns a :class:`~lsr_eval.pipeline.result.SystemResult` (its ``metrics``,
        ``run``, and ``folder``: None without ``out``)."""
        ds = load_dataset(os.fspath(dataset)) if isinstance(dataset, (str, os.PathLike)) else dataset
        work = work_dir(self.work)
        if out is not None:
            result = run_splade(ds, out, work, self.settings, threads=threads, overwrite=overwrite,
                                evaluate=evaluate, run_file=run_file)
        else:
            parent = work / "api"
            parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix="lsr_eval-splade-", dir=parent) as tmp:
                result = run_splade(ds, Path(tmp) / "run", work, self.settings, threads=threads, evaluate=evaluate,
                                    run_file=run_file)
            result = dataclasses.replace(result, folder=None)
        from lsr_eval.models.static_query import IDF

        if result.model is not None and self.settings.load.query_model != IDF:  # an IDF model is its corpus's
            self._model = result.model
        return result


def _encoding_slot(vectors: SparseVectors) -> tuple[Path, dict[str, Any]] | None:
    """The work folder's encoding slot (``<work>/encodings/<label>-<hash of its key>``) that ``vectors`` are, read
    and unchanged, with its key; None for any other vectors."""
    folder = vectors.source_folder()
    if folder is None:
        return None
    slot = Path(folder)
    key = (read_manifest(slot) or {}).get("experiment")
    if not isinstance(key, dict) or cache_slot(slot.parent.parent, "encodings", key, slot_label(slot)) != slot:
        return None
    return slot, key


def _remove(folder: Path, parent: Path | None) -> None:
    """Remove an index's temporary ``folder``, and ``parent`` (the work folder's ``api``) when it is left empty."""
    shutil.rmtree(folder, ignore_errors=True)
    if parent is not None:
        try:
            parent.rmdir()
        except OSError:  # another index's folder is still there
            pass


class Index:
    """An engine's impact index of document vectors, searched with query vectors. Build it with :meth:`build`.

    An index built without ``out=`` lives in a temporary folder, removed by :meth:`close`, at the end of a
    ``with`` block, or when the index is garbage collected (at the latest when the interpreter exits); one of a
    cached encoding's vectors lives in the work folder's caches (see :meth:`build`), which closing leaves in place.
    """

    def __init__(self, engine: Any, path: Path, scale: float, counts: dict[str, Any],
                 search_options: dict[str, Any], temporary: Path | None = None,
                 temporary_parent: Path | None = None) -> None:
        self.engine, self.path, self.scale, self.counts = engine, path, scale, counts
        self.search_options = search_options
        self._cleanup = (weakref.finalize(self, _remove, temporary, temporary_parent)
                         if temporary is not None else None)
        self.closed = False

    @classmethod
    def build(cls, vectors: SparseVectors, engine: str = DEFAULT_ENGINE, scale: float = DEFAULT_SCALE,
              work: str | os.PathLike | None = None, threads: int = 2, out: str | os.PathLike | None = None,
              **options: Any) -> Index:
        """Quantise ``vectors`` (weights x ``scale``, rounded) and index them with ``engine`` (any engine of
        :data:`lsr_eval.engines.registry.ENGINES`, which ``lsr-eval index --help`` lists; ``options`` are its build
        settings and search knobs, as ``--engine-option``).

        Every engine indexes files: the vectors, their JSON collection and the index go to ``out`` (a new or
        empty folder, kept, with a manifest) or else to a temporary folder (under ``<work>/api`` when ``work`` is
        given, else the system's temporary folder) that :meth:`close` removes. Vectors that are, unchanged, an
        encoding of the work folder's cache (:meth:`Splade.encode` of a dataset) are exported and indexed into
        that work folder's caches instead, as ``lsr-eval splade`` does (and a second build reuses them);
        ``dataclasses.replace(vectors, source=None)`` builds a temporary index of them.
        """
        check_scale(scale)
        eng, build_options, search_options = configure(engine, options)
        encoding = _encoding_slot(vectors) if out is None else None
        if encoding is not None:
            return cls._of_encoding(*encoding, eng, engine, build_options, search_options, scale, threads)
        parent: Path | None = None
        if out is not None:
            folder = Path(out)
            if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
                raise OutputExistsError(f"{folder} is not an empty folder: choose another one for the index")
            folder.mkdir(parents=True, exist_ok=True)
        else:
            if work is not None:
                parent = work_dir(work) / "api"
                parent.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=f"lsr_eval-index-{engine}-", dir=parent))
        key = {"stage": "api-index", "documents": len(vectors.ids)}
        try:
            write_vectors(vectors, folder / "vectors", key)
            exported = export_documents(folder / "vectors", folder / "collection", key, scale=scale,
                                        progress=False)
            counts = eng.build(folder / "collection" / COLLECTION_DIR, folder / "index", threads=threads)
            if counts.documents_indexed != exported["counts"]["documents_out"]:
                raise LsrEvalError(f"{folder}: documents exported ({exported['counts']['documents_out']}) != "
                                   f"documents indexed ({counts.documents_indexed})")
        except BaseException:
            if out is None:
                _remove(folder, parent)
            raise
        all_counts = {"export": exported["counts"], "index": counts.to_dict()}
        if out is not None:
            write_manifest(folder, "api-index", {**key, "engine": engine, "engine_build": build_options,
                                                 "scale": scale},
                           counts=all_counts, engine=eng.describe(), index=str(folder / "index"))
            return cls(eng, folder / "index", scale, all_counts, search_options)
        return cls(eng, folder / "index", scale, all_counts, search_options, temporary=folder,
                   temporary_parent=parent)

    @classmethod
    def _of_encoding(cls, encoding: Path, enc_key: dict[str, Any], eng: Any, engine: str,
                     build_options: dict[str, Any], search_options: dict[str, Any], scale: float, threads: int
                     ) -> Index:
        """The index of the work folder's encoding slot ``encoding`` (made from ``enc_key``), exported and indexed
        into that work folder's caches under the keys the pipelines use (reused when there)."""
        scale = float(scale)  # the pipelines' key holds a float: scale=100 is their slot too
        keys = encoding_keys(enc_key, slot_label(encoding), scale, Prune(), engine, build_options)
        stages = ensure_encoding_index(encoding.parent.parent, encoding, keys, eng, threads)
        counts = {"export": stages["export"]["counts"], "index": stages["index"]["counts"]}
        return cls(eng, Path(stages["index_dir"]), scale, counts, search_options)

    def search(self, queries: SparseVectors, k: int = 1000, threads: int = 2, remove_query: bool = False) -> Run:
        """The top ``k`` documents of each query (vectors quantised with the index's scale); ``remove_query`` drops
        hits whose document id is the query id (BEIR's convention)."""
        if self.closed:
            raise ConfigError("this Index is closed: build it again to search")
        maps = query_weight_maps(queries, self.scale)
        with self.engine.open(self.path, **self.search_options) as searcher:
            run, _ = searcher.batch_search(maps, k=k, threads=threads, remove_query=remove_query)
        return run

    def close(self) -> None:
        """Remove the temporary folder of an index built without ``out=`` (files in ``out`` and in the work
        folder's caches are kept); the index cannot be searched afterwards. Closing twice does nothing."""
        self.closed = True
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
