"""Stage 1, text: benchmark datasets (a registry of named benchmarks), documents, queries and qrels."""
