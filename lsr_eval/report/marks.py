"""What a report cell or row says beyond its number (significance, declared costs, precision, judged queries
without results, why a cell has no number), and the notes under a table that explain it.

Design notes: docs/design.md."""

from __future__ import annotations

import math

import pandas as pd

from lsr_eval.benchmark.status import Status, kind_of
from lsr_eval.report.loading import P_SUFFIX, SIG_SUFFIX, text_of
from lsr_eval.significance.correction import CONTROLS, NAMES

ABSENT = "absent"
MISSING = "missing"
#: Cell of a fusion-only column (parts run in parallel) in another system's row.
NOT_FUSION = "n/a"
#: Significance markers of the benchmark tables (``<measure>_sig``).
BETTER_MARKER = "†"
WORSE_MARKER = "↓"
#: Mark of a cell whose row was not tested while other rows of its dataset and measure were.
NOT_TESTED = "°"
#: Suffix of a cost cell whose value the run's source declared.
DECLARED = " (declared)"
#: The precision every number is computed in unless a row says otherwise.
REFERENCE_PRECISION = "fp32"
#: How the benchmark's test names read in a note.
TEST_NAMES = {"t-test": "paired t-test", "randomisation": "paired randomisation test"}


def why_missing(status: str) -> str:
    """What a cell of a row with ``status`` shows when it has no number."""
    kind = kind_of(status)
    if kind is Status.OK:
        return MISSING
    if kind is Status.FAILED:
        return "failed"
    return status


def cell_text(row: pd.Series, column: str) -> str:
    """A table cell as stripped text ("" for a missing or NaN cell)."""
    return text_of(row.get(column, ""))


def cell_number(row: pd.Series, column: str) -> float:
    """A table cell as a float (NaN for a missing or non-numeric cell)."""
    value = row.get(column, math.nan)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def significance(row: pd.Series, measure: str) -> str:
    """``"better"``, ``"worse"``, ``"same"`` (tested, not significant), ``"baseline"`` or ``"untested"``."""
    baseline = cell_text(row, "baseline")
    if baseline and baseline == str(row["system"]):
        return "baseline"
    tested = (not math.isnan(cell_number(row, measure + P_SUFFIX)) if measure + P_SUFFIX in row.index
              else bool(baseline) and measure + SIG_SUFFIX in row.index)
    if not tested:
        return "untested"
    marker = cell_text(row, measure + SIG_SUFFIX)
    return "better" if marker == BETTER_MARKER else "worse" if marker == WORSE_MARKER else "same"


def tested_pairs(frame: pd.DataFrame, measures: list[str]) -> set[tuple[str, str]]:
    """The (dataset, measure) pairs on which some row of ``frame`` was tested against a baseline."""
    out = set()
    for _, row in frame.iterrows():
        for m in measures:
            if significance(row, m) in ("better", "worse", "same"):
                out.add((row["dataset"], m))
    return out


def declared(row: pd.Series, column: str) -> bool:
    """Whether ``row``'s ``column`` is a cost its run's source declared (not measured by lsr-eval)."""
    return column in {c.strip() for c in cell_text(row, "declared_costs").split(",") if c.strip()}


def precision_mark(row: pd.Series) -> str:
    """`` [bf16]`` for a row computed in another precision than fp32, else ""."""
    precision = cell_text(row, "precision")
    return f" [{precision}]" if precision and precision != REFERENCE_PRECISION else ""


def corrected(correction: str) -> str:
    """How a note names a correction for multiple comparisons (:mod:`lsr_eval.significance.correction`): Bonferroni
    as before corrections were a choice, the others with what their markers control."""
    if correction == "bonferroni" or correction not in NAMES:
        return f"{NAMES.get(correction, correction)}-corrected"
    return f"{NAMES[correction]}-corrected ({CONTROLS[correction]}" + (
        ", not family-wise error)" if correction == "bh" else ")")


