"""lsr-eval: train, evaluate and compare learned sparse retrievers through Anserini.

Data flow (one sub-package per stage; a stage imports only from earlier ones, checked by tests/test_stage_order.py):

    data (text) -> models/encode (sparse vectors) -> export (JSON-vector collection)
    -> searching/anserini/engines (index, search) -> runs -> evaluation / significance / fusion / efficiency
    -> experiments -> benchmark -> report

Below them all: errors, defaults, hardware, manifest and workdir (the cache folder). Training (``train``) is a side
branch that produces checkpoints for ``models``.
Nothing is done at import time: the JVM, torch and ranx are imported lazily.
"""

__version__ = "0.1.0"
