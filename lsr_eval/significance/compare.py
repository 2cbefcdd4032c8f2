"""Significance table: each system against a baseline, per measure, with corrected p-values (Bonferroni by
default, Holm or Benjamini-Hochberg: :mod:`lsr_eval.significance.correction`).

Per-query scores come from :func:`lsr_eval.evaluation.evaluate` (``per_query=True``): trec_eval -c values over every
judged query (0 for a judged query without results), so every system is scored on the same queries. Each
(system, measure) pair other than the baseline's is one hypothesis; the family is every hypothesis of the table
(``family="table"``) or those of one measure (``family="measure"``: the systems compared with the baseline), and
``m`` its size. A row is significant when its corrected p-value is below ``alpha``; it is then marked
:data:`MARKER` (two-sided: the sign of ``difference`` says which way).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Literal, Mapping, get_args

from lsr_eval.data.types import Qrels, Run
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.evaluation import evaluate
from lsr_eval.settings import check
from lsr_eval.settings.shared import ALPHA, DEFAULT_ALPHA
from lsr_eval.significance.correction import Correction, check_correction, correct
from lsr_eval.significance.randomisation import DEFAULT_PERMUTATIONS, DEFAULT_SEED, randomisation_test
from lsr_eval.significance.ttest import paired_t_test

#: Marker of a significant difference from the baseline after correction.
MARKER = "†"
#: Markers of a significant difference by its sign (tables of the benchmark and of ``evaluate --baseline``).
BETTER, WORSE = "†", "↓"

Test = Literal["t-test", "randomisation"]
TESTS: tuple[str, ...] = get_args(Test)
Family = Literal["table", "measure"]
FAMILIES: tuple[str, ...] = get_args(Family)

#: Columns of the table returned by :func:`compare`.
COLUMNS = ("system", "measure", "mean", "baseline_mean", "difference", "queries", "test", "statistic", "p_value",
           "p_corrected", "comparisons", "significant", "marker")

#: system -> measure -> query id -> score.
PerQuery = Mapping[str, Mapping[str, Mapping[str, float]]]


def _check(per_query: PerQuery, baseline: str) -> list[str]:
    """Every system has the baseline's measures and, per measure, exactly its queries; returns the measures."""
    if baseline not in per_query:
        raise InputError(f"baseline {baseline!r} is not among the systems: {', '.join(per_query)}")
    if len(per_query) < 2:
        raise InputError("significance: needs the baseline and at least one other system")
    measures = list(per_query[baseline])
    for system, table in per_query.items():
        if list(table) != measures:
            raise InputError(f"system {system!r} has measures {list(table)}, the baseline {measures}")
        for m in measures:
            mine, theirs = set(table[m]), set(per_query[baseline][m])
            if mine != theirs:
                diff = sorted(mine ^ theirs)
                raise InputError(f"system {system!r}, {m}: {len(diff)} queries differ from the baseline's (e.g. "
                                 f"{', '.join(diff[:5])}); paired tests need the same queries")
    return measures


def direction_marker(significant: bool, difference: float) -> str:
    """:data:`BETTER` or :data:`WORSE` for a significant difference (by its sign), ``""`` otherwise."""
    return "" if not significant else BETTER if difference > 0 else WORSE


def check_settings(test: str, alpha: float) -> None:
    """A known test and an alpha in (0, 1), checked before any work."""
    if test not in TESTS:
        raise ConfigError(f"test={test!r}: expected one of {', '.join(TESTS)}")
    check("alpha", alpha, float, ALPHA)


def compare(per_query: PerQuery, baseline: str, test: Test = "t-test", alpha: float = DEFAULT_ALPHA,
            family: Family = "table", n_permutations: int = DEFAULT_PERMUTATIONS, seed: int = DEFAULT_SEED,
            correction: Correction = "bonferroni") -> Any:
    """Test every system against ``baseline`` on every measure; return a ``pandas.DataFrame`` (:data:`COLUMNS`).

    One row per (system, measure), the baseline's rows first (with NaN test columns). ``test``: ``t-test``
    (:func:`~lsr_eval.significance.ttest.paired_t_test`) or ``randomisation``
    (:func:`~lsr_eval.significance.randomisation.randomisation_test` with ``n_permutations`` and ``seed``). The
    settings are in ``df.attrs``.
    """
    import pandas as pd

    check_settings(test, alpha)
    check_correction(correction)
    if family not in FAMILIES:
        raise ConfigError(f"family={family!r}: expected one of {', '.join(FAMILIES)}")
    measures = _check(per_query, baseline)
    systems = [baseline, *(s for s in per_query if s != baseline)]
    rows: list[dict[str, Any]] = []
    for system in systems:
        for m in measures:
            qids = list(per_query[baseline][m])
            base = [per_query[baseline][m][q] for q in qids]
            mine = [per_query[system][m][q] for q in qids]
            row = {"system": system, "measure": m, "mean": math.fsum(mine) / len(mine),
                   "baseline_mean": math.fsum(base) / len(base), "queries": len(qids), "test": test,
                   "statistic": math.nan, "p_value": math.nan}
            if system != baseline:
                r = (paired_t_test(base, mine) if test == "t-test"
                     else randomisation_test(base, mine, n_permutations, seed))
                row.update(statistic=r.statistic, p_value=r.p_value)
            row["difference"] = row["mean"] - row["baseline_mean"]
            rows.append(row)
    compared = len(systems) - 1
    m_factor = compared * len(measures) if family == "table" else compared
    groups = [list(range(len(rows)))] if family == "table" else \
        [[i for i, r in enumerate(rows) if r["measure"] == m] for m in measures]
    corrected = [math.nan] * len(rows)
    for group in groups:
        for i, p in zip(group, correct([rows[i]["p_value"] for i in group], correction, m_factor)):
            corrected[i] = p
    for row, p in zip(rows, corrected):
        row["p_corrected"] = p
        row["comparisons"] = m_factor if row["system"] != baseline else 0
        row["significant"] = bool(p < alpha)  # NaN (baseline) compares False
        row["marker"] = MARKER if row["significant"] else ""
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs.update(baseline=baseline, test=test, alpha=alpha, correction=correction, family=family,
                    comparisons=m_factor, **({"n_permutations": n_permutations, "seed": seed}
                                             if test == "randomisation" else {}))
    return df


def compare_runs(qrels: Qrels, runs: Mapping[str, Run], baseline: str, measures: Iterable[str],
                 **kwargs: Any) -> Any:
    """:func:`compare` on per-query scores of ``runs`` (name -> run) computed with our trec_eval -c evaluation."""
    measures = list(measures)
    return compare({name: evaluate(qrels, run, measures, per_query=True) for name, run in runs.items()}, baseline,
                   **kwargs)


def format_table(df: Any, decimals: int = 4) -> Any:
    """Wide display table: one row per system, one column per measure, ``mean`` with its marker (e.g.
    ``0.6712†``)."""
    cells = df.assign(cell=[f"{v:.{decimals}f}{mk}" for v, mk in zip(df["mean"], df["marker"])])
    wide = cells.pivot(index="system", columns="measure", values="cell")
    return wide.loc[list(dict.fromkeys(df["system"])), list(dict.fromkeys(df["measure"]))]
