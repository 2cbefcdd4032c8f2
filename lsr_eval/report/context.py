"""What every section of one report shares (:class:`ReportContext`) and what the report wrote (:class:`ReportFiles`):
the page (:mod:`lsr_eval.report.build`) and the registered sections (:mod:`lsr_eval.report.papers`) both use them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.html import FigureFiles, Section
from lsr_eval.report.loading import Results
from lsr_eval.report.plots import save_figure
from lsr_eval.report.table import Table
from lsr_eval.report.tables import dataset_measures, main_measure


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote."""

    out: Path
    tables: dict[str, list[Path]] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    figure_data: list[Path] = field(default_factory=list)
    html: Path | None = None
    manifest: Path | None = None

    def all(self) -> list[Path]:
        paths = [p for ps in self.tables.values() for p in ps] + self.figures + self.figure_data
        return paths + [p for p in (self.html, self.manifest) if p is not None]


@dataclass
class ReportContext:
    """What every section of one report shares: the results and their merged frame, the options, and the files
    written so far (each table and figure written as its section adds it)."""

    results: Results
    frame: Any
    fmt: NumberFormat
    smooth: int | None
    best_k_by: str | None
    measures: list[str] | None
    files: ReportFiles
    figures: bool = True

    @property
    def plots_dir(self) -> Path:
        return self.files.out / "plots"

    def table(self, t: Table) -> Table:
        """Write ``t`` (md, tex, csv) under ``tables/``."""
        self.files.tables[t.name] = t.write(self.files.out / "tables")
        return t

    def figure(self, section: Section, draw: Callable[[], Any], stem: str, caption: str) -> Any:
        """Draw a figure (``draw()``), write it (png, pdf) under ``plots/`` and add it to ``section``; returns the
        figure, or None in a report without figures (nothing drawn)."""
        if not self.figures:
            return None
        fig = draw()
        png, pdf = save_figure(fig, self.plots_dir, stem)
        self.files.figures += [png, pdf]
        section.figures.append(FigureFiles(caption, png, pdf))
        return fig

    def figure_measure(self, d: str) -> str | None:
        """The measure of ``d``'s figures: the first of ``measures`` it has, else its main measure."""
        if self.measures is None:
            return main_measure(self.frame, d)
        return next(iter(dataset_measures(self.frame, d, self.measures)), None)
