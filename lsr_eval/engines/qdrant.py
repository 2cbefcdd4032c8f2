"""Qdrant behind the engine seam: one sparse vector field per point, searched exactly, embedded or on a server.

``location`` (default: a ``qdrant`` folder in the index folder) runs qdrant-client's local mode in this process;
``url`` reaches a Qdrant server or cluster (one node's URL: it queries the others). Both score exact dot products
(no approximation knob), but local mode is a Python scan of every point, meant for up to 20,000 of them
(qdrant-client's ``LARGE_DATA_THRESHOLD``): larger collections belong on a server. The server path is the same
client calls with ``url=``; no Qdrant server installs where this module was written, so it was checked against the
test suite's stand-in (those REST calls answered by Qdrant's Rust engine, qdrant-edge-py), not a real server.

Exactness (docs/design.md, engines.qdrant): Qdrant stores and scores float32, so integer impacts and dot products
are exact below 2^24: the registry refuses larger weights, and a returned score at or above 2^24 (only possible
when the true one is) is refused in one line. Qdrant orders equal scores in no fixed way and may cut a tied run at
the limit, so each query fetches ``k + 1`` hits (more while the run at rank k continues) and is ranked by score
then docid, with Anserini's adjusted scores (:func:`lsr_eval.search.ties.complete_top_k`, PISA's too): its runs
equal Anserini's and PISA's bit for bit. Terms are numbered in the order the collection first uses them (the
vocabulary is ``terms.json`` in the index folder); documents are points whose id is the UUID-5 of their docid,
with the docid and a digest of the stored vector as payload, so that a build into an existing collection skips
points already stored with the same vector (resume) and refuses one stored with another. The IDF modifier stays
off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from lsr_eval.data.chunks import chunks
from lsr_eval.data.types import Run
from lsr_eval.engines.base import (
    BuildCounts,
    ClosingSearcher,
    QueryWeights,
    check_index_engine,
    query_weight,
    write_marker,
)
from lsr_eval.engines.registry import ENGINES
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export.collection import iter_collection
from lsr_eval.manifest import installed_version
from lsr_eval.search.counts import SearchCounts
from lsr_eval.search.params import check_k
from lsr_eval.search.ties import complete_top_k
from lsr_eval.settings import Setting, check_option

log = logging.getLogger(__name__)

NAME = "qdrant"
PACKAGE = "qdrant-client"
EXTRA = "lsr-eval[qdrant]"
#: The sparse vector field of every point.
VECTOR = "splade"
#: Scores from here on may be rounded: float32 holds every integer below 2^24 exactly.
EXACT_BELOW = 2**24
#: The index's vocabulary: a JSON list of terms, a term's position its sparse index.
TERMS_FILE = "terms.json"
#: Local mode's folder inside the index folder (the default ``location``).
LOCAL_FOLDER = "qdrant"
#: qdrant-client's own limit for local mode (``local_collection.LARGE_DATA_THRESHOLD``).
LOCAL_POINTS = 20_000
#: Queries per ``query_batch_points`` request.
QUERY_BATCH = 64
#: Documents whose stored vectors a searcher compares with the index's record (a collection rebuilt since is refused).
PROBE = 16
#: The namespace of point ids (``uuid5(NAMESPACE, docid)``).
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/lsr-eval/qdrant-points")
TIES = "score desc, docid asc (cut included); scores as Anserini's ScoreTiesAdjusterReranker"

#: Qdrant's declared options: (type, constraint and help). ``url``, ``location`` and ``collection`` are build
#: settings that also steer a searcher (given to the engine, they replace what the index recorded).
OPTIONS: dict[str, tuple[type, Setting]] = {
    "location": (str, Setting(help="local mode's storage folder (default: qdrant/ in the index folder)",
                              min_items=1)),
    "url": (str, Setting(help="a Qdrant server or cluster node (local mode when absent)",
                         pattern=(r"https?://\S+", "http://host:port or https://host:port"))),
    "api_key_env": (str, Setting(help="the environment variable holding the server's API key (never recorded)",
                                 pattern=(r"[A-Za-z_][A-Za-z0-9_]*", "an environment variable's name"))),
    "collection": (str, Setting(help="the Qdrant collection (default: named after the index folder)",
                                pattern=(r"[A-Za-z0-9_.-]{1,255}", "letters, digits, _ . -"))),
    "batch_size": (int, Setting(help="points per upsert request", ge=1)),
    "timeout": (int, Setting(help="seconds a server request may take", ge=1, unit="s")),
}
DEFAULTS: dict[str, Any] = {"location": None, "url": None, "api_key_env": "QDRANT_API_KEY", "collection": None,
                            "batch_size": 256, "timeout": 60}


def _qdrant() -> Any:
    """qdrant_client, or one line naming the extra that installs it."""
    try:
        import qdrant_client
    except ImportError as e:
        raise ConfigError(f"engine 'qdrant' needs the package {PACKAGE} (`pip install '{EXTRA}'`): {e}") from e
    return qdrant_client


def _check_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` checked against :data:`OPTIONS` (None: the default), with the defaults filled in."""
    unknown = sorted(set(settings) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"unknown qdrant setting(s) {', '.join(unknown)}; allowed: {', '.join(OPTIONS)}")
    out = dict(DEFAULTS)
    for key, value in settings.items():
        if value is not None:
            out[key] = check_option(OPTIONS, key, value, NAME)
    if out["url"] and out["location"]:
        raise ConfigError("qdrant takes url (a server) or location (local mode), not both")
    return out


