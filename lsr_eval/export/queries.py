"""Query vectors for Anserini: integer weight maps, JSON-vector topics, TSV topics, and Lucene's clause limit.

- weight maps ``{qid: {token: impact}}`` feed ``SimpleImpactSearcher.search(Map<String,Integer>, k)``;
- TSV ``qid<TAB>tok tok tok ...`` with each token repeated ``impact`` times: Anserini's sparse topic format
  (``SearchCollection -topicReader TsvString -impact -pretokenized``), as naver/splade's ``queries_anserini.tsv``.
  Anserini's TSV reader fails on a line with no tab-separated text, so empty query vectors are refused or skipped
  there (``on_empty``);
- JSON lines ``{"id": ..., "vector": {token: impact}}``, a lossless record of the weight maps, keyed like the
  document collection (Anserini's JSON topic readers serve dense vectors: SearchCollection does not search sparse
  JSON topics; use the TSV or the weight maps, which :func:`read_query_jsonl` gives back).
Impacts: :mod:`lsr_eval.export.quantize` (same scale as the documents); tokens in vocabulary-id order.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, get_args

from lsr_eval.defaults import LUCENE_MAX_CLAUSES
from lsr_eval.encode.protocol import SparseVectors
from lsr_eval.encode.store import atomic_write
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export.collection import EXPORTED, VectorError, Weights, parse_vector
from lsr_eval.export.jsonl import json_dumper
from lsr_eval.export.quantize import DEFAULT_SCALE, ROUNDING, VocabCheck, check_scale, quantize_rows
from lsr_eval.manifest import prepare_output, write_manifest

STAGE = "export-queries"
OnEmpty = Literal["error", "skip"]
QUERIES_JSONL = "queries.jsonl"
QUERIES_TSV = "queries.tsv"
_TSV_UNSAFE = re.compile(r"[\t\n\r]")

WeightMaps = dict[str, dict[str, int]]


@dataclass(frozen=True)
class QuantizedQueries:
    """``maps``: qid -> token -> impact (> 0), in input order; counts for manifests."""

    maps: WeightMaps
    dropped_zero_weights: int
    empty_before: int

    @property
    def empty(self) -> list[str]:
        return [qid for qid, m in self.maps.items() if not m]


def quantize_queries(vectors: SparseVectors, scale: float = DEFAULT_SCALE) -> QuantizedQueries:
    """Integer weight maps of ``vectors``; refuses non-finite/negative weights (naming the query) and tokens with
    whitespace; weights that round to 0 are dropped (counted)."""
    scale = check_scale(scale)
    seen: set[str] = set()
    for qid in vectors.ids:
        if qid in seen:
            raise InputError(f"duplicate query id {qid!r}")
        seen.add(qid)
    vocab = VocabCheck(vectors.vocab)
    q = quantize_rows(vectors.matrix, vectors.ids, vocab, scale, what="query")
    toks, vals, ptr = vocab.tokens[q.indices].tolist(), q.values.tolist(), q.indptr.tolist()
    maps = {qid: dict(zip(toks[ptr[i]:ptr[i + 1]], vals[ptr[i]:ptr[i + 1]])) for i, qid in enumerate(vectors.ids)}
    return QuantizedQueries(maps, q.dropped_zero_weights, q.empty_before)


def query_weight_maps(vectors: SparseVectors, scale: float = DEFAULT_SCALE) -> WeightMaps:
    """``{qid: {token: impact}}`` for ``SimpleImpactSearcher.search(Map<String,Integer>, k)``."""
    return quantize_queries(vectors, scale).maps


def queries_over_clause_limit(maps: Mapping[str, Mapping[str, int]],
                              limit: int = LUCENE_MAX_CLAUSES) -> dict[str, int]:
    """Queries with more than ``limit`` terms (Lucene would raise TooManyClauses): qid -> number of terms."""
    return {qid: len(m) for qid, m in maps.items() if len(m) > limit}


def write_query_jsonl(maps: Mapping[str, Mapping[str, int]], path: str | os.PathLike) -> int:
    """``{"id": ..., "vector": {...}}`` per query (atomically); returns the number of lines."""
    _, dumps = json_dumper()
    lines = [dumps({"id": qid, "vector": dict(m)}) for qid, m in maps.items()]
    atomic_write(Path(path), lambda f: f.write(b"".join(line + b"\n" for line in lines)))
    return len(lines)


def read_query_jsonl(path: str | os.PathLike, weights: Weights = EXPORTED) -> WeightMaps:
    """Weight maps of a query file, ``{"id": "...", "vector": {token: weight}}`` per line (docs/collections.md),
    each line checked against ``weights`` (an engine's: ``lsr_eval.engines.registry.ENGINES[name].weights``) by
    :func:`lsr_eval.export.collection.parse_vector`; zero weights are dropped, and an empty vector is a query
    without terms (kept). Errors name the file, the line and the query id."""
    maps: WeightMaps = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                qid, vector, _ = parse_vector(line, weights)
            except VectorError as e:
                raise InputError(e.message(path, lineno, "query")) from None
            if qid in maps:
                raise InputError(f"{path}:{lineno}: duplicate query id {qid!r}")
            maps[qid] = vector  # type: ignore[assignment]
    return maps


def tsv_line(qid: str, vector: Mapping[str, int]) -> str:
    """``qid<TAB>`` + each token repeated ``impact`` times, space-separated."""
    if _TSV_UNSAFE.search(qid) or qid != qid.strip():
        raise InputError(f"query id {qid!r} cannot be written to a TSV topic file (tab, newline or surrounding "
                         "whitespace)")
    return qid + "\t" + " ".join(" ".join([tok] * w) for tok, w in vector.items())


def write_query_tsv(maps: Mapping[str, Mapping[str, int]], path: str | os.PathLike,
                    on_empty: OnEmpty = "error") -> list[str]:
    """Anserini TSV topics (atomically); returns the ids of the empty queries skipped (``on_empty="skip"``)."""
    if on_empty not in get_args(OnEmpty):
        raise ConfigError(f"on_empty must be one of {', '.join(get_args(OnEmpty))}, got {on_empty!r}")
    empty = [qid for qid, m in maps.items() if not m]
    if empty and on_empty == "error":
        raise InputError(f"{len(empty)} query vector(s) are empty (e.g. {empty[:5]}): Anserini's TSV topic reader "
                         "cannot read them; pass on_empty='skip' to leave them out")
    text = "".join(tsv_line(qid, m) + "\n" for qid, m in maps.items() if m)
    atomic_write(Path(path), lambda f: f.write(text.encode("utf-8")))
    return empty


def export_queries(vectors: SparseVectors, out_folder: str | os.PathLike, experiment: Mapping[str, Any], *,
                   scale: float = DEFAULT_SCALE, on_empty: OnEmpty = "error", clause_limit: int = LUCENE_MAX_CLAUSES,
                   overwrite: bool = False) -> dict[str, Any]:
    """Write ``queries.jsonl`` and ``queries.tsv`` and a manifest (counts, scale, queries over the clause limit);
    returns the manifest sections."""
    if on_empty not in get_args(OnEmpty):
        raise ConfigError(f"on_empty must be one of {', '.join(get_args(OnEmpty))}, got {on_empty!r}")
    quantized = quantize_queries(vectors, scale)
    out = prepare_output(out_folder, experiment, overwrite)
    skipped = write_query_tsv(quantized.maps, out / QUERIES_TSV, on_empty)  # first: it may refuse empty queries
    n_jsonl = write_query_jsonl(quantized.maps, out / QUERIES_JSONL)
    postings = sum(len(m) for m in quantized.maps.values())
    n = len(quantized.maps)
    over = queries_over_clause_limit(quantized.maps, clause_limit)
    sections: dict[str, Any] = {
        "counts": {"queries_in": n, "queries_jsonl": n_jsonl, "queries_tsv": n - len(skipped),
                   "empty_vectors": len(quantized.empty), "empty_before_quantization": quantized.empty_before,
                   "skipped_in_tsv": skipped, "dropped_zero_weights": quantized.dropped_zero_weights,
                   "total_postings": postings, "over_clause_limit": over},
        "vectors": {"avg_active_dims": postings / n if n else 0.0,
                    "max_active_dims": max((len(m) for m in quantized.maps.values()), default=0)},
        "parameters": {"scale": check_scale(scale), "rounding": ROUNDING, "clause_limit": clause_limit,
                       "on_empty": on_empty},
        "outputs": {"jsonl": QUERIES_JSONL, "tsv": QUERIES_TSV},
    }
    write_manifest(out, STAGE, experiment, **sections)
    return sections
