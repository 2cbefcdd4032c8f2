"""What every searcher shares, below both Anserini's bindings (:mod:`lsr_eval.anserini`) and the engines behind the
retriever protocol (:mod:`lsr_eval.engines`), so that neither imports the other's stage: the counts of a search, the
check of k and the batches of a batch search (:mod:`.counts`), and Anserini's tie rule that makes the exact engines'
runs bit-identical (:mod:`.ties`)."""