class CellNotes:
    """Collects what the cells and rows of one table need explained, and writes the notes."""

    def __init__(self) -> None:
        self.failures: dict[str, list[str]] = {}
        self.reasons: set[str] = set()
        self.markers: dict[str, set[str]] = {}   # legacy markers other than † and ↓, by baseline
        # (test, alpha, baseline, correction) -> measures tested
        self.tests: dict[tuple[str, str, str, str], list[str]] = {}
        self.untested_cells = False
        self.untested_measures: dict[str, None] = {}
        self.declared: dict[str, str] = {}
        self.precisions: set[str] = set()
        self.judged_without: dict[str, int] = {}
        self.best: str | None = None

    def missing(self, reason: str, status: str, where: str) -> None:
        self.reasons.add(reason)
        if reason == "failed":
            self.failures.setdefault(status, [])
            if where not in self.failures[status]:
                self.failures[status].append(where)

    def significance_mark(self, row: pd.Series, measure: str, tested: set[tuple[str, str]]) -> str:
        """The mark of ``measure`` in ``row`` (see docs/design.md), recording what the notes must say."""
        state = significance(row, measure)
        if (row["dataset"], measure) not in tested:
            self.untested_measures[measure] = None
            return ""
        test = cell_text(row, "significance_test")
        alpha = cell_number(row, "significance_alpha")
        baseline = cell_text(row, "baseline") or (str(row["system"]) if state == "baseline" else "")
        if state == "untested":
            self.untested_cells = True
            return NOT_TESTED
        correction = cell_text(row, "significance_correction") or "bonferroni"   # tables made before it was a choice
        tested_measures = self.tests.setdefault((test, "" if math.isnan(alpha) else f"{alpha:g}", baseline,
                                                 correction), [])
        if measure not in tested_measures:
            tested_measures.append(measure)
        marker = cell_text(row, measure + SIG_SUFFIX)
        if marker and marker not in (BETTER_MARKER, WORSE_MARKER):
            self.markers.setdefault(marker, set()).add(baseline or "not named")
        return marker if state != "baseline" else ""

    def row(self, row: pd.Series, where: str) -> str:
        """Record the row's precision and judged queries without results; returns its label mark."""
        mark = precision_mark(row)
        if mark:
            self.precisions.add(mark.strip())
        count = cell_number(row, "judged_without_results")
        if count > 0:
            self.judged_without[where] = int(count)
        return mark

    def declared_cost(self, row: pd.Series) -> None:
        self.declared[str(row["system"])] = cell_text(row, "cost_source") or "source not given"

    def significance_lines(self) -> list[str]:
        out = []
        for (test, alpha, baseline, correction), measures in self.tests.items():
            name = TEST_NAMES.get(test, test) if test else "test not recorded (no significance settings in the " \
                                                             "benchmark's manifest)"
            level = f", α = {alpha}" if alpha else ""
            out.append(f"significance: {name} of each system against the baseline {baseline or '(not named)'} "
                       f"on {', '.join(measures)}, per query, {corrected(correction)}{level}: "
                       f"{BETTER_MARKER} significantly better, {WORSE_MARKER} significantly worse, unmarked: "
                       f"not significant" + (f"; {NOT_TESTED} not tested" if self.untested_cells else ""))
        for marker, baselines in sorted(self.markers.items()):
            out.append(f"{marker}: significance marker (from the <measure>_sig columns) against the baseline "
                       f"{', '.join(sorted(baselines))}")
        tested = {m for ms in self.tests.values() for m in ms}
        never = [m for m in self.untested_measures if m not in tested]
        if never and not self.tests:
            out.append("no significance test on these rows: unmarked numbers were not tested")
        elif never:
            out.append(f"not tested for significance: {', '.join(never)}")
        return out

    def lines(self) -> list[str]:
        out = self.significance_lines()
        if self.best:
            out.append(self.best)
        if self.declared:
            out.append(f"{DECLARED.strip()}: a cost the run's source states, not measured by lsr-eval (left out of "
                       "the best): " + "; ".join(f"{s}: {src}" for s, src in self.declared.items()))
        for p in sorted(self.precisions):
            out.append(f"{p}: computed in {p.strip('[]')}, not {REFERENCE_PRECISION} (the row's precision); every "
                       f"other row in {REFERENCE_PRECISION}")
        if self.judged_without:
            out.append("judged queries without results in the run (each scored 0): "
                       + "; ".join(f"{w}: {n}" for w, n in self.judged_without.items()))
        explained = {ABSENT: "absent: the results hold no row for this dataset and system",
                     MISSING: "missing: the row ran (status ok) but has no value for this column",
                     "not run": "not run: the row's status says it was not run",
                     NOT_FUSION: "n/a: parts in parallel apply to fusions only"}
        out += [explained[r] for r in (ABSENT, MISSING, "not run", NOT_FUSION) if r in self.reasons]
        for status, where in self.failures.items():
            out.append(f"{status} ({'; '.join(where)})")
        out += sorted(f"{r}: status of the row" for r in self.reasons - set(explained) - {"failed"})
        return out


def best_cells(values: list[float], texts: list[str], direction: str | None,
               skip: list[bool] | None = None) -> list[bool]:
    """Which cells hold their column's best number (``direction`` "max" or "min"; None: no best), comparing what
    the cells show (``texts``' leading number), so that equal-looking cells are all marked; ``skip``: cells left
    out (declared costs)."""
    if direction is None:
        return [False] * len(values)
    skip = skip or [False] * len(values)
    shown = [_leading_number(t) if not s and math.isfinite(v) else math.nan for v, t, s in zip(values, texts, skip)]
    candidates = [x for x in shown if not math.isnan(x)]
    if len(candidates) < 2:
        return [False] * len(values)
    best = max(candidates) if direction == "max" else min(candidates)
    return [x == best for x in shown]


def _leading_number(text: str) -> float:
    digits = ""
    for ch in text:
        if ch.isdigit() or ch in ".-":
            digits += ch
        elif ch == ",":
            continue
        else:
            break
    try:
        return float(digits)
    except ValueError:
        return math.nan
