"""lsr-eval: train, evaluate and compare learned sparse retrievers through Anserini.

Data flow (one sub-package per stage; a stage imports only from earlier ones, checked by
tests/unit/test_stage_order.py):

    data (text) -> models/encode (sparse vectors) -> export (JSON-vector collection)
    -> anserini/engines (index, search) -> runs -> evaluation / significance / fusion / efficiency
    -> pipeline (one system on one dataset) -> benchmark -> report -> api (the Python API) -> commands (the CLI)

Below them all: errors, defaults, hardware, manifest and workdir (the cache folder). Training (``train``) is a side
branch that produces checkpoints for ``models``.
Nothing is done at import time: the JVM, torch and ranx are imported lazily.
"""

__version__ = "0.1.0"

from lsr_eval import _lazy as _lazy_module  # noqa: E402  (its type: a sub-package imported later is no verb)
from lsr_eval._lazy import lazy_getattr as _lazy_getattr  # noqa: E402

#: The Python API at the package root (:mod:`lsr_eval.api`), imported on first use: ``import lsr_eval`` stays light.
#: (``run_benchmark``, ``run_evaluation`` and ``run_fusion`` return the whole result; ``benchmark``, ``evaluation`` and
#: ``fusion`` are the names of packages.)
_API = ("load_dataset", "Splade", "LoadOptions", "EncodeOptions", "ExportOptions", "SearchOptions", "Index", "bm25",
        "evaluate", "run_evaluation", "fuse", "run_fusion", "TuneOn", "CrossValidate", "run_benchmark")
#: The types the verbs take and return: runs and qrels are plain dicts (these are their aliases), vectors a class.
_TYPES = {"Run": "data.types", "Qrels": "data.types", "SparseVectors": "encode.protocol"}
__all__ = ["__version__", *_API, *_TYPES]
__getattr__ = _lazy_getattr(__name__, {**{name: "api" for name in _API}, **_TYPES})


def __dir__() -> list[str]:
    """The verbs and types (``dir(lsr_eval)``, tab completion), though they are imported only on first use."""
    return sorted(n for n in set(globals()) | set(__all__)
                  if (not n.startswith("_") or n == "__version__") and type(globals().get(n)) is not type(_lazy_module))
