"""Datasets: a corpus stream, queries and qrels, from a registry name, ``irds:<id>``, or a local BEIR folder.

Documents are streamed and validated on the way (duplicate ids and invalid records are errors that name the file
and line or the id; documents with empty text are kept, counted and warned about), so no stage needs the whole
corpus in memory. What was read is counted in :class:`CorpusStats` for the manifests, with the judged documents
(qrels) that the corpus lacks: they can never be retrieved, so they lower recall for every system alike.
"""

from __future__ import annotations

import json
import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import AbstractSet, Any, Iterable, Iterator

from lsr_eval.data.fingerprint import corpus_fingerprint, qrels_fingerprint, queries_fingerprint
from lsr_eval.data.irds_cache import irds_home
from lsr_eval.data.registry import BEIR_MEASURES, Benchmark, LocalFiles, split_spec, unknown_dataset_message
from lsr_eval.data.trec_files import read_qrels, read_topics_tsv
from lsr_eval.data.types import Document, Qrels, Query
from lsr_eval.errors import InputError, LsrEvalError

log = logging.getLogger(__name__)

#: Measures for a dataset that the registry does not name.
DEFAULT_MEASURES = ("nDCG@10", "RR@10", "R@100", "R@1000", "MAP")
#: How many offending ids a warning or manifest lists.
MAX_LISTED = 20


@dataclass
class CorpusStats:
    """Counts of one pass over a corpus."""

    read: int = 0
    empty: int = 0
    empty_ids: list[str] = field(default_factory=list)
    judged: int | None = None  #: judged documents (qrels) looked for; None until a whole pass with qrels is done
    judged_missing: int = 0  #: judged documents absent from the corpus
    judged_missing_ids: list[str] = field(default_factory=list)  #: the first of them, sorted

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"documents_read": self.read, "empty_documents": self.empty,
                               "empty_document_ids": self.empty_ids[:MAX_LISTED]}
        if self.judged is not None:
            out.update(judged_documents_check(self.judged, self.judged_missing, self.judged_missing_ids))
        return out


def judged_documents_check(judged: int, missing: int, missing_ids: list[str]) -> dict[str, Any]:
    """The manifest entries for judged documents absent from the corpus."""
    return {"judged_documents": judged, "judged_documents_missing_from_corpus": missing,
            "judged_documents_missing_ids": missing_ids[:MAX_LISTED]}


def _missing_judged(judged: AbstractSet[str], found: AbstractSet[str], where: str) -> list[str]:
    """Judged document ids not in ``found``, sorted; warns with the count and the first ids."""
    missing = sorted(judged - found)
    if missing:
        log.warning("%s: %d of %d judged documents are not in the corpus (they cannot be retrieved): %s", where,
                    len(missing), len(judged), ", ".join(missing[:MAX_LISTED]))
    return missing


def validated(docs: Iterable[tuple[Document, str]], stats: CorpusStats,
              judged: AbstractSet[str] | None = None) -> Iterator[Document]:
    """Yield documents, refusing duplicate ids and counting empty ones; items are (doc, where) with ``where`` naming
    the file and line (or the source) for messages. With ``judged`` (the qrels' document ids), a whole pass also
    counts and names those absent from the corpus."""
    seen: set[str] = set()
    for doc, where in docs:
        if doc.id in seen:
            raise InputError(f"{where}: duplicate document id {doc.id!r}")
        seen.add(doc.id)
        stats.read += 1
        if not doc.contents.strip():
            stats.empty += 1
            if len(stats.empty_ids) < MAX_LISTED:
                stats.empty_ids.append(doc.id)
            if stats.empty <= 5:
                log.warning("%s: document %r has empty text (indexed, counted)", where, doc.id)
        yield doc
    if stats.empty:
        log.warning("%d documents with empty text (first: %s)", stats.empty, ", ".join(stats.empty_ids[:5]))
    if judged is not None:
        missing = _missing_judged(judged, seen, "corpus")
        stats.judged, stats.judged_missing, stats.judged_missing_ids = len(judged), len(missing), missing[:MAX_LISTED]


