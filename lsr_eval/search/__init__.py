"""What every searcher shares, whatever the engine: a search's counts, the check of k, batches
(:mod:`~lsr_eval.search.counts`) and Anserini's score-tie rule (:mod:`~lsr_eval.search.ties`). Its own stage,
before Anserini and the engines, so that neither imports the other to reach it."""
