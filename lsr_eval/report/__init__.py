"""Reporting: the papers' tables, effectiveness-efficiency and training figures, and an HTML page, from a results
folder (``RESULTS/<benchmark>/table.json|csv`` + ``manifest.json``, ``RESULTS/train/<run>/log.jsonl``).

- :mod:`.loading`: read and normalise the results (:func:`load_results`); :mod:`.linking`: benchmark rows -> the
  training run (backbone, k) that produced them;
- :mod:`.tables`: rescaling, efficiency and per-benchmark tables (:class:`.table.Table`: Markdown, LaTeX, HTML, CSV);
  :mod:`.summary`: what was read; :mod:`.formatting`: how numbers are written;
- :mod:`.plots`: trade-off (with :mod:`.pareto` fronts), training-curve and head-norm figures (:mod:`.best_k`);
- :mod:`.scaling`: engines across collection sizes (latency by size, recall against latency), with each
  figure's ``figure.csv``;
- :mod:`.html` and :mod:`.build`: the whole report (:func:`write_report`), as ``lsr-eval report`` writes it.

matplotlib is imported only when a figure is drawn.
"""

from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.loading import (
    BenchmarkResults,
    Results,
    TrainingRun,
    combine,
    load_benchmark,
    load_results,
    load_training_run,
)
from lsr_eval.report.table import Table

__all__ = ["BenchmarkResults", "NumberFormat", "Results", "Table", "TrainingRun", "combine", "load_benchmark",
           "load_results", "load_training_run"]
