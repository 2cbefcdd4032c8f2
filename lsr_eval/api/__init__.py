"""The Python API (the top layer, beside the command line): load a dataset, encode with SPLADE, index and search,
run BM25, evaluate with significance, fuse, run a benchmark. In memory unless ``out=`` asks for files.

    >>> import lsr_eval
    >>> ds = lsr_eval.load_dataset("scifact")
    >>> table = lsr_eval.evaluate(ds, {"bm25": lsr_eval.bm25(ds)})
"""

from lsr_eval._lazy import lazy_getattr

#: public name -> module of this package defining it (imported on first use: pandas, torch and the JVM stay
#: unimported until a call needs them)
EXPORTS = {
    "load_dataset": "runs", "bm25": "runs", "evaluate": "evaluation", "fuse": "fusion", "run_benchmark": "runs",
    "as_run": "inputs", "read_qrels_spec": "inputs", "per_query_scores": "evaluation", "Splade": "vectors",
    "Index": "vectors", "LoadOptions": "vectors", "EncodeOptions": "vectors", "ExportOptions": "vectors",
    "SearchOptions": "vectors", "run_evaluation": "evaluation", "Evaluation": "evaluation", "run_fusion": "fusion",
    "TuneOn": "fusion", "CrossValidate": "fusion", "Fused": "fusion",
}
__all__ = sorted(EXPORTS)
__getattr__ = lazy_getattr(__name__, {name: f"{module}" for name, module in EXPORTS.items()})
