"""Training examples and their order: (query, positive, hard negatives[, teacher scores]).

Design notes: docs/design.md."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from lsr_eval.data.datasets import load_dataset
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.train.config import DataConfig
from lsr_eval.train.files import TeacherScores, read_hard_negatives, read_teacher_scores

log = logging.getLogger(__name__)

#: How many offending ids a warning or manifest lists.
MAX_LISTED = 10


@dataclass(frozen=True)
class Example:
    """One training example. ``positives``: every judged-relevant docid of the query (for in-batch masking)."""

    qid: str
    query: str
    pos_id: str
    pos_text: str
    neg_ids: tuple[str, ...]
    neg_texts: tuple[str, ...]
    positives: frozenset[str]
    teacher_pos: float | None = None
    teacher_neg: tuple[float, ...] | None = None


def doc_key(docid: str) -> int:
    """A stable signed 64-bit key of a docid (to compare documents across processes as tensors)."""
    return int.from_bytes(hashlib.blake2b(docid.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def _listed(ids) -> list[str]:
    return sorted(ids)[:MAX_LISTED]


class QuerySet:
    """Map-style examples over queries (see docs/design.md)."""

    def __init__(self, queries: dict[str, str], positives: dict[str, list[str]], pools: dict[str, list[str]],
                 docs: dict[str, str], n_negatives: int, seed: int, teacher: TeacherScores | None = None,
                 counts: dict[str, Any] | None = None) -> None:
        self.qids = [q for q in queries if q in positives]
        if not self.qids:
            raise InputError("no training example: no query has a usable positive (see the warnings)")
        self.queries, self.positives, self.pools, self.docs = queries, positives, pools, docs
        self.n_negatives = n_negatives
        self.seed = seed
        self.teacher = teacher
        self.counts = dict(counts or {}, examples_per_epoch=len(self.qids))
        self._order: tuple[int, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.qids)

    def example(self, index: int, epoch: int) -> Example:
        qid = self.qids[index]
        rng = np.random.default_rng([self.seed, epoch, index])
        positives = self.positives[qid]
        pos = positives[int(rng.integers(len(positives)))]
        negs: list[str] = []
        if self.n_negatives:
            pool = self.pools[qid]
            picks = rng.choice(len(pool), self.n_negatives, replace=len(pool) < self.n_negatives)
            negs = [pool[int(i)] for i in picks]
        t_pos = t_neg = None
        if self.teacher is not None:
            scores = self.teacher[qid]
            t_pos, t_neg = scores[pos], tuple(scores[d] for d in negs)
        return Example(qid, self.queries[qid], pos, self.docs[pos], tuple(negs), tuple(self.docs[d] for d in negs),
                       frozenset(positives), t_pos, t_neg)

    def batches_per_epoch(self, size: int) -> int:
        n = len(self) // size
        if n == 0:
            raise ConfigError(f"train.batch_size={size} is larger than the {len(self)} training queries")
        return n

    def global_batch(self, m: int, size: int) -> list[Example]:
        """Examples of micro-step ``m`` (0-based), ``size`` of them."""
        epoch, b = divmod(m, self.batches_per_epoch(size))
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, np.random.default_rng([self.seed, epoch]).permutation(len(self)))
        return [self.example(int(i), epoch) for i in self._order[1][b * size:(b + 1) * size]]

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        pass


def build_query_set(cfg: DataConfig, seed: int) -> QuerySet:
    """Queries, positives, negative pools and teacher scores of a dataset (``data.source: dataset``)."""
    split = cfg.split or ("train" if Path(cfg.dataset).is_dir() else None)
    ds = load_dataset(cfg.dataset, split)
    queries = {q.id: q.text for q in ds.queries()}
    counts: dict[str, Any] = {"dataset": ds.name, "queries": len(queries)}
    positives: dict[str, list[str]] = {}
    judged_unknown = set()
    for qid, rels in ds.qrels().items():
        pos = [d for d, g in rels.items() if g > 0]
        if qid not in queries:
            judged_unknown.add(qid)
        elif pos:
            positives[qid] = pos
    counts["queries_without_positive"] = len(queries) - len(positives)
    if judged_unknown:
        counts["judged_queries_without_text"] = len(judged_unknown)
        log.warning("%s: %d judged queries have no text (first: %s)", ds.name, len(judged_unknown),
                    ", ".join(_listed(judged_unknown)))

    pools: dict[str, list[str]] = {q: [] for q in positives}
    named: set[str] = set()          # every docid the files name (checked against the corpus)
    files = [cfg.negatives] if isinstance(cfg.negatives, str) else list(cfg.negatives or [])
    if files:
        counts["negatives"] = []
    for path in files:
        negatives = read_hard_negatives(path, cfg.negatives_top_k)
        unknown_q = set(negatives) - set(queries)
        removed = added = 0
        for qid, docids in negatives.items():
            named.update(docids)
            if qid in pools:
                keep = [d for d in docids if d not in positives[qid]]
                removed += len(docids) - len(keep)
                seen = set(pools[qid])
                new = [d for d in keep if d not in seen]
                added += len(new)
                pools[qid].extend(new)     # union over files, each file's best first
        counts["negatives"].append({
            "file": str(path), "queries": len(negatives), "unknown_queries": len(unknown_q),
            "unknown_query_ids": _listed(unknown_q), "judged_positives_removed": removed, "new_in_pools": added,
            "top_k": cfg.negatives_top_k})
        if unknown_q:
            log.warning("%s: %d queries unknown to %s (first: %s)", path, len(unknown_q), ds.name,
                        ", ".join(_listed(unknown_q)))

    teacher = read_teacher_scores(cfg.teacher_scores) if cfg.teacher_scores else None

    needed = {d for q in positives for d in positives[q]} | {d for q in pools for d in pools[q]}
    if teacher is not None:
        needed |= {d for q, s in teacher.items() if q in positives for d in s}
        named |= {d for s in teacher.values() for d in s}
    named |= needed
    docs: dict[str, str] = {}
    found: set[str] = set()
    for doc in ds.docs():
        if doc.id in named:
            found.add(doc.id)
            if doc.id in needed:
                docs[doc.id] = doc.contents
    counts["corpus_documents_read"] = ds.doc_stats.read
    missing = named - found
    if missing:
        log.warning("%s: %d documents named by qrels, negatives or teacher scores are not in the corpus "
                    "(first: %s); they are left out", ds.name, len(missing), ", ".join(_listed(missing)))
    counts["unknown_documents"] = len(missing)
    counts["unknown_document_ids"] = _listed(missing)
    positives = {q: [d for d in p if d in docs] for q, p in positives.items()}
    pools = {q: [d for d in p if d in docs] for q, p in pools.items()}

    if teacher is not None:
        positives, pools = _apply_teacher(teacher, queries, positives, pools, docs, found, bool(cfg.negatives),
                                          counts, cfg.teacher_scores)

    no_pos = [q for q, p in positives.items() if not p]
    positives = {q: p for q, p in positives.items() if p}
    no_neg = [q for q in positives if cfg.n_negatives and not pools.get(q)]
    for q in no_neg:
        del positives[q]
    counts["dropped_no_positive"] = len(no_pos)
    counts["dropped_no_negative"] = len(no_neg)
    if no_pos or no_neg:
        log.warning("%s: %d queries dropped without a usable positive, %d without a negative (first: %s)",
                    ds.name, len(no_pos), len(no_neg), ", ".join(_listed(no_pos + no_neg)))
    pools = {q: pools.get(q, []) for q in positives}
    short = sum(1 for q in positives if cfg.n_negatives and len(pools[q]) < cfg.n_negatives)
    counts["queries_with_fewer_negatives_than_n"] = short
    return QuerySet(queries, positives, pools, docs, cfg.n_negatives, seed, teacher, counts)


def _apply_teacher(teacher: TeacherScores, queries, positives, pools, docs, in_corpus: set[str],
                   have_negatives_file: bool, counts: dict[str, Any], path) -> tuple[dict, dict]:
    """Keep the positives and negatives that have a teacher score; count what the file names that is unknown."""
    unknown_q = set(teacher) - set(queries)
    unknown_d = {d for s in teacher.values() for d in s if d not in in_corpus}
    pairs = sum(len(s) for s in teacher.values())
    pos_unscored = neg_unscored = 0
    new_pos, new_pools = {}, {}
    for qid, pos in positives.items():
        scores = teacher.get(qid, {})
        new_pos[qid] = [d for d in pos if d in scores]
        pos_unscored += len(pos) - len(new_pos[qid])
        if have_negatives_file:
            new_pools[qid] = [d for d in pools[qid] if d in scores]
            neg_unscored += len(pools[qid]) - len(new_pools[qid])
        else:
            judged = set(pos)
            new_pools[qid] = sorted((d for d in scores if d not in judged and d in docs), key=lambda d: -scores[d])
    counts["teacher"] = {"file": str(path), "pairs": pairs, "queries": len(teacher),
                         "unknown_queries": len(unknown_q), "unknown_query_ids": _listed(unknown_q),
                         "unknown_documents": len(unknown_d), "unknown_document_ids": _listed(unknown_d),
                         "positives_without_score": pos_unscored, "negatives_without_score": neg_unscored}
    bad_pairs = sum(1 for q, s in teacher.items() for d in s if q in unknown_q or d in unknown_d)
    counts["teacher"]["pairs_with_unknown_ids"] = bad_pairs
    if bad_pairs:
        log.warning("%s: %d of %d teacher scores name unknown ids: %d unknown queries (first: %s), %d unknown "
                    "documents (first: %s)", path, bad_pairs, pairs, len(unknown_q), ", ".join(_listed(unknown_q)),
                    len(unknown_d), ", ".join(_listed(unknown_d)))
    if pos_unscored or neg_unscored:
        log.warning("%s: %d judged positives and %d hard negatives have no teacher score; left out", path,
                    pos_unscored, neg_unscored)
    return new_pos, new_pools


class IrdsTriples:
    """ir_datasets docpairs (qid, positive, negative) in file order (``data.source: irds-triples``).

    Positives for in-batch masking come from the dataset's qrels when it has them. With teacher scores, a
    triple without a score for both documents is skipped and counted. The cursor (docpairs read so far) is the
    data position saved in checkpoints.
    """

    def __init__(self, irds_id: str, teacher: TeacherScores | None = None) -> None:
        import ir_datasets

        try:
            self._ds = ir_datasets.load(irds_id)
        except KeyError:
            raise InputError(f"unknown ir_datasets id {irds_id!r} (see https://ir-datasets.com)") from None
        if not self._ds.has_docpairs():
            raise InputError(f"ir_datasets {irds_id} has no docpairs (training triples)")
        self.irds_id = irds_id
        self.teacher = teacher
        self.queries = {str(q.query_id): q.text for q in self._ds.queries_iter()}
        self.positives: dict[str, set[str]] = {}
        if self._ds.has_qrels():
            for r in self._ds.qrels_iter():
                if r.relevance > 0:
                    self.positives.setdefault(str(r.query_id), set()).add(str(r.doc_id))
        self._docs = self._ds.docs_store()
        self.total = int(self._ds.docpairs_count())
        self.cursor = 0
        self._iter = None
        self.counts: dict[str, Any] = {"dataset": f"irds:{irds_id}", "docpairs": self.total,
                                       "queries": len(self.queries), "skipped_unknown_query": 0,
                                       "skipped_no_teacher_score": 0}

    def _open(self, start: int):
        it = self._ds.docpairs_iter()
        try:
            return iter(it[start:])
        except (TypeError, IndexError, NotImplementedError):
            return islice(iter(it), start, None)

    def _next_pair(self):
        if self._iter is None:
            self._iter = self._open(self.cursor % self.total)
        pair = next(self._iter, None)
        if pair is None:  # end of the file: wrap around
            self._iter = self._open(0)
            pair = next(self._iter)
        self.cursor += 1
        return pair

    def global_batch(self, m: int, size: int) -> list[Example]:
        """The next ``size`` usable triples (``m`` is not used: the cursor is the position)."""
        chosen = []
        while len(chosen) < size:
            p = self._next_pair()
            qid, a, b = str(p.query_id), str(p.doc_id_a), str(p.doc_id_b)
            if qid not in self.queries:
                self.counts["skipped_unknown_query"] += 1
                continue
            t_pos = t_neg = None
            if self.teacher is not None:
                scores = self.teacher.get(qid, {})
                if a not in scores or b not in scores:
                    self.counts["skipped_no_teacher_score"] += 1
                    continue
                t_pos, t_neg = scores[a], (scores[b],)
            chosen.append((qid, a, b, t_pos, t_neg))
        texts = self._docs.get_many({d for _, a, b, _, _ in chosen for d in (a, b)})
        out = []
        for qid, a, b, t_pos, t_neg in chosen:
            for d in (a, b):
                if d not in texts:
                    raise InputError(f"ir_datasets {self.irds_id}: document {d!r} of a triple of query {qid!r} is "
                                     f"not in the corpus")
            out.append(Example(qid, self.queries[qid], a, _doc_text(texts[a]), (b,), (_doc_text(texts[b]),),
                               frozenset(self.positives.get(qid, set()) | {a}), t_pos, t_neg))
        return out

    def state(self) -> dict[str, Any]:
        return {"cursor": self.cursor}

    def load_state(self, state: dict[str, Any]) -> None:
        self.cursor = int(state.get("cursor", 0))
        self._iter = None


def _doc_text(doc) -> str:
    title = getattr(doc, "title", "") or ""
    text = getattr(doc, "text", "") or ""
    return f"{title} {text}".strip() if title else text


def build_source(cfg: DataConfig, seed: int):
    """The example source of a data config."""
    if cfg.source == "irds-triples":
        teacher = read_teacher_scores(cfg.teacher_scores) if cfg.teacher_scores else None
        return IrdsTriples(cfg.triples, teacher)
    return build_query_set(cfg, seed)
