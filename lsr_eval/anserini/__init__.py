"""Stage 4, Anserini: the only code in lsr-eval that touches Java (jnius, pyserini's fatjar).

The JVM starts lazily on first use (:func:`lsr_eval.anserini.jvm.autoclass`), never at import.
"""
