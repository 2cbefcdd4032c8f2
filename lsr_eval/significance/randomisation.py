"""Fisher's randomisation (permutation) test on paired per-query scores, as recommended for IR by Smucker, Allan &
Carterette, "A Comparison of Statistical Significance Tests for Information Retrieval Evaluation", CIKM 2007.

The p-value is the share of sign vectors ``s`` with ``|sum_i s_i d_i| >= |sum_i d_i|``: exact over all 2^n, or
Monte Carlo ``(1 + hits) / (B + 1)`` (Phipson & Smyth, SAGMB 2010), seeded so that a (seed, B) pair gives the same
p-value on every machine.

Design notes: docs/design.md."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from lsr_eval.errors import ConfigError
from lsr_eval.settings import Setting, check
from lsr_eval.significance._paired import TestResult, differences

#: Default number of random sign vectors (Smucker et al. 2007 used 100,000).
DEFAULT_PERMUTATIONS = 100_000
#: Default seed of the sign generator.
DEFAULT_SEED = 0
#: Sign vectors drawn per block (bounds memory: BLOCK x n float64).
BLOCK = 4096
#: Tolerance of the ``>=`` comparison, relative to ``sum |d_i|``.
RELATIVE_TOLERANCE = 1e-10
#: Largest n enumerated exactly (2^20 sign vectors).
MAX_EXACT_QUERIES = 20


def _threshold(d: np.ndarray) -> tuple[float, float]:
    observed = abs(math.fsum(d.tolist()))
    return observed, observed - RELATIVE_TOLERANCE * math.fsum(np.abs(d).tolist())


#: Random sign vectors of the test, declared once.
PERMUTATIONS = Setting(help="random sign vectors of the randomisation test", ge=1)


def randomisation_test(baseline: Sequence[float] | np.ndarray, treatment: Sequence[float] | np.ndarray,
                       n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED) -> TestResult:
    """Two-sided Monte Carlo randomisation test with ``n_permutations`` random sign vectors (see the module doc)."""
    check("n_permutations", n_permutations, int, PERMUTATIONS)
    d = differences(baseline, treatment)
    observed, threshold = _threshold(d)
    rng = np.random.default_rng(seed)
    n, total, hits = len(d), float(d.sum()), 0
    for start in range(0, n_permutations, BLOCK):
        rows = min(BLOCK, n_permutations - start)
        # one random bit per sign: s = 2 b - 1, so sum_i s_i d_i = 2 sum_i b_i d_i - sum_i d_i
        bits = np.unpackbits(rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
        hits += int(np.count_nonzero(np.abs(2.0 * (bits.astype(np.float64) @ d) - total) >= threshold))
    return TestResult(float(d.mean()), observed, (hits + 1) / (n_permutations + 1), len(d))


def exact_randomisation_test(baseline: Sequence[float] | np.ndarray,
                             treatment: Sequence[float] | np.ndarray) -> TestResult:
    """Two-sided randomisation test over all 2^n sign vectors (n <= :data:`MAX_EXACT_QUERIES`)."""
    d = differences(baseline, treatment)
    n = len(d)
    if n > MAX_EXACT_QUERIES:
        raise ConfigError(f"exact randomisation test: {n} queries would need 2^{n} sign vectors; the limit is "
                          f"{MAX_EXACT_QUERIES} queries (use the Monte Carlo test)")
    observed, threshold = _threshold(d)
    patterns = np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)[None, :] & 1
    sums = (patterns * 2 - 1).astype(np.float64) @ d
    hits = int(np.count_nonzero(np.abs(sums) >= threshold))
    return TestResult(float(d.mean()), observed, hits / 2 ** n, n)
