"""What several studies share to measure: how far two runs or encodings agree (:mod:`.agreement`), and the timing
and memory harness of side-by-side benchmarks (:mod:`.measure`). Study code, outside the package: it imports
``lsr_eval``, which never imports it."""
