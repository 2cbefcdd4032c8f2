"""Paired significance tests on per-query scores (t-test, randomisation test) with Bonferroni correction."""

from lsr_eval.significance._paired import TestResult
from lsr_eval.significance.compare import MARKER, TESTS, compare, compare_runs, format_table
from lsr_eval.significance.correction import bonferroni
from lsr_eval.significance.randomisation import exact_randomisation_test, randomisation_test
from lsr_eval.significance.ttest import paired_t_test

__all__ = [
    "MARKER", "TESTS", "TestResult", "bonferroni", "compare", "compare_runs", "exact_randomisation_test",
    "format_table", "paired_t_test", "randomisation_test",
]
