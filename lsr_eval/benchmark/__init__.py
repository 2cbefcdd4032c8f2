"""Benchmarks: BM25 and SPLADE models over datasets, fused, tested for significance, measured for efficiency,
summarised in one table per benchmark (CSV + JSON + manifest). Configured by a YAML file in ``pipelines/``."""