def _collection_name(index: Path, server: bool) -> str:
    """The default collection, in the characters Qdrant allows: in local mode the index folder's name (the storage
    is the index's own); on a server, shared by every index built there, also the parent folder's name and a digest
    of the index's absolute path (the pipeline's index folders are all called ``index``)."""
    index = Path(index).resolve()
    name = f"lsr-eval-{index.parent.name}-{index.name}-{_short_digest(str(index))}" if server else index.name
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[-255:] or "lsr_eval"


def _short_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=4).hexdigest()


def point_id(docid: str) -> str:
    """The point id of ``docid``: its UUID-5 (Qdrant ids are unsigned integers or UUIDs)."""
    return str(uuid.uuid5(NAMESPACE, docid))


def digest(indices: list[int], values: list[float]) -> str:
    """A short digest of a stored sparse vector, as float32 values: a resumed build compares it."""
    data = np.asarray(indices, dtype=np.uint32).tobytes() + np.asarray(values, dtype=np.float32).tobytes()
    return hashlib.blake2b(data, digest_size=8).hexdigest()


class Connection:
    """One qdrant-client over local mode or a server, whose failures are one line naming where and what to do."""

    def __init__(self, settings: Mapping[str, Any], index: Path, collection: str) -> None:
        qc = _qdrant()
        self.url, self.collection, self.key_env = settings["url"], collection, settings["api_key_env"]
        self.location = None if self.url else Path(settings["location"] or Path(index) / LOCAL_FOLDER)
        self.where = self.url or f"local mode at {self.location}"
        self.server_version: str | None = None
        with self.answering("connecting"):
            if self.url:
                self.client = qc.QdrantClient(url=self.url, api_key=os.environ.get(self.key_env) or None,
                                              timeout=settings["timeout"], check_compatibility=False)
                self.server_version = self.client.info().version
            else:
                self.location.mkdir(parents=True, exist_ok=True)
                self.client = qc.QdrantClient(path=str(self.location))

    @contextlib.contextmanager
    def answering(self, what: str) -> Iterator[None]:
        """The client's failures while doing ``what`` as one line naming the server (or folder)."""
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        try:
            yield
        except UnexpectedResponse as e:
            if e.status_code in (401, 403):
                raise ConfigError(f"Qdrant at {self.where} refused the API key while {what} (HTTP {e.status_code}): "
                                  f"set ${self.key_env} to the server's key") from None
            body = e.content.decode("utf-8", "replace")[:200] if e.content else ""
            raise InputError(f"Qdrant at {self.where} answered HTTP {e.status_code} {e.reason_phrase} while {what}: "
                             f"{body}") from None
        except (ResponseHandlingException, ConnectionError, TimeoutError) as e:
            raise ConfigError(f"Qdrant at {self.where} does not answer while {what} ({e}); start the server or give "
                              "its address with --engine-option url=http://host:6333") from None
        except RuntimeError as e:
            if "already accessed" in str(e):
                raise ConfigError(f"Qdrant's local storage {self.location} is open in another client (this process "
                                  "or another); close that one first, or use a Qdrant server (url=) for concurrent "
                                  "access") from None
            raise

    def check_layout(self) -> None:
        """The collection holds one float32 sparse field :data:`VECTOR`, no IDF, no dense vector; else one line."""
        from qdrant_client import models

        with self.answering(f"reading collection {self.collection!r}"):
            if not self.client.collection_exists(self.collection):
                raise InputError(f"Qdrant at {self.where} holds no collection {self.collection!r}: rebuild the index "
                                 "(or give the collection, url or location it was built into)")
            params = self.client.get_collection(self.collection).config.params
        sparse = (params.sparse_vectors or {}).get(VECTOR)
        datatype = sparse.index.datatype if sparse is not None and sparse.index is not None else None
        problem = ("no sparse vector field " + repr(VECTOR) if sparse is None
                   else "dense vectors too" if params.vectors
                   else f"the modifier {sparse.modifier.value}" if sparse.modifier not in (None, models.Modifier.NONE)
                   else f"{datatype.value} values (not exact)" if datatype not in (None, models.Datatype.FLOAT32)
                   else None)
        if problem:
            raise InputError(f"Qdrant collection {self.collection!r} at {self.where} has {problem}, not lsr-eval's "
                             f"layout (one float32 sparse field {VECTOR!r}, no modifier); choose another collection "
                             "name (--engine-option collection=...) or delete it")

    def ensure_collection(self) -> None:
        """Create the collection with lsr-eval's layout, or check the layout of the one there."""
        from qdrant_client import models

        with self.answering(f"creating collection {self.collection!r}"):
            exists = self.client.collection_exists(self.collection)
            if not exists:
                index = models.SparseIndexParams(datatype=models.Datatype.FLOAT32)
                self.client.create_collection(self.collection, vectors_config={}, sparse_vectors_config={
                    VECTOR: models.SparseVectorParams(index=index, modifier=models.Modifier.NONE)})
        if exists:
            self.check_layout()

    def stored(self, ids: list[str], fields: list[str]) -> dict[str, dict[str, Any]]:
        """The payload ``fields`` of the points among ``ids`` that the collection holds, by point id."""
        with self.answering("reading stored points"):
            return {str(r.id): r.payload or {} for r in self.client.retrieve(
                self.collection, ids, with_payload=fields, with_vectors=False)}

    def count(self) -> int:
        with self.answering(f"counting collection {self.collection!r}"):
            return int(self.client.count(self.collection, exact=True).count)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()


