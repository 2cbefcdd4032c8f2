"""A test over queries with training seeds as blocks: Fisher's randomisation test restricted to within each seed
(Fisher 1935; for IR, Smucker, Allan & Carterette, CIKM 2007; the blocked layout as in a randomised complete block
design, Box, Hunter & Hunter 2005, ch. 4).

Design notes: docs/design.md."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from lsr_eval.errors import InputError
from lsr_eval.significance._paired import TestResult
from lsr_eval.significance.randomisation import (
    DEFAULT_PERMUTATIONS,
    DEFAULT_SEED,
    MAX_EXACT_QUERIES,
    exact_randomisation_test,
    randomisation_test,
)


def seed_block_randomisation_test(baseline: Mapping[int, Sequence[float]], treatment: Mapping[int, Sequence[float]],
                                  n_permutations: int = DEFAULT_PERMUTATIONS,
                                  seed: int = DEFAULT_SEED) -> TestResult:
    """Treatment against baseline over queries, seeds as blocks (``{seed: per-query scores}``, the same seeds in
    both arms and the same queries, in the same order, for every seed); ``queries`` of the result counts cells."""
    if set(baseline) != set(treatment) or not baseline:
        raise InputError(f"seed-block test: both arms need the same seeds, got {sorted(baseline)} and "
                         f"{sorted(treatment)}")
    seeds = sorted(baseline)
    lengths = {len(baseline[s]) for s in seeds} | {len(treatment[s]) for s in seeds}
    if len(lengths) != 1:
        raise InputError(f"seed-block test: every seed needs the same queries in both arms, got lengths "
                         f"{sorted(lengths)}")
    x = np.concatenate([np.asarray(baseline[s], dtype=np.float64) for s in seeds])
    y = np.concatenate([np.asarray(treatment[s], dtype=np.float64) for s in seeds])
    # a sign per (seed, query) cell and none across seeds: the blocked randomisation is the paired one on the cells
    if len(x) <= MAX_EXACT_QUERIES:
        return exact_randomisation_test(x, y)
    return randomisation_test(x, y, n_permutations=n_permutations, seed=seed)
