"""What running one system on one dataset gives back in memory: its metrics, its run, where its files are, and
the model it loaded, so that callers (the benchmark's fusion, significance and latency) never read the run back
from disk or load the model a second time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsr_eval.data.types import Run


@dataclass
class SystemResult:
    metrics: dict[str, float]
    run: Run
    folder: Path | None  #: where its files are (None: run in memory, nothing kept)
    #: the SPLADE model this process loaded for the run (None for BM25, or when a finished run was reused)
    model: Any = None
    reused: bool = False
    #: more table columns (an approximate engine's recall of the exact top-k)
    columns: dict[str, float] = field(default_factory=dict)
