"""Fusion of runs through ranx (RRF, weighted sum and the other ranx methods), with tuning on training queries."""

from lsr_eval.fusion.fuse import Fusion, FusionCounts, RunCounts, fuse
from lsr_eval.fusion.methods import METHODS, NORMALISATIONS, FusionMethod, get_method, weight_grid
from lsr_eval.fusion.tune import Tuning, check_disjoint, tune_weights

__all__ = [
    "METHODS", "NORMALISATIONS", "Fusion", "FusionCounts", "FusionMethod", "RunCounts", "Tuning", "check_disjoint",
    "fuse", "get_method", "tune_weights", "weight_grid",
]