class QdrantEngine:
    """Builds Qdrant collections from a ``JsonVectorCollection`` folder and opens :class:`QdrantSearcher` over them.

    Settings (:data:`OPTIONS`): ``location`` or ``url``, ``api_key_env`` (the key itself is read from that variable
    and never recorded), ``collection``, ``batch_size``, ``timeout``."""

    name = NAME
    #: option names for :func:`lsr_eval.engines.registry.split_options` (the constructor takes ``**settings``)
    build_options = tuple(OPTIONS)
    search_options = ()

    def __init__(self, **settings: Any) -> None:
        self.given = {k: v for k, v in settings.items() if v is not None}
        self.settings = _check_settings(settings)
        _qdrant()  # fail now, naming the extra, rather than after encoding a corpus

    def describe(self) -> dict[str, Any]:
        return {"engine": NAME, "package": PACKAGE, "version": installed_version(PACKAGE),
                "settings": {k: v for k, v in self.settings.items() if v is not None}}

    def build(self, collection: Path, index: Path, threads: int = 2) -> BuildCounts:
        """Upsert every document of ``collection`` into a Qdrant collection, ``batch_size`` points per request,
        and record the index in the new folder ``index`` (vocabulary, marker last). Points already stored with the
        same vector are skipped (a build resumed into the same ``location`` or server); one stored with another
        vector, or points the collection does not hold, are refused. ``threads`` is unused (the client's calls)."""
        from qdrant_client import models
        from tqdm import tqdm

        collection, index = Path(collection), Path(index)
        start = time.perf_counter()
        index.mkdir(parents=True, exist_ok=True)
        name = self.settings["collection"] or _collection_name(index, server=bool(self.settings["url"]))
        conn = Connection(self.settings, index, name)
        try:
            conn.ensure_collection()
            vocabulary: dict[str, int] = {}
            probe: list[list[str]] = []  # (docid, digest) of the first documents: a searcher checks them
            read = skipped = empty = 0
            docs = iter_collection(collection, ENGINES[NAME].weights)
            with tqdm(unit="doc", desc=f"qdrant {name}", disable=None) as bar:
                for batch in chunks(docs, self.settings["batch_size"]):
                    points = []
                    for docid, vector in batch:
                        pairs = sorted((vocabulary.setdefault(t, len(vocabulary)), float(w))
                                       for t, w in vector.items() if w > 0)
                        indices, values = [i for i, _ in pairs], [w for _, w in pairs]
                        empty += not pairs
                        sparse = {VECTOR: models.SparseVector(indices=indices, values=values)} if pairs else {}
                        points.append(models.PointStruct(id=point_id(docid), vector=sparse,
                                                         payload={"docid": docid, "digest": digest(indices, values)}))
                    read += len(batch)
                    probe += [[p.payload["docid"], p.payload["digest"]] for p in points[:PROBE - len(probe)]]
                    points = self._new_points(conn, points, collection)
                    skipped += len(batch) - len(points)
                    if points:
                        with conn.answering(f"upserting documents of {collection}"):
                            conn.client.upsert(name, points, wait=True)
                    bar.update(len(batch))
                    if conn.url is None and read > LOCAL_POINTS >= read - len(batch):
                        log.warning("qdrant local mode scans every point in Python (meant for up to %d points): "
                                    "use a Qdrant server (--engine-option url=...) for larger collections",
                                    LOCAL_POINTS)
            indexed = conn.count()
            if indexed != read:
                raise InputError(f"Qdrant collection {name!r} at {conn.where} holds {indexed} points for the {read} "
                                 f"documents of {collection}: it holds other points too; choose another collection "
                                 "name (--engine-option collection=...) or delete it")
            (index / TERMS_FILE).write_text(json.dumps(list(vocabulary), ensure_ascii=False) + "\n",
                                            encoding="utf-8")
            settings = {k: v for k, v in self.settings.items() if k not in ("location", "collection")}
            location = None if conn.location is None else (
                LOCAL_FOLDER if conn.location == index / LOCAL_FOLDER else str(conn.location.resolve()))
            write_marker(index, NAME, package=PACKAGE, version=installed_version(PACKAGE),
                         server_version=conn.server_version, **settings, location=location, collection=name,
                         vector=VECTOR, documents=indexed, terms=len(vocabulary), probe=probe, ties=TIES)
        finally:
            conn.close()
        details = {"terms": len(vocabulary), "documents_without_terms": empty, "points_skipped": skipped,
                   "collection_name": name, "mode": "server" if conn.url else "local"}
        return BuildCounts(NAME, read, indexed, time.perf_counter() - start, details)

    @staticmethod
    def _new_points(conn: Connection, points: list[Any], source: Path) -> list[Any]:
        """The points of one batch not stored yet; a stored one whose vector differs is refused in one line."""
        stored = conn.stored([p.id for p in points], ["docid", "digest"])
        for p in points:
            old = stored.get(str(p.id))
            if old is not None and (old.get("docid"), old.get("digest")) != (p.payload["docid"], p.payload["digest"]):
                raise InputError(f"Qdrant collection {conn.collection!r} at {conn.where} already holds document "
                                 f"{p.payload['docid']!r} with another vector than {source} gives it; choose another "
                                 "collection name (--engine-option collection=...) or delete it")
        return [p for p in points if str(p.id) not in stored]

    def check_search(self, **knobs: Any) -> dict[str, Any]:
        if knobs:
            raise ConfigError(f"qdrant has no search option {', '.join(sorted(knobs))}: it always searches exactly")
        return {}

    def open(self, index: Path) -> QdrantSearcher:
        """A searcher over an index this engine built: the collection its marker names (``url``, ``location``,
        ``collection`` or ``api_key_env`` given to the engine replace the recorded ones)."""
        index = Path(index)
        marker = check_index_engine(index, NAME)
        recorded = {k: marker.get(k) for k in ("url", "location", "collection", "api_key_env", "timeout")}
        if recorded["location"] and not Path(recorded["location"]).is_absolute():
            recorded["location"] = str(index / recorded["location"])
        if "url" in self.given or "location" in self.given:
            recorded["url"] = recorded["location"] = None
        settings = _check_settings({**recorded, **self.given})
        return QdrantSearcher(index, settings, marker)


