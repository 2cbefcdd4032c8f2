"""Efficiency measurements: expected FLOPs, posting-list statistics, per-query latency.

- :mod:`~lsr_eval.efficiency.flops`: per-term activation counts (streamed from an encoding, or from query weight
  maps) and the expected FLOPs ``sum_j p_q(j) p_d(j)``;
- :mod:`~lsr_eval.efficiency.postings`: posting-list lengths from the document counts, index size on disk;
- :mod:`~lsr_eval.efficiency.latency`: single-thread query encoding + impact search (+ BM25) latency;
- :mod:`~lsr_eval.efficiency.stats`: the percentile used by all of them.

Nothing heavy is imported here: torch and Java load only when :mod:`~lsr_eval.efficiency.latency` runs.
"""
