"""Constants that several stages share, each owned here once (and recorded in the manifests that use them).

Kept free of imports so that the command line can show them as defaults without loading numpy or Java.
"""

#: Quantisation scale: a weight ``w`` is exported as the integer impact ``rint(w * scale)`` (Pyserini's SPLADE
#: encoders use 100 for queries; the documents' index and the queries must share it).
DEFAULT_SCALE = 100
#: Lucene's default limit on clauses (terms) in one query (``IndexSearcher.getMaxClauseCount``).
LUCENE_MAX_CLAUSES = 1024
