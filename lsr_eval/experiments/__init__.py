"""Experiments: the stages chained for one model and one dataset (BM25, SPLADE), with caching and manifests."""
