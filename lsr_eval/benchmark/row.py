"""One row of a benchmark's table as a type: which dataset and system it is, the system's identity columns, its
status, and its cells (metrics, costs, counts, significance marks) in the order the table shows them. The latency
samples and raw p-values that later steps need travel beside the cells, never into the table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lsr_eval.benchmark.status import RowStatus, Status
from lsr_eval.settings import Setting

#: A results table as JSON (``table.json``: pandas orient='records').
TABLE_RECORDS = Setting(help="a results table: a JSON list of row objects (pandas orient='records')")

#: The dataset label of the rows tested over the datasets' means (``significance.across_datasets``).
POOLED = "pooled"


@dataclass
class Row:
    """A (dataset, system) row; :meth:`record` is what ``table.csv`` and ``table.json`` hold."""

    dataset: str
    system: str
    #: the system's identity columns (kind, model, k, engine, precision, a sweep point's values, a display name)
    identity: dict[str, Any] = field(default_factory=dict)
    status: RowStatus = field(default_factory=lambda: RowStatus(Status.OK))
    #: measured columns, in the order they were added (an ``efficiency_status`` cell is a :class:`RowStatus` too)
    cells: dict[str, Any] = field(default_factory=dict)
    #: per-query latency (ms) of the whole query path, in query order: what a fusion's latency is made from
    latency_samples_ms: list[float] | None = None
    #: (baseline, measure) -> (uncorrected p-value, difference): what a correction across datasets starts from
    raw_p: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status.kind is Status.OK

    def get(self, column: str, default: Any = None) -> Any:
        """A column of the table's row (a cell, else an identity column), or ``default``."""
        return self.cells.get(column, self.identity.get(column, default))

    def fail(self, reason: object) -> None:
        """The row's run raised ``reason``."""
        self.status = RowStatus(Status.FAILED, str(reason))

    def record(self) -> dict[str, Any]:
        """The row as the table holds it: dataset, system, identity, status, cells (statuses as their text)."""
        cells = {k: str(v) if isinstance(v, RowStatus) else v for k, v in self.cells.items()}
        return {"dataset": self.dataset, "system": self.system, **self.identity, "status": str(self.status),
                **cells}
