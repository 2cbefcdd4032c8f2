"""A report table and its renderings: Markdown, LaTeX (booktabs), HTML and CSV.

A :class:`Table` keeps the numbers (``values``, NaN where there is none) apart from what each cell shows (``text``:
the formatted number with its significance marker, or why there is no number: "not run", "failed", ...), so that
tests and notebooks read numbers while the renderings read text. ``best`` flags the cells holding their column's
best number: bold in Markdown (``**...**``), LaTeX (``\textbf``) and HTML (``<strong>``); the CSV keeps numbers only.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from lsr_eval.errors import InputError

#: LaTeX for characters that are special in LaTeX or absent from its default fonts.
_LATEX_CHARS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "†": r"\textsuperscript{\dag}",
    "‡": r"\textsuperscript{\ddag}", "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$", "–": "--", "—": "---",
}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (and daggers, x, >= written as LaTeX)."""
    return "".join(_LATEX_CHARS.get(c, c) for c in text)


def _markdown_escape(text: str) -> str:
    return text.replace("|", r"\|").replace("\n", " ")


@dataclass
class Table:
    """Rows of ``labels`` (text: dataset, system, k, ...) followed by value columns.

    ``values`` holds the numbers in the unit the column header names (NaN where a cell has none); ``text`` holds
    what each value cell shows. Both have the value columns, and the same row index as ``labels``.
    """

    name: str          #: file stem of the written table
    title: str
    labels: pd.DataFrame
    values: pd.DataFrame
    text: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    best: pd.DataFrame | None = None  #: True where a cell holds its column's best number (None: no cell marked)

    def __post_init__(self) -> None:
        if list(self.values.columns) != list(self.text.columns):
            raise InputError(f"table {self.name}: values and text have different columns")
        if self.best is None:
            self.best = pd.DataFrame(False, index=self.values.index, columns=self.values.columns)
        elif list(self.best.columns) != list(self.values.columns) or not self.best.index.equals(self.values.index):
            raise InputError(f"table {self.name}: best and values have different cells")
        if not (self.labels.index.equals(self.values.index) and self.labels.index.equals(self.text.index)):
            raise InputError(f"table {self.name}: labels, values and text have different rows")
        if len(set(self.columns)) != len(self.columns):
            raise InputError(f"table {self.name}: repeated column names {self.columns}")

    @property
    def columns(self) -> list[str]:
        return [*map(str, self.labels.columns), *map(str, self.values.columns)]

    def frame(self) -> pd.DataFrame:
        """What the table shows: labels then cell text, all strings."""
        return pd.concat([self.labels.astype(str), self.text.astype(str)], axis=1)

    def _shown(self, bold) -> pd.DataFrame:
        """:meth:`frame` with the best cells passed through ``bold``."""
        text = self.text.astype(str).copy()
        for c in text.columns:
            text[c] = [bold(t) if b else t for t, b in zip(text[c], self.best[c])]
        return pd.concat([self.labels.astype(str), text], axis=1)

    def csv_frame(self) -> pd.DataFrame:
        """Labels, then each value at full precision, or the cell text where there is no number."""
        cells = self.values.astype(object).where(self.values.notna(), self.text)
        return pd.concat([self.labels, cells], axis=1)

    def value(self, row: dict[str, str] | int, column: str) -> float:
        """The number in ``column`` of the row whose labels equal ``row`` (or of row position ``row``)."""
        if isinstance(row, int):
            return float(self.values[column].iloc[row])
        mask = pd.Series(True, index=self.labels.index)
        for key, want in row.items():
            mask &= self.labels[key].astype(str) == str(want)
        hits = self.values.loc[mask, column]
        if len(hits) != 1:
            raise KeyError(f"table {self.name}: {len(hits)} rows match {row}")
        return float(hits.iloc[0])

    def to_markdown(self) -> str:
        """Title, a pipe table (labels left-aligned, values right-aligned) and the notes as a list."""
        frame = self._shown(lambda t: f"**{t}**")
        n_labels = self.labels.shape[1]
        lines = [f"### {self.title}", "",
                 "| " + " | ".join(_markdown_escape(c) for c in self.columns) + " |",
                 "|" + "|".join(":---" if i < n_labels else "---:" for i in range(len(self.columns))) + "|"]
        for row in frame.itertuples(index=False):
            lines.append("| " + " | ".join(_markdown_escape(str(c)) for c in row) + " |")
        if self.notes:
            lines.append("")
            lines.extend(f"- {_markdown_escape(n)}" for n in self.notes)
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        """Title, the table in aligned columns (labels left, values right) and the notes: for a console. The best
        cells carry a trailing ``*`` (text has no bold)."""
        frame = self._shown(lambda t: f"{t}*")
        n_labels = self.labels.shape[1]
        rows = [self.columns] + [[str(c) for c in row] for row in frame.itertuples(index=False)]
        widths = [max(len(r[j]) for r in rows) for j in range(len(self.columns))]
        lines = [self.title]
        for r in rows:
            lines.append("  ".join(c.ljust(w) if j < n_labels else c.rjust(w)
                                   for j, (c, w) in enumerate(zip(r, widths))).rstrip())
        lines.extend(f"  {n}" for n in self.notes)
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        """A ``table`` float with a booktabs ``tabular`` (needs ``\\usepackage{booktabs}``) and the notes below."""
        n_labels = self.labels.shape[1]
        spec = "l" * n_labels + "r" * (len(self.columns) - n_labels)
        lines = [r"% needs \usepackage{booktabs}", r"\begin{table}[t]", r"\centering", r"\small",
                 rf"\caption{{{latex_escape(self.title)}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                 " & ".join(latex_escape(c) for c in self.columns) + r" \\", r"\midrule"]
        for i, row in enumerate(self.frame().itertuples(index=False)):
            cells = [latex_escape(str(c)) for c in row]
            cells = [rf"\textbf{{{c}}}" if j >= n_labels and self.best.iat[i, j - n_labels] else c
                     for j, c in enumerate(cells)]
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        if self.notes:
            lines += [r"\par\smallskip\footnotesize", " \\\\\n".join(latex_escape(n) for n in self.notes)]
        lines.append(r"\end{table}")
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        """An HTML ``<table>`` (cells without a number get class ``missing``) with the notes as a list."""
        frame = self.frame()
        n_labels = self.labels.shape[1]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = []
        for i, row in enumerate(frame.itertuples(index=False)):
            cells = []
            for j, c in enumerate(row):
                if j < n_labels:
                    cells.append(f"<td class=\"label\">{html.escape(str(c))}</td>")
                else:
                    v = self.values.iat[i, j - n_labels]
                    cls = "num" if isinstance(v, float) and math.isfinite(v) else "missing"
                    if self.best.iat[i, j - n_labels]:
                        cells.append(f"<td class=\"{cls} best\"><strong>{html.escape(str(c))}</strong></td>")
                    else:
                        cells.append(f"<td class=\"{cls}\">{html.escape(str(c))}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        notes = ""
        if self.notes:
            notes = "<ul class=\"notes\">" + "".join(f"<li>{html.escape(n)}</li>" for n in self.notes) + "</ul>"
        return (f"<div class=\"table-wrap\"><table class=\"report\" id=\"table-{html.escape(self.name)}\">"
                f"<caption>{html.escape(self.title)}</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{''.join(body)}</tbody></table></div>{notes}")

    def write(self, folder: str | Path) -> list[Path]:
        """Write ``<name>.md``, ``<name>.tex`` and ``<name>.csv`` into ``folder``; returns the paths."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"{self.name}{ext}" for ext in (".md", ".tex", ".csv")]
        paths[0].write_text(self.to_markdown(), encoding="utf-8")
        paths[1].write_text(self.to_latex(), encoding="utf-8")
        self.csv_frame().to_csv(paths[2], index=False)
        return paths
