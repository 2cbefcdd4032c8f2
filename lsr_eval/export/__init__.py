"""Stage 3, sparse vectors -> Anserini inputs: ``JsonVectorCollection`` documents and query topics / weight maps,
with integer impacts ``round_half_to_even(w * scale)`` (default scale 100, see :mod:`lsr_eval.export.quantize`)."""

from lsr_eval.export.documents import export_documents
from lsr_eval.export.quantize import DEFAULT_SCALE, quantize
from lsr_eval.export.queries import (LUCENE_MAX_CLAUSES, QuantizedQueries, export_queries, queries_over_clause_limit,
                                     quantize_queries, query_weight_maps, tsv_line, write_query_jsonl,
                                     write_query_tsv)

__all__ = [
    "DEFAULT_SCALE", "LUCENE_MAX_CLAUSES", "QuantizedQueries", "export_documents",
    "export_queries", "quantize", "quantize_queries", "queries_over_clause_limit", "query_weight_maps", "tsv_line",
    "write_query_jsonl", "write_query_tsv",
]
