"""The papers' own sections by the name of the benchmark that reproduces each paper: a paper's table, and its
trade-off figure if it has one (see :mod:`lsr_eval.report.papers`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

import pandas as pd

from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.papers.efficiency import EFFICIENCY_BENCHMARK, efficiency_paper_table
from lsr_eval.report.papers.rescaling import RESCALING_BENCHMARK, rescaling_paper_table
from lsr_eval.report.table import Table


@dataclass(frozen=True)
class PaperSection:
    """What a paper adds to its benchmark's section: ``table`` made from the benchmark's rows (``frame``:
    ``"linked"``, the rows joined to their training runs, or ``"rows"`` as they are), and optionally the trade-off
    figure of ``tradeoff`` = (cost column, measure) on the first dataset that has one."""

    table: Callable[..., Table]
    frame: Literal["rows", "linked"]
    tradeoff: tuple[str, str] | None = None
    caption: str = ""  #: the figure's caption, with ``{measure}``, ``{cost}`` and ``{dataset}``
    runs: bool = False  #: the table also reads the linked training runs (``runs=``: name -> TrainingRun)

    def make_table(self, rows: pd.DataFrame, linked: pd.DataFrame, fmt: NumberFormat,
                   runs: Mapping[str, Any] | None = None) -> Table:
        extra = {"runs": runs or {}} if self.runs else {}
        return self.table(linked if self.frame == "linked" else rows, fmt=fmt, **extra)


#: benchmark name -> its paper's section
PAPERS: dict[str, PaperSection] = {
    RESCALING_BENCHMARK: PaperSection(rescaling_paper_table, "linked", ("flops", "nDCG@10"),
                                      "{measure} against FLOPs on {dataset}, by backbone and k"),
    EFFICIENCY_BENCHMARK: PaperSection(efficiency_paper_table, "linked", runs=True),
}
