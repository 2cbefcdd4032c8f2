"""Fusion of runs through ranx (RRF, weighted sum and the other ranx methods), with tuning on training queries."""

from lsr_eval.fusion.cross_validation import CrossValidated, cross_validate
from lsr_eval.fusion.fuse import Fusion, FusionCounts, RunCounts, check_inputs, fuse
from lsr_eval.fusion.methods import METHODS, NORMALISATIONS, FusionMethod, get_method, weight_grid
from lsr_eval.fusion.tune import Tuning, check_disjoint, tune_weights

__all__ = [
    "METHODS", "NORMALISATIONS", "CrossValidated", "Fusion", "FusionCounts", "FusionMethod", "RunCounts", "Tuning",
    "check_disjoint", "check_inputs", "cross_validate", "fuse", "get_method", "tune_weights", "weight_grid",
]
