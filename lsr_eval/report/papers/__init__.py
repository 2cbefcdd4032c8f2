"""The report's registered sections: the papers' own (their table, and their trade-off figure if they have one),
each registered by the name of the benchmark that reproduces it (:data:`PAPERS`), and the parts and sections that
belong to a study (:data:`BENCHMARK_PARTS`, :data:`SECTIONS`). The page (:mod:`lsr_eval.report.build`) adds what
is registered here and names no paper and no study itself. A new paper is a module here and a line in
:data:`PAPERS`; a new study's section is a function and a line in :data:`SECTIONS`."""

from __future__ import annotations

from typing import Any, Callable

from lsr_eval.report.context import ReportContext
from lsr_eval.report.html import Section
from lsr_eval.report.papers.efficiency import EFFICIENCY_BENCHMARK, efficiency_paper_table
from lsr_eval.report.papers.registry import PAPERS, PaperSection
from lsr_eval.report.papers.rescaling import RESCALING_BENCHMARK, rescaling_paper_table
from lsr_eval.report.papers.sections import paper_tables, rescaling_section, seed_tables

#: What each benchmark's section gets after its tables, in order: (context, section, benchmark name, its rows,
#: the rows linked to their training runs) -> None (each adds its tables and figures where they apply).
BENCHMARK_PARTS: tuple[Callable[[ReportContext, Section, str, Any, Any], None], ...] = (seed_tables, paper_tables)
#: Sections after the efficiency section, in order: context -> the section, or None when nothing applies.
SECTIONS: tuple[Callable[[ReportContext], Section | None], ...] = (rescaling_section,)

__all__ = ["BENCHMARK_PARTS", "EFFICIENCY_BENCHMARK", "PAPERS", "RESCALING_BENCHMARK", "SECTIONS", "PaperSection",
           "efficiency_paper_table", "rescaling_paper_table"]
