"""Pyserini's own Python modules, for side-by-side checks against Pyserini (its SPLADE encoders, its searchers).

Importing them needs care that lives here, beside the JVM's owner: ``pyserini.encode`` and ``pyserini.search.lucene``
build an OpenAI client at import (a dummy ``OPENAI_API_KEY`` is set when none is), and pyserini starts a JVM at import
unless one runs, so lsr-eval's (:func:`lsr_eval.anserini.jvm.start`: Java 21+, Anserini's fatjar) starts first.
"""

from __future__ import annotations

import os
from types import ModuleType

from lsr_eval.anserini import jvm

#: Placeholder key: pyserini only builds the client object, no request is made.
DUMMY_OPENAI_KEY = "sk-unused-by-lsr-eval"


def pyserini_encode() -> ModuleType:
    """``pyserini.encode`` (``SpladeQueryEncoder``, ``SpladeDocumentEncoder``, ...), imported safely."""
    _prepare()
    import pyserini.encode as encode

    return encode


def pyserini_search() -> ModuleType:
    """``pyserini.search.lucene`` (``LuceneImpactSearcher``, ...), imported safely."""
    _prepare()
    import pyserini.search.lucene as search

    return search


def _prepare() -> None:
    os.environ.setdefault("OPENAI_API_KEY", DUMMY_OPENAI_KEY)
    jvm.start()
