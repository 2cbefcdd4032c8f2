"""What every searcher shares, whatever the engine: a search's counts and batches (:mod:`~lsr_eval.search.counts`),
its declared settings (k, threads, BM25's k1 and b: :mod:`~lsr_eval.search.params`) and Anserini's score-tie rule
(:mod:`~lsr_eval.search.ties`). Its own stage,
before Anserini and the engines, so that neither imports the other to reach it."""
