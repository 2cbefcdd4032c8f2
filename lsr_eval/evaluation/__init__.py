"""Evaluation: named measures (ir_measures style), identical to ``trec_eval -c``."""

from lsr_eval.evaluation.evaluate import (
    QueryCounts,
    count_queries,
    evaluate,
    evaluate_graded,
    mean_scores,
    write_metrics,
)
from lsr_eval.evaluation.measures import DEFAULT_MEASURES, FAMILIES, Family, Measure, parse_measure, parse_measures

__all__ = [
    "DEFAULT_MEASURES", "FAMILIES", "Family", "Measure", "QueryCounts", "count_queries", "evaluate", "evaluate_graded",
    "mean_scores", "parse_measure", "parse_measures", "write_metrics",
]
