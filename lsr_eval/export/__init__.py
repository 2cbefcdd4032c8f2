"""Stage 3, sparse vectors -> Anserini inputs: ``JsonVectorCollection`` documents and query topics / weight maps,
with integer impacts ``round_half_to_even(w * scale)`` (default scale 100, see :mod:`lsr_eval.export.quantize`).

Public names are imported lazily (scipy and the encode store load on first use, so that readers of collection
files, :func:`lsr_eval.export.jsonl.open_collection_file`, do not pay for them)."""

from __future__ import annotations

from lsr_eval._lazy import lazy_getattr

_EXPORTS = {
    "export_documents": "documents",
    "DEFAULT_SCALE": "quantize", "quantize": "quantize",
    **dict.fromkeys(("LUCENE_MAX_CLAUSES", "QuantizedQueries", "export_queries", "queries_over_clause_limit",
                     "quantize_queries", "query_weight_maps", "tsv_line", "write_query_jsonl", "write_query_tsv"),
                    "queries"),
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
