"""How closely a rerun must agree with a committed result: every recorded value has a kind, each kind one rule.

Design notes: docs/design.md."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from lsr_eval.errors import ConfigError
from lsr_eval.settings import Setting, check

KINDS = ("metric", "count", "model-count", "size", "label", "timing")
#: The default rule of each kind (None: never compared).
DEFAULT_TOLERANCES: dict[str, float | None] = {"metric": 1e-4, "count": 0, "model-count": 1e-3, "size": 1e-3,
                                               "label": 0, "timing": None}
#: Kinds whose tolerance is relative to the recorded value.
RELATIVE = ("model-count", "size")
#: Last parts of the keys of counts that the rounding of a model's weights decides...
MODEL_COUNTS = frozenset({"total_postings", "dropped_zero_weights", "empty_before_quantization", "active_entries",
                          "terms_used", "postings"})
#: ... and whole keys: the documents of a fused run (its inputs' documents decide them).
FUSED_COUNTS = frozenset({"counts.documents_out", "counts.documents_cut"})

#: Words (``_``-separated parts of a key's parts) that make a value a timing.
TIMING_WORDS = frozenset({"ms", "s", "sec", "seconds", "time", "timings", "elapsed", "speedup", "latency",
                          "throughput", "ratio", "rss", "heap"})  # speed ratios, memory samples of a run
#: Key parts that are timings as a whole.
TIMING_KEYS = frozenset({"docs_per_s", "real_tokens_per_s", "per_s", "ratios", "heap_sweep", "heap_sweep_summary",
                         "breakdown", "samples"})  # a query path's time per part; a command's timed runs
_WORD = re.compile(r"[^A-Za-z0-9]+")


#: How far a rerun's value may be from the recorded one (metrics absolute; counts and sizes relative).
TOLERANCE = Setting(help="how far a rerun's value may be from the recorded one", ge=0)


def _is_timing(parts: list[str]) -> bool:
    return any(p in TIMING_KEYS or p.startswith("load_average") or TIMING_WORDS.intersection(_WORD.split(p.lower()))
               for p in parts)


def _is_measure(name: str) -> bool:
    from lsr_eval.evaluation.measures import find_measure

    return name.endswith("_p") or name.startswith("exact_recall@") or find_measure(name) is not None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _integral(v: Any) -> bool:
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())


def kind_of(key: str, value: Any) -> str:
    """The kind of the value recorded under ``key`` (see docs/design.md)."""
    parts = key.split(".")
    if _is_timing(parts):
        return "timing"
    name = parts[-1]
    if _is_measure(name):
        return "metric"
    sample = next((v for v in value if v is not None), None) if isinstance(value, list) else value
    if not _number(sample):
        return "label"
    if "bytes" in _WORD.split(name.lower()):
        return "size"
    if name in MODEL_COUNTS or key in FUSED_COUNTS:
        return "model-count"
    items = value if isinstance(value, list) else [value]
    return "count" if all(v is None or _integral(v) for v in items) else "metric"


def _empty(v: Any) -> bool:
    return v is None or v == "" or (isinstance(v, float) and math.isnan(v))


@dataclass(frozen=True)
class Tolerances:
    """The rule of each kind: a bound on metrics (absolute up to 1, relative above) and counts, a relative one for
    model counts and sizes, None = never."""

    rules: dict[str, float | None] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))

    @classmethod
    def parse(cls, items: list[str] | None) -> Tolerances:
        """``["metric=1e-3", "count=2", "timing=none"]`` over the defaults; a bad item is a ConfigError."""
        rules = dict(DEFAULT_TOLERANCES)
        for item in items or []:
            kind, sep, value = item.partition("=")
            if not sep or kind not in KINDS:
                raise ConfigError(f"--tolerance {item!r}: expected KIND=VALUE with KIND one of {', '.join(KINDS)}")
            if value.lower() in ("none", "never"):
                rules[kind] = None
                continue
            try:
                rules[kind] = float(value)
            except ValueError:
                raise ConfigError(f"--tolerance {item!r}: {value!r} is not a number (or 'none')") from None
            check(kind, rules[kind], float, TOLERANCE, "--tolerance")
        if rules["timing"] is not None:
            raise ConfigError("--tolerance timing=...: timings are never compared (they depend on the machine and "
                              "its load)")
        return cls(rules)

    def describe(self) -> dict[str, str]:
        """Each kind's rule in words (for the matrix and the command's header)."""
        out = {}
        for kind, tol in self.rules.items():
            if tol is None:
                out[kind] = "not compared"
            elif kind in RELATIVE:
                out[kind] = "exactly" if tol == 0 else f"within {tol:g} relative"
            elif kind == "label" or tol == 0:
                out[kind] = "exactly"
            else:
                out[kind] = f"within {tol:g}"
        return out

    def agree(self, kind: str, old: Any, new: Any) -> bool:
        """Whether ``new`` reproduces ``old`` under the rule of ``kind`` (lists element by element)."""
        tol = self.rules[kind]
        if tol is None:
            return True
        if isinstance(old, list) or isinstance(new, list):
            return (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
                    and all(self.agree(kind, a, b) for a, b in zip(old, new)))
        if _empty(old) or _empty(new):
            return _empty(old) and _empty(new)
        if kind == "label" or not (_number(old) and _number(new)):
            return old == new
        diff = abs(float(old) - float(new))
        if kind in RELATIVE:
            return diff <= tol * abs(float(old)) + 1e-12
        if kind == "metric":
            tol *= max(1.0, abs(float(old)))
        return diff <= tol + 1e-12  # the bound itself passes, whatever the float rounding of the difference
