"""A committed row against its rerun: every recorded value compared under the rule of its kind
(:mod:`lsr_eval.reproduce.tolerance`), and the row's status with the values that moved.

A row is a flat record ``{dotted key: value}``. A table cell or metric (:data:`REQUIRED`) the rerun lacks counts as
empty (a difference unless the committed cell was empty); another key the rerun lacks is "no longer recorded" (a
manifest's layout changes with the code: Anserini's index counts moved under ``counts.index.anserini``), counted,
not compared. Keys only the rerun has are not compared (new code may record more). Timings are never compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from lsr_eval.manifest import anchor_paths, anchor_roots
from lsr_eval.reproduce.tolerance import Tolerances, kind_of

REPRODUCED = "reproduced"
DIFFERS = "differs"
REFUSED = "refused"          #: the data or model differ from the recorded ones: nothing was rerun
FAILED = "failed"            #: the rerun raised an error
COULD_NOT_RUN = "could not run"  #: missing model or data, needs a GPU, longer than --max-minutes, ...
STATUSES = (REPRODUCED, DIFFERS, REFUSED, FAILED, COULD_NOT_RUN)
#: Statuses that make ``lsr-eval reproduce`` exit non-zero.
FAILING = (DIFFERS, REFUSED, FAILED)

#: Keys (any part) that describe where or when something ran, not what it gave: never compared.
ENVIRONMENT_KEYS = frozenset({"commit", "created", "command", "versions", "machine", "path", "paths", "argv", "mtime",
                              "runs_dir", "evaluated", "sources", "sources_sha256", "java", "platform", "cpu",
                              "cores", "reason", "note", "notes", "reused_run", "previous_metrics", "index_dir",
                              "file", "source", "folder", "exported", "reused", "cached", "work_dir",
                              "artefacts", "run_files", "threads", "commands"})
#: Keys that are environment when they hold a path (a string), results when they hold a section (an index's counts).
PATH_KEYS = frozenset({"index", "topics"})


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as dotted keys, lists of mappings as ``key[i].``, other lists kept whole; environment keys
    (:data:`ENVIRONMENT_KEYS`) left out."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if str(key) in ENVIRONMENT_KEYS or (str(key) in PATH_KEYS and isinstance(value, str)):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for i, v in enumerate(value):
                out.update(flatten(v, f"{name}[{i}]."))
        else:
            out[name] = value
    return out


@dataclass(frozen=True)
class Difference:
    """One recorded value the rerun did not reproduce."""

    key: str
    kind: str
    old: Any
    new: Any

    def __str__(self) -> str:
        old, new = _fmt(self.old), _fmt(self.new)
        digits = 6
        while old == new and digits < 17 and isinstance(self.old, float) and isinstance(self.new, float):
            digits += 2  # enough digits to show the two apart
            old, new = f"{self.old:.{digits}g}", f"{self.new:.{digits}g}"
        return f"{self.key} {old} -> {new}"


class _Absent:
    """What a rerun that lacks a committed key holds there."""

    def __repr__(self) -> str:
        return "(absent)"

    __str__ = __repr__


_ABSENT = _Absent()
#: Differences listed first: a setting that changed explains the numbers that moved.
FIRST = ("experiment.", "settings.")
#: Key prefixes the rerun must hold (the published numbers).
REQUIRED = ("table.", "metrics.")
#: The ``compared`` entries that count no compared value.
UNCOMPARED = ("not compared", "no longer recorded")


def _fmt(v: Any) -> str:
    if v is _ABSENT:
        return "(absent)"
    if v is None or (isinstance(v, float) and math.isnan(v)) or v == "":
        return "(empty)"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return f"[{len(v)} values]" if len(v) > 4 else "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


@dataclass
class Comparison:
    """The differences of one row and how many values of each kind were compared (timings: how many skipped)."""

    differences: list[Difference] = field(default_factory=list)
    compared: dict[str, int] = field(default_factory=dict)

    @property
    def reproduced(self) -> bool:
        return not self.differences


def compare(old: Mapping[str, Any], new: Mapping[str, Any], tolerances: Tolerances,
            skip: Iterable[str] = ()) -> Comparison:
    """Compare every key of the committed row ``old`` with the rerun ``new``; keys in ``skip`` are not compared
    (e.g. significance columns when the rerun had fewer systems)."""
    skip = set(skip)
    out = Comparison()
    roots = anchor_roots()
    for key, value in old.items():
        if key in skip:
            continue
        kind = kind_of(key, value)
        got = new.get(key, _ABSENT)
        if tolerances.rules[kind] is None or (got is _ABSENT and not key.startswith(REQUIRED)):
            tally = "not compared" if tolerances.rules[kind] is None else "no longer recorded"
            out.compared[tally] = out.compared.get(tally, 0) + 1
            continue
        out.compared[kind] = out.compared.get(kind, 0) + 1
        if isinstance(value, str) and isinstance(got, str):   # a path: this machine's in the committed form
            got = anchor_paths(got, roots)
        if not tolerances.agree(kind, value, None if got is _ABSENT else got):
            out.differences.append(Difference(key, kind, value, got))
    out.differences.sort(key=lambda d: not d.key.startswith(FIRST))  # what was run first: it explains the rest
    return out


@dataclass
class RowOutcome:
    """The verdict on one row of one committed result."""

    result: str
    row: str
    status: str
    detail: str = ""
    comparison: Comparison | None = None

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    def summary(self, limit: int = 4) -> str:
        """``reproduced (12 values)``, ``differs: nDCG@10 0.6789 -> 0.6512; ...``, ``could not run: why``."""
        if self.status == REPRODUCED and self.comparison is not None:
            n = sum(v for k, v in self.comparison.compared.items() if k not in UNCOMPARED)
            gone = self.comparison.compared.get("no longer recorded")
            extra = [f"{gone} no longer recorded"] * bool(gone) + [self.detail] * bool(self.detail)
            return f"{REPRODUCED} ({n} values" + "".join(f"; {x}" for x in extra) + ")"
        if self.status == DIFFERS and self.comparison is not None:
            diffs = self.comparison.differences
            shown = "; ".join(map(str, diffs[:limit])) + (f"; +{len(diffs) - limit} more" if len(diffs) > limit
                                                          else "")
            return f"{DIFFERS}: {shown}"
        return f"{self.status}: {self.detail}" if self.detail else self.status

    def line(self) -> str:
        name = f"{self.result} {self.row}".strip()
        return f"{name}: {self.summary()}"
