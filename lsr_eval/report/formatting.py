"""How numbers are written in the report tables: one rule per kind of column.

Effectiveness is written as a fraction to 4 decimals by default (what ``lsr-eval evaluate`` and trec_eval print,
so a cell can be checked against a run), or as the papers do, x100 to 1 decimal (``scale="percent"``). Latency is
in milliseconds to 2 decimals, FLOPs to 3 significant digits, active dimensions to 1 decimal, index sizes in MiB.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from lsr_eval.settings import Validated, setting

Scale = Literal["fraction", "percent"]

#: Bytes per MiB, the unit of index sizes.
MIB = 2 ** 20


def significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits without exponent notation (thousands separated at and above
    ``10**digits``): 1.2345 -> "1.23", 0.000123456 -> "0.000123", 123456 -> "123,456"."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:.{decimals}f}"


@dataclass(frozen=True)
class NumberFormat(Validated):
    """Decimals and scale of each kind of column (see the module doc)."""

    scale: Scale = setting("fraction", help="effectiveness as fractions (0.7130) or percentages (71.3)")
    fraction_decimals: int = setting(4, ge=0, help="decimals of a fraction")
    percent_decimals: int = setting(1, ge=0, help="decimals of a percentage")
    latency_decimals: int = setting(2, ge=0, help="decimals of a latency in ms")
    flops_digits: int = setting(3, ge=0, help="significant digits of FLOPs")
    dims_decimals: int = setting(1, ge=0, help="decimals of a number of dimensions")
    mib_decimals: int = setting(1, ge=0, help="decimals of a size in MiB")

    @property
    def effectiveness_unit(self) -> str:
        """What an effectiveness cell holds, for table notes."""
        return "x100" if self.scale == "percent" else "fraction"

    def effectiveness_value(self, value: float) -> float:
        """A measure (a fraction in [0, 1]) in the unit the tables show."""
        return value * 100 if self.scale == "percent" else value

    def effectiveness(self, value: float) -> str:
        """A measure as written in a cell: ``0.36789`` -> ``0.3679`` (fraction) or ``36.8`` (percent)."""
        decimals = self.percent_decimals if self.scale == "percent" else self.fraction_decimals
        return f"{self.effectiveness_value(value):.{decimals}f}"

    def latency(self, ms: float) -> str:
        return f"{ms:.{self.latency_decimals}f}"

    def flops(self, value: float) -> str:
        return significant(value, self.flops_digits)

    def dims(self, value: float) -> str:
        return f"{value:.{self.dims_decimals}f}"

    def mib(self, value: float) -> str:
        return f"{value:,.{self.mib_decimals}f}"

    def ratio(self, value: float) -> str:
        """A ratio of two latencies: ``2.345`` -> ``2.35``."""
        return f"{value:.2f}"

    def gflop(self, value: float) -> str:
        """GFLOP, to the FLOPs' significant digits (``0.0912``, ``3.41``)."""
        return significant(value, self.flops_digits)

    def count(self, value: float) -> str:
        """A count or a mean count: thousands separated, no decimals (``1,234``)."""
        return f"{value:,.0f}"


def csv_text(fields: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` as CSV text (a benchmark's table, written by its script and made again from the raw files by its
    ``summaries``): a header of ``fields``, then each row's values in that order (a missing one empty), with
    the csv module's ``\\r\\n`` line ends."""
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(fields))
    w.writeheader()
    for row in rows:
        w.writerow({k: row.get(k) for k in fields})
    return buf.getvalue()