def jsonl_object(raw: bytes, path: str | os.PathLike, lineno: int) -> dict[str, Any] | None:
    """The object on line ``lineno`` of a JSON-lines file (None when blank); invalid UTF-8 or JSON, or another
    value than an object, is an error naming file and line."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}:{lineno}: invalid UTF-8 ({e.reason} at byte {e.start})") from None
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
    return obj


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line, read by :func:`jsonl_object`."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            obj = jsonl_object(raw, path, lineno)
            if obj is not None:
                yield lineno, obj


def _field(obj: dict, key: str, where: str, required: bool = True) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise InputError(f"{where}: missing field {key!r}")
        return ""
    if not isinstance(value, (str, int)):
        raise InputError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
    return str(value)


class Dataset(ABC):
    """A corpus, its queries and qrels, with the measures and search conventions to report them."""

    name: str
    measures: tuple[str, ...] = DEFAULT_MEASURES
    remove_query: bool = False

    def __init__(self) -> None:
        self.doc_stats = CorpusStats()
        self._queries: list[Query] | None = None
        self._qrels: Qrels | None = None

    @abstractmethod
    def _raw_docs(self) -> Iterator[tuple[Document, str]]: ...

    @abstractmethod
    def _load_queries(self) -> list[Query]: ...

    @abstractmethod
    def _load_qrels(self) -> Qrels: ...

    @abstractmethod
    def corpus_key(self) -> dict[str, Any]:
        """What identifies the corpus (for caching indexes and encodings across splits)."""

    def corpus_label(self) -> str:
        """A readable name of the corpus (the same for every split), for cache folder names."""
        key = self.corpus_key()
        return Path(key["path"]).parent.name if "path" in key else str(key.get("docs_id", self.name))

    def docs(self) -> Iterator[Document]:
        """Validated document stream; counts land in ``self.doc_stats`` (reset at each pass)."""
        self.doc_stats = CorpusStats()
        return validated(self._raw_docs(), self.doc_stats, self._judged_doc_ids())

    def _judged_doc_ids(self) -> set[str] | None:
        """Document ids of the qrels, or None when the dataset has no readable qrels (a corpus alone)."""
        try:
            return {d for judgments in self.qrels().values() for d in judgments}
        except (LsrEvalError, OSError) as e:
            log.info("%s: no qrels (%s): judged documents are not checked against the corpus", self.name, e)
            return None

    def judged_documents_check(self) -> dict[str, Any]:
        """Judged documents absent from the corpus: from the last whole pass over :meth:`docs` when there was one,
        else from a pass over the document ids only (indexes and encodings were reused)."""
        if self.doc_stats.judged is not None:
            s = self.doc_stats
            return judged_documents_check(s.judged, s.judged_missing, s.judged_missing_ids)
        judged = self._judged_doc_ids()
        if judged is None:
            return {}
        found = {doc.id for doc, _ in self._raw_docs() if doc.id in judged}
        missing = _missing_judged(judged, found, self.name)
        return judged_documents_check(len(judged), len(missing), missing)

    def queries(self) -> list[Query]:
        if self._queries is None:
            self._queries = self._load_queries()
            ids = [q.id for q in self._queries]
            if len(set(ids)) != len(ids):
                dup = sorted({i for i in ids if ids.count(i) > 1})[:MAX_LISTED]
                raise InputError(f"{self.name}: duplicate query ids {dup}")
        return self._queries

    def qrels(self) -> Qrels:
        if self._qrels is None:
            self._qrels = self._load_qrels()
        return self._qrels

    def override(self, topics: str | None = None, qrels: str | None = None) -> Dataset:
        """Replace queries and/or qrels with TREC files (topics TSV ``qid<TAB>text``; qrels TREC or BEIR TSV)."""
        if topics:
            self._queries = read_topics_tsv(topics)
            self.name += f"+topics:{Path(topics).name}"
        if qrels:
            self._qrels = read_qrels(qrels)
            self.name += f"+qrels:{Path(qrels).name}"
        self._overrides = {"topics": topics and str(Path(topics).resolve()),
                           "qrels": qrels and str(Path(qrels).resolve())}
        return self

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "corpus": self.corpus_key(), "measures": list(self.measures),
                "remove_query": self.remove_query, **getattr(self, "_overrides", {})}

    def fingerprint(self) -> dict[str, Any]:
        """The data this dataset holds, by content: corpus, queries and qrels with counts and sha256s
        (:mod:`lsr_eval.data.fingerprint`). Recorded in a benchmark's manifest; ``lsr-eval reproduce`` refuses a
        rerun on data whose fingerprint differs. Not in :meth:`describe` (the identity of cached runs)."""
        return {"name": self.name, "corpus": corpus_fingerprint(self.corpus_key()),
                "queries": queries_fingerprint(self.queries()), "qrels": qrels_fingerprint(self.qrels())}

    def judged_check(self) -> dict[str, Any]:
        """Qrels queries absent from the topics are counted and warned about (they score zero in evaluation), and so
        are judged documents absent from the corpus (:meth:`judged_documents_check`)."""
        qids = {q.id for q in self.queries()}
        missing = sorted(set(self.qrels()) - qids)
        if missing:
            log.warning("%s: %d judged queries are absent from the topics (they count zero): %s", self.name,
                        len(missing), ", ".join(missing[:MAX_LISTED]))
        return {"queries": len(qids), "judged_queries": len(self.qrels()),
                "judged_queries_missing_from_topics": len(missing),
                "judged_queries_missing_ids": missing[:MAX_LISTED],
                "topics_without_judgments": len(qids - set(self.qrels())), **self.judged_documents_check()}


class BeirFolder(Dataset):
    """A local BEIR-format folder: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
    ``text``), ``qrels/<split>.tsv``. Queries are those judged in the split (as BEIR's loader and Pyserini's BEIR
    topics)."""

    measures = BEIR_MEASURES
    remove_query = True

    def __init__(self, path: str | os.PathLike, split: str = "test") -> None:
        super().__init__()
        self.path = Path(path)
        self.split = split
        for required in ("corpus.jsonl", "queries.jsonl"):
            if not (self.path / required).is_file():
                raise InputError(f"{self.path} is not a BEIR folder: {required} is missing")
        if not self.qrels_path.is_file():
            splits = sorted(p.stem for p in (self.path / "qrels").glob("*.tsv"))
            raise InputError(f"{self.qrels_path} does not exist; splits in {self.path}: {', '.join(splits) or 'none'}")
        self.name = f"{self.path.name}/{split}"

    @property
    def qrels_path(self) -> Path:
        return self.path / "qrels" / f"{self.split}.tsv"

    def _raw_docs(self) -> Iterator[tuple[Document, str]]:
        path = self.path / "corpus.jsonl"
        for lineno, obj in read_jsonl(path):
            where = f"{path}:{lineno}"
            yield Document(_field(obj, "_id", where), _field(obj, "text", where),
                           _field(obj, "title", where, required=False)), where

    def _load_queries(self) -> list[Query]:
        judged = set(self.qrels())
        path = self.path / "queries.jsonl"
        out = []
        for lineno, obj in read_jsonl(path):
            where = f"{path}:{lineno}"
            qid = _field(obj, "_id", where)
            if qid in judged:
                out.append(Query(qid, _field(obj, "text", where)))
        return out

    def _load_qrels(self) -> Qrels:
        return read_qrels(self.qrels_path)

    def corpus_key(self) -> dict[str, Any]:
        corpus = (self.path / "corpus.jsonl").resolve()
        st = corpus.stat()
        return {"source": "beir-folder", "path": str(corpus), "bytes": st.st_size, "mtime": int(st.st_mtime)}


class IrdsDataset(Dataset):
    """A dataset loaded through ``ir_datasets`` (downloads on first use where there is a network; offline it reads a
    seeded ``$IR_DATASETS_HOME``). With ``local`` (a registry benchmark's :class:`LocalFiles`) present under the
    ir_datasets home, topics and qrels are read from those files instead; a download that fails (no network) is an
    :class:`InputError` of one line naming the files to put where."""

    def __init__(self, irds_id: str, name: str | None = None, measures: tuple[str, ...] | None = None,
                 remove_query: bool | None = None, local: LocalFiles | None = None) -> None:
        super().__init__()
        import ir_datasets

        try:
            self._ds = ir_datasets.load(irds_id)
        except KeyError:
            raise InputError(f"unknown ir_datasets id {irds_id!r} (see https://ir-datasets.com)") from None
        self.irds_id = irds_id
        self.name = name or f"irds:{irds_id}"
        is_beir = irds_id.startswith("beir/")
        self.measures = measures or (BEIR_MEASURES if is_beir else DEFAULT_MEASURES)
        self.remove_query = is_beir if remove_query is None else remove_query
        self.local = local
        self.local_paths = _local_paths(local)

    def _irds(self, what: str, read, quiet: bool = True):
        """``read()`` (an ir_datasets call), its download failures turned into one line saying what to place where.
        ``quiet``: ir_datasets' own log lines (a failed download prints seven) are held back during the call
        (topics and qrels are small; a corpus download keeps its progress lines)."""
        previous = logging.root.manager.disable
        if quiet:
            logging.disable(logging.WARNING)
        try:
            return read()
        except InputError:
            raise
        except Exception as e:  # ir_datasets raises RuntimeError, OSError or requests' errors on a failed download
            if not _download_failure(e):
                raise
            raise InputError(f"{self.name}: ir_datasets could not download the {what} of {self.irds_id} "
                             f"({_short(e)}); {self._offline_hint()}") from None
        finally:
            logging.disable(previous)

    def _offline_hint(self) -> str:
        if self.local is not None:
            folder = irds_home() / self.local.folder
            return (f"offline, put {' and '.join(self.local.names())} into {folder}/ (e.g. lsr-eval seed-irds "
                    f"../shared/data/{self.local.folder})")
        if self.irds_id.startswith("beir/"):
            zip_path = irds_home() / "beir" / self.irds_id.split("/")[1] / "source.zip"
            return (f"offline, put the dataset's BEIR zip at {zip_path} "
                    "(lsr-eval seed-irds, see docs/guide.md, Offline ir_datasets)")
        return (f"offline, seed {irds_home()} with the files ir_datasets downloads "
                "(see docs/guide.md, Offline ir_datasets)")

    def _raw_docs(self) -> Iterator[tuple[Document, str]]:
        if not self._ds.has_docs():
            raise InputError(f"ir_datasets {self.irds_id} has no documents")
        where = f"ir_datasets {self.irds_id}"
        docs = self._irds("documents", lambda: iter(self._ds.docs_iter()), quiet=False)
        while True:
            d = self._irds("documents", lambda: next(docs, None), quiet=False)  # the download comes with item one
            if d is None:
                return
            yield Document(str(d.doc_id), getattr(d, "text", "") or "", getattr(d, "title", "") or ""), where

    def _load_queries(self) -> list[Query]:
        if self.local_paths:
            topics = read_topics_tsv(self.local_paths["topics"])
            if self.local.judged_only:
                judged = self.qrels()
                topics = [q for q in topics if q.id in judged]
            return topics
        return self._irds("queries", lambda: [Query(str(q.query_id), q.text) for q in self._ds.queries_iter()])

    def _load_qrels(self) -> Qrels:
        if self.local_paths:
            return read_qrels(self.local_paths["qrels"])

        def read() -> Qrels:
            qrels: Qrels = {}
            for r in self._ds.qrels_iter():
                qrels.setdefault(str(r.query_id), {})[str(r.doc_id)] = int(r.relevance)
            return qrels

        return self._irds("qrels", read)

    def corpus_key(self) -> dict[str, Any]:
        import ir_datasets

        return {"source": "ir_datasets", "docs_id": ir_datasets.docs_parent_id(self.irds_id)}

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if self.local_paths:
            from lsr_eval.data.trec_files import file_sha256

            out["topics_and_qrels"] = {k: {"path": str(v), "sha256": file_sha256(v)}
                                       for k, v in self.local_paths.items()}
        return out


def _local_paths(local: LocalFiles | None) -> dict[str, Path]:
    """``{"topics": path, "qrels": path}`` when both local files exist under the ir_datasets home, else ``{}``."""
    if local is None:
        return {}

    folder = irds_home() / local.folder
    paths = {"topics": folder / local.topics, "qrels": folder / local.qrels}
    return paths if all(p.is_file() for p in paths.values()) else {}


def _download_failure(e: BaseException) -> bool:
    """Whether ``e`` is ir_datasets failing to fetch a file (every mirror failed, or a connection error)."""
    if isinstance(e, RuntimeError) and e.args and e.args[0] == "All download sources failed":
        return True
    try:
        import requests
    except ImportError:  # pragma: no cover - ir_datasets depends on requests
        return False
    return isinstance(e, requests.exceptions.RequestException)


def _short(e: BaseException) -> str:
    """A download failure in a few words (ir_datasets' own errors hold a list of per-mirror exceptions)."""
    if isinstance(e, RuntimeError) and len(e.args) > 1 and e.args[1]:
        e = e.args[1][0][1]
    return type(e).__name__ + (": no network?" if "connection" in type(e).__name__.lower() else "")


def registry_dataset(bench: Benchmark, split: str | None = None) -> IrdsDataset:
    """The registry benchmark ``bench`` on ``split`` (None: its default split); local files serve the default split."""
    irds_id = bench.irds_for(split)
    return IrdsDataset(irds_id, name=bench.dataset_name(split), measures=bench.measures,
                       remove_query=bench.remove_query, local=bench.local if irds_id == bench.irds_id else None)


def load_dataset(spec: str, split: str | None = None, topics: str | None = None,
                 qrels: str | None = None) -> Dataset:
    """Resolve ``spec``: a registry name (``scifact``, ``dl19``...; ``split`` or ``name/split`` for its other splits,
    e.g. ``nfcorpus/dev``), ``irds:<id>``, or a BEIR folder (``split``, default ``test``); ``topics``/``qrels``
    files replace the dataset's own."""
    named = None if spec.startswith("irds:") else split_spec(spec)
    if spec.startswith("irds:"):
        ds: Dataset = IrdsDataset(spec[len("irds:"):])
    elif named is not None:
        bench, own_split = named
        if own_split is not None and split is not None and split != own_split:
            raise InputError(f"{spec} names split {own_split!r}; --split {split} contradicts it")
        ds = registry_dataset(bench, own_split or split)
        split = None
    elif Path(spec).is_dir():
        ds = BeirFolder(spec, split or "test")
    elif Path(spec).exists():
        raise InputError(f"{spec} is a file; a dataset is a registry name, irds:<id>, or a BEIR folder")
    else:
        raise InputError(unknown_dataset_message(spec))
    if split and not isinstance(ds, BeirFolder):
        raise InputError(f"--split applies to BEIR folders and registry names; {spec} names its split in its id")
    return ds.override(topics, qrels) if (topics or qrels) else ds
