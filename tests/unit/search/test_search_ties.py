"""Anserini's score-tie rule (lsr_eval.search.ties), the contract of every exact engine: hand-computed values, the
line-by-line walk of Anserini 1.7.1's ScoreTiesAdjusterReranker as the reference, and speed on integer ties."""

from __future__ import annotations

import time

import numpy as np

from lsr_eval.search.ties import adjust_ties, adjusted_hits, complete_top_k, ranked_hits

f = np.float32


def tie(score: float, d: int) -> np.float32:
    """The ``d``-th document of a tied run at ``score``: ``score - d * 1e-6`` in float32."""
    return f(score) - f(1e-6) * f(d)


def walk(scores: np.ndarray) -> np.ndarray:
    """ScoreTiesAdjusterReranker.rerank line by line (javap of Anserini 1.7.1: ``Math.round(double)``, float32
    ``1e-6f * dup`` and subtraction)."""
    out = (np.floor(np.asarray(scores, dtype=np.float32).astype(np.float64) * 1e4 + 0.5) / 1e4).astype(np.float32)
    dup = 0
    for i in range(len(out)):
        if i == 0 or out[i - 1] - out[i] > f(1e-4):
            dup = 0
        else:
            dup += 1
            out[i] = out[i] - f(1e-6) * f(dup)
    return out


def test_integer_ties_by_hand():
    # the NFCorpus case: below 64 a float32 step is 3.8e-6, so 51 - 1e-6 rounds back to 51 but 51 - 2e-6 does not
    out = adjust_ties(f([52, 51, 51, 51, 51, 51, 50]))
    assert out.tolist() == [52, 51, 51, f(50.999996), f(50.999996), f(50.999996), 50]
    assert tie(51, 2) == f(50.999996) and tie(51, 1) == f(51)
    # small scores keep every step: 4, 4 - 1e-6, 4 - 2e-6 (float32 steps of 4.8e-7 below 4)
    assert adjust_ties(f([4, 4, 4, 1])).tolist() == [4, tie(4, 1), tie(4, 2), 1]
    # large scores lose them: from 128 on, a 2e-6 step rounds back to the integer (ties left to the docids)
    assert adjust_ties(f([300, 300, 300])).tolist() == [300, 300, 300]
    assert adjust_ties(f([])).tolist() == [] and adjust_ties(f([9, 9, 7, 7])).tolist() == [9, tie(9, 1), 7, tie(7, 1)]


def test_rounding_to_1e4_by_hand():
    # 5.12346 -> 5.1235; 2.00004 and 1.99996 round (half up, in double) to 2.0; the scores within 1e-4 of the one
    # before lose 1e-6, 2e-6
    out = adjust_ties(f([5.12346, 2.00004, 2.0, 1.99996, 1.5]))
    assert out.tolist() == [f(5.1235), f(2.0), tie(2, 1), tie(2, 2), f(1.5)]
    # 7.12555 in float32 is 7.1255498...: rounded in double to 7.1255 (float arithmetic would give 7.1256)
    assert adjust_ties(f([7.12555])).tolist() == [f(7.1255)]


def test_equals_the_line_by_line_walk():
    rng = np.random.default_rng(20)
    ambiguous = 0
    for _ in range(400):
        base = rng.choice([0.5, 5.0, 30.0, 51.0, 64.0, 70.0, 300.0, 5000.0])
        step = rng.choice([1.0, 3e-5, 1e-4, 1.01e-4, 1.05e-4, 1.1e-4, 2e-4])
        s = np.sort(f(base + rng.integers(0, 40, rng.integers(1, 300)) * step))[::-1].copy()
        r = (np.floor(s.astype(np.float64) * 1e4 + 0.5) / 1e4).astype(np.float32)
        gaps = r[:-1] - r[1:]
        ambiguous += int(np.any((gaps > f(1e-4)) & (gaps <= f(1e-4) + f(1e-6) * f(len(s)))))
        assert adjust_ties(s).tolist() == walk(s).tolist(), (base, step)
    assert ambiguous > 20  # lists with positions walked (a gap just over 1e-4), not only vectorised ones
    # above 64 a run can go on across a gap over 1e-4 (Anserini gives 64.000389 for the last score)
    s = f([64.0005] * 5 + [64.0004])
    assert adjust_ties(s).tolist() == walk(s).tolist() and walk(s)[-1] == f(64.000389)


def test_long_integer_ties_are_fast():
    """A top 1000 of small integer scores (NFCorpus' deep lists) is one vectorised pass, not a walk per rank."""
    rng = np.random.default_rng(1)
    s = np.sort(f(rng.integers(40, 300, 1000)))[::-1].copy()
    assert adjust_ties(s).tolist() == walk(s).tolist()
    t0 = time.perf_counter()
    for _ in range(100):
        adjust_ties(s)
    assert (time.perf_counter() - t0) / 100 < 2e-3  # ~0.1 ms (the walk takes ~5 ms)


def test_adjusted_hits_are_python_floats_of_the_float32_scores():
    hits = adjusted_hits(["a", "b", "c"], [51.0, 51.0, 51.0])
    assert hits == [("a", 51.0), ("b", 51.0), ("c", float(f(50.999996)))]
    assert all(type(s) is float for _, s in hits) and adjusted_hits([], []) == []


def test_ranked_hits_orders_each_tied_run_by_docid_then_cuts_and_adjusts():
    # PISA's heap order: scores descending, tied documents in any order
    scores = f([9, 7, 7, 7, 5, 5, 3])
    docids = ["d9", "c", "a", "b", "z", "y", "x"]
    assert ranked_hits(scores, docids, 5) == [("d9", 9.0), ("a", 7.0), ("b", float(tie(7, 1))), ("c", float(tie(7, 2))),
                                              ("y", 5.0)]
    assert ranked_hits(f([4, 4]), ["b", "a"], 10) == [("a", 4.0), ("b", float(tie(4, 1)))]
    assert ranked_hits(f([]), [], 3) == [] and ranked_hits(f([2]), ["q"], 1) == [("q", 2.0)]
    # a list that is not ranked by score is sorted in full (score desc, docid asc)
    assert ranked_hits(f([1, 3, 3]), ["a", "c", "b"], 2) == [("b", 3.0), ("c", float(tie(3, 1)))]
    assert ranked_hits(f([8, 6, 6]), ["x", "n", "m"], 3) == adjusted_hits(["x", "m", "n"], [8, 6, 6])


def test_complete_top_k_asks_again_while_a_tie_straddles_the_cut():
    """An engine whose top-``limit`` keeps tied documents in reverse docid order (as PISA's heap or Qdrant may):
    query 0 has five documents at 3 behind one at 9: k = 2 asks for 3, whose last ties with the 2nd; 6, all six and
    the last still tied; 12, fewer than asked, so the run is whole and ranked by docid. Query 1 has fewer hits than
    asked (one call); query 2 is never asked."""
    lists = {0: [(9, "z")] + [(3, d) for d in "edcba"], 1: [(5, "x")]}
    calls = []

    def fetch(positions, limit):
        calls.append((list(positions), limit))
        return [(f([s for s, _ in lists[i][:limit]]), [d for _, d in lists[i][:limit]]) for i in positions]

    top = complete_top_k(fetch, [0, 1], 2)
    assert calls == [([0, 1], 3), ([0], 6), ([0], 12)]
    assert top == {0: [("z", 9.0), ("a", 3.0)], 1: [("x", 5.0)]}
