"""Retrieval engines behind one seam (:mod:`lsr_eval.engines.base`): an engine builds its index from lsr-eval's
``JsonVectorCollection`` and searches integer-weighted queries into an in-memory run.

Anserini is the default and the reference; PISA (exact, fast), Seismic (approximate, fastest) and BMP (exact at its
safe setting, approximate below) are optional.
"""