class QdrantSearcher(ClosingSearcher):
    """Integer-weighted queries over a Qdrant collection, exact top k under Anserini's tie contract."""

    engine = NAME

    def __init__(self, index: Path, settings: Mapping[str, Any], marker: Mapping[str, Any]) -> None:
        terms = Path(index) / TERMS_FILE
        if not terms.is_file():
            raise InputError(f"Qdrant index {index} has no {TERMS_FILE} (rebuild it with `lsr-eval index --engine "
                             f"{NAME}`)")
        self.index, self.k = Path(index), None
        self._terms = {t: i for i, t in enumerate(json.loads(terms.read_text(encoding="utf-8")))}
        self.conn = Connection(settings, index, settings["collection"] or marker["collection"])
        try:
            self.conn.check_layout()
            held = self.conn.count()
            if held != marker.get("documents"):
                raise InputError(f"Qdrant collection {self.conn.collection!r} at {self.conn.where} holds {held} "
                                 f"points, the index {index} recorded {marker.get('documents')}: rebuild it")
            self._check_probe(marker.get("probe") or [])
        except BaseException:
            self.conn.close()
            raise

    def _check_probe(self, probe: list[list[str]]) -> None:
        """The first documents' stored vectors are still the ones the index was built with (their digests)."""
        stored = self.conn.stored([point_id(d) for d, _ in probe], ["digest"])
        changed = next((d for d, h in probe if stored.get(point_id(d), {}).get("digest") != h), None)
        if changed is not None:
            raise InputError(f"Qdrant collection {self.conn.collection!r} at {self.conn.where} no longer holds the "
                             f"vectors the index {self.index} was built with (document {changed!r}): rebuild it")

    def _vector(self, qid: str, weights: QueryWeights) -> Any:
        """The query as a sparse vector of its known terms with weights > 0 (None when none is left)."""
        from qdrant_client import models

        pairs = sorted((self._terms[t], float(w)) for t, w in weights.items()
                       if query_weight(qid, t, w) > 0 and t in self._terms)
        if not pairs:
            return None
        return models.SparseVector(indices=[i for i, _ in pairs], values=[w for _, w in pairs])

    def _request(self, vector: Any, limit: int) -> Any:
        from qdrant_client import models

        return models.QueryRequest(query=vector, using=VECTOR, limit=limit, with_payload=["docid"])

    def _hits(self, qid: str, points: list[Any]) -> tuple[np.ndarray, list[str]]:
        """Qdrant's points as float32 scores and docids; a score that may be rounded is refused."""
        scores = np.asarray([p.score for p in points], dtype=np.float32)
        if len(scores) and float(scores.max()) >= EXACT_BELOW:
            raise InputError(f"query {qid}: Qdrant scored {float(scores.max()):.0f} >= 2^24, where its float32 "
                             "scores are no longer exact integers; quantize the vectors with a smaller scale")
        return scores, [p.payload["docid"] for p in points]

    def _top(self, items: list[tuple[str, Any]], k: int) -> list[list[tuple[str, float]]]:
        """Each query's top ``k`` by score then docid (the cut included), Anserini's adjusted scores: ``k + 1``
        fetched in one batch request, then each query whose tied run reaches the limit again with twice as many."""
        self.k = k

        def fetch(positions: list[int], limit: int) -> list[tuple[np.ndarray, list[str]]]:
            with self.conn.answering(f"searching {len(positions)} queries"):
                answers = self.conn.client.query_batch_points(
                    self.conn.collection, [self._request(items[i][1], limit) for i in positions])
            return [self._hits(items[i][0], a.points) for i, a in zip(positions, answers)]

        top = complete_top_k(fetch, [i for i, (_, v) in enumerate(items) if v is not None], k)
        return [top.get(i, []) for i in range(len(items))]

    def search(self, weights: QueryWeights, k: int = 1000, qid: str = "query") -> list[tuple[str, float]]:
        """One query's top ``k`` hits, best first, ties by docid, Anserini's scores."""
        return self._top([(qid, self._vector(qid, weights))], check_k(k))[0]

    def batch_search(self, queries: Mapping[str, QueryWeights], k: int = 1000, threads: int = 2,
                     remove_query: bool = False) -> tuple[Run, SearchCounts]:
        """Every query's top ``k`` into a run, :data:`QUERY_BATCH` queries per request (bounded memory);
        ``threads`` is unused (the server parallelises a request itself)."""
        check_k(k)
        run: Run = {}
        counts = SearchCounts()
        for chunk in chunks(queries.items(), QUERY_BATCH):
            items = [(qid, self._vector(qid, w)) for qid, w in chunk]
            for (qid, _), hits in zip(chunk, self._top(items, k)):
                counts.add(qid, hits, remove_query, run)
        return run, counts

    def describe(self) -> dict[str, Any]:
        return {"engine": NAME, "package": PACKAGE, "version": installed_version(PACKAGE),
                "server_version": self.conn.server_version, "mode": "server" if self.conn.url else "local",
                "url": self.conn.url, "collection": self.conn.collection, "index": str(self.index), "ties": TIES,
                "k": self.k}

    def close(self) -> None:
        self.conn.close()
