"""lsr-eval: train, evaluate and compare learned sparse retrievers through Anserini.

Data flow (one sub-package per stage; a stage imports only from earlier ones):

    data (text) -> models/encode (sparse vectors) -> export (JSON-vector collection)
    -> anserini (index, search) -> runs -> evaluation / fusion -> report

Training (``train``) is a side branch that produces checkpoints for ``models``.
Nothing is done at import time: the JVM, torch and ranx are imported lazily.
"""

__version__ = "0.1.0"
