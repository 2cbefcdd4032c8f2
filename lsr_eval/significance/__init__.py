"""Paired significance tests on per-query scores (t-test, randomisation test) with Bonferroni, Holm or
Benjamini-Hochberg correction; a
measure over training seeds (mean, sd, t interval); two arms compared across seeds (paired or Welch t-test) and
over queries with seeds as blocks."""

from lsr_eval.significance._paired import TestResult
from lsr_eval.significance.compare import MARKER, TESTS, compare, compare_runs, format_table
from lsr_eval.significance.correction import benjamini_hochberg, bonferroni, correct, holm
from lsr_eval.significance.randomisation import exact_randomisation_test, randomisation_test
from lsr_eval.significance.seed_blocks import seed_block_randomisation_test
from lsr_eval.significance.seed_interval import SeedSummary, seed_summary
from lsr_eval.significance.seed_ttest import SeedComparison, seed_t_test
from lsr_eval.significance.ttest import paired_t_test

__all__ = [
    "MARKER", "TESTS", "TestResult", "benjamini_hochberg", "bonferroni", "compare", "compare_runs", "correct",
    "exact_randomisation_test", "holm",
    "format_table", "paired_t_test", "randomisation_test", "SeedComparison", "SeedSummary",
    "seed_block_randomisation_test", "seed_summary", "seed_t_test",
]
