"""One system on one dataset (BM25, SPLADE): the stages chained, with caching and manifests (formerly
lsr_eval.experiments, whose name still works for one release, with a warning)."""
