"""Exactness of impact retrieval: Anserini's top-k scores against the brute-force sparse dot product of the very
integer vectors that were exported (scipy), query by query.

Anserini's score of a document is sum_j q_j * d_j over the query's terms (``-impact`` indexes store d_j as the term
frequency, ``SimpleImpactSearcher`` boosts term j by q_j), so the two must agree exactly, up to the order of tied
documents.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np
import scipy.sparse as sp

from lsr_eval.data.types import Run
from lsr_eval.export.jsonl import open_collection_file


@dataclass
class ExactnessReport:
    queries: int = 0
    exact: int = 0
    mismatched: list[str] = field(default_factory=list)
    max_abs_diff: float = 0.0
    k: int = 100

    def to_dict(self) -> dict:
        return {"queries": self.queries, "exact": self.exact, "mismatched": self.mismatched[:20],
                "max_abs_diff": self.max_abs_diff, "k": self.k}


def load_collection(folder: str | os.PathLike) -> tuple[list[str], sp.csr_matrix, dict[str, int]]:
    """Document ids, integer impact matrix and term -> column of a ``JsonVectorCollection`` folder."""
    ids: list[str] = []
    terms: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for path in sorted(p for p in Path(folder).iterdir() if p.is_file()):
        with open_collection_file(path) as f:
            for line in f:
                obj = json.loads(line)
                r = len(ids)
                ids.append(str(obj["id"]))
                for term, w in obj["vector"].items():
                    rows.append(r)
                    cols.append(terms.setdefault(term, len(terms)))
                    vals.append(int(w))
    matrix = sp.csr_matrix((np.array(vals, dtype=np.int64), (rows, cols)), shape=(len(ids), len(terms)))
    return ids, matrix, terms


def check_exactness(collection_dir: str | os.PathLike, query_maps: Mapping[str, Mapping[str, int]], run: Run,
                    k: int = 100) -> ExactnessReport:
    """Compare, for every query, the top-``k`` scores of ``run`` (Anserini) with the brute-force top-``k``."""
    ids, docs, terms = load_collection(collection_dir)
    index = {d: i for i, d in enumerate(ids)}
    report = ExactnessReport(k=k)
    for qid, weights in query_maps.items():
        q = np.zeros(docs.shape[1], dtype=np.int64)
        for term, w in weights.items():
            if term in terms:
                q[terms[term]] = int(w)
        scores = docs @ q
        positive = scores[scores > 0]  # Anserini returns only documents that match a query term
        brute = np.sort(positive)[::-1][:k].astype(float)
        hits = sorted(run.get(qid, {}).values(), reverse=True)[:k]
        anserini = np.array(hits, dtype=float)
        report.queries += 1
        same = len(brute) == len(anserini) and np.array_equal(brute, anserini)
        # each returned document's score must also be its own dot product (not only the multiset of scores)
        own = all(float(scores[index[d]]) == s for d, s in run.get(qid, {}).items())
        if same and own:
            report.exact += 1
        else:
            report.mismatched.append(qid)
            if len(brute) == len(anserini) and len(brute):
                report.max_abs_diff = max(report.max_abs_diff, float(np.abs(brute - anserini).max()))
    return report


def integer_scores(run: Run) -> dict[str, dict[str, float]]:
    """The run with every score rounded to its integer: the exact dot products of integer impacts, which is what PISA
    returned before it applied Anserini's tie rule."""
    return {q: {d: float(round(s)) for d, s in hits.items()} for q, hits in run.items()}



def residue(run: Run) -> dict[str, list[tuple[int, str, float]]]:
    """Per query, the ``(rank, docid, score)`` hits whose score is not an integer (Anserini's tie adjustment left a
    float32 residue)."""
    out = {}
    for q, hits in run.items():
        off = [(r, d, s) for r, (d, s) in enumerate(hits.items(), 1) if s != round(s)]
        if off:
            out[q] = off
    return out



def residue_runs(run: Run) -> dict[str, dict[int, list[str]]]:
    """Per query with a residue, every tied run holding one: ``{integer score: docids of the run, in rank order}``
    (the documents a focused test needs to meet the case: the adjustment depends only on a run's own members)."""
    out: dict[str, dict[int, list[str]]] = {}
    for q in residue(run):
        runs: dict[int, list[str]] = {}
        for d, s in run[q].items():
            runs.setdefault(round(s), []).append(d)
        out[q] = {score: docs for score, docs in runs.items()
                  if any(run[q][d] != score for d in docs)}
    return out

