"""The regression matrix: every committed result × this machine, like Pyserini's two-click reproduction pages.

Written as ``matrix.md`` (Markdown), ``matrix-section.html`` (one ``<section id="regression-matrix">`` with its own
scoped style, for the HTML report to include as it is), ``matrix.html`` (that section as a page) and
``matrix.json`` (everything, each difference included), with a ``manifest.json``. Per result: its kind, rows, the
verdicts, where it was made (CPU, commit), the estimated time and the command that reproduces it; then one line per
row with its status and why.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsr_eval.reproduce.compare import STATUSES, RowOutcome
from lsr_eval.reproduce.jobs import Job, Options
from lsr_eval.reproduce.results import Result

FILES = ("matrix.md", "matrix-section.html", "matrix.html", "matrix.json")


@dataclass
class MatrixEntry:
    result: Result
    job: Job
    outcomes: list[RowOutcome]

    def verdict(self) -> str:
        counts = Counter(o.status for o in self.outcomes)
        return ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])

    def made_on(self) -> str:
        m = self.result.manifest
        cpu = (m.get("machine") or {}).get("cpu") or "?"
        return f"{cpu}, commit {str(m.get('commit') or '?')[:7]}"

    def estimate(self) -> str:
        s = self.job.estimate_s
        return "?" if s is None else (f"{s / 60:.0f} min" if s >= 90 else f"{s:.0f} s")


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _summary(entries: list[MatrixEntry]) -> str:
    counts = Counter(o.status for e in entries for o in e.outcomes)
    total = sum(counts.values())
    return (f"{len(entries)} result{'s' * (len(entries) != 1)}, {total} row{'s' * (total != 1)}: "
            + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]))


def to_markdown(entries: list[MatrixEntry], machine: dict[str, Any], options: Options, invocation: str) -> str:
    tol = ", ".join(f"{k} {v}" for k, v in options.tolerances.describe().items())
    lines = [
        "# Regression matrix", "",
        f"Every committed result rerun on this machine by `{invocation}` (lsr-eval commit "
        f"{str(machine.get('commit'))[:12]}, {_dt.date.today().isoformat()}).", "",
        f"- **This machine**: {machine['summary']}",
        f"- **Versions**: " + ", ".join(f"{k} {v}" for k, v in machine["versions"].items()),
        f"- **Tolerances**: {tol}",
        f"- **Summary**: {_summary(entries)}", "",
        "| result | kind | rows | verdict | made on | estimated | command |", "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        lines.append(f"| {_md(e.result.name)} | {_md(e.job.kind)} | {len(e.outcomes)} | {_md(e.verdict())} | "
                     f"{_md(e.made_on())} | {e.estimate()} | `{_md(e.job.command)}` |")
    lines += ["", "## Rows", "", "| result | row | status |", "|---|---|---|"]
    for e in entries:
        for o in e.outcomes:
            lines.append(f"| {_md(e.result.name)} | {_md(o.row or '(whole result)')} | {_md(o.summary())} |")
    return "\n".join(lines) + "\n"


STYLE = """
#regression-matrix table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
#regression-matrix th, #regression-matrix td { border: 1px solid #ccc; padding: 0.25em 0.55em; text-align: left;
  vertical-align: top; }
#regression-matrix th { background: #f2f2f2; }
#regression-matrix td.reproduced { background: #e6f4ea; } #regression-matrix td.differs,
#regression-matrix td.refused, #regression-matrix td.failed { background: #fce8e6; }
#regression-matrix td.could-not-run { background: #f5f5f5; color: #555; }
#regression-matrix code { font-size: 0.95em; white-space: nowrap; }
#regression-matrix .meta { color: #555; font-size: 0.9em; }
"""


def _cls(status: str) -> str:
    return status.replace(" ", "-")


def to_html_section(entries: list[MatrixEntry], machine: dict[str, Any], options: Options, invocation: str) -> str:
    """The matrix as one self-contained ``<section>`` (its style scoped to it)."""
    e_ = html.escape
    tol = ", ".join(f"{k} {v}" for k, v in options.tolerances.describe().items())
    parts = [f"<section id=\"regression-matrix\"><style>{STYLE}</style>", "<h2>Regression matrix</h2>",
             f"<p class=\"meta\">Every committed result rerun on this machine by <code>{e_(invocation)}</code> "
             f"(lsr-eval commit {e_(str(machine.get('commit'))[:12])}, {_dt.date.today().isoformat()}).</p>",
             "<ul class=\"meta\">",
             f"<li><b>This machine</b>: {e_(machine['summary'])}</li>",
             "<li><b>Versions</b>: " + e_(", ".join(f"{k} {v}" for k, v in machine["versions"].items())) + "</li>",
             f"<li><b>Tolerances</b>: {e_(tol)}</li>", f"<li><b>Summary</b>: {e_(_summary(entries))}</li></ul>",
             "<table><thead><tr><th>result</th><th>kind</th><th>row</th><th>status</th><th>made on</th>"
             "<th>estimated</th><th>command</th></tr></thead><tbody>"]
    for e in entries:
        n = len(e.outcomes)
        for i, o in enumerate(e.outcomes):
            head = (f"<td rowspan=\"{n}\">{e_(e.result.name)}</td><td rowspan=\"{n}\">{e_(e.job.kind)}</td>"
                    if i == 0 else "")
            tail = (f"<td rowspan=\"{n}\">{e_(e.made_on())}</td><td rowspan=\"{n}\">{e.estimate()}</td>"
                    f"<td rowspan=\"{n}\"><code>{e_(e.job.command)}</code></td>" if i == 0 else "")
            parts.append(f"<tr>{head}<td>{e_(o.row or '(whole result)')}</td>"
                         f"<td class=\"{_cls(o.status)}\">{e_(o.summary())}</td>{tail}</tr>")
    parts.append("</tbody></table></section>")
    return "\n".join(parts) + "\n"


def to_json(entries: list[MatrixEntry], machine: dict[str, Any], options: Options, invocation: str) -> dict:
    def row(o: RowOutcome) -> dict[str, Any]:
        c = o.comparison
        return {"row": o.row, "status": o.status, "summary": o.summary(), "detail": o.detail,
                "compared": c.compared if c else None,
                "differences": [{"key": d.key, "kind": d.kind, "old": d.old, "new": d.new}
                                for d in (c.differences if c else [])]}

    return {"invocation": invocation, "machine": machine, "tolerances": options.tolerances.rules,
            "max_minutes": options.max_minutes,
            "results": [{"result": e.result.name, "kind": e.job.kind, "command": e.job.command,
                         "estimate_s": e.job.estimate_s, "made_on": e.made_on(), "verdict": e.verdict(),
                         "rows": [row(o) for o in e.outcomes]} for e in entries]}


def write_matrix(entries: list[MatrixEntry], machine: dict[str, Any], options: Options, folder: Path,
                 invocation: str = "lsr-eval reproduce") -> list[Path]:
    """Write :data:`FILES` and a manifest into ``folder`` (under a repository's ``results/``: from a clean checkout
    only, :func:`lsr_eval.manifest.write_manifest`); returns the files written."""
    from lsr_eval.manifest import check_provenance, recorded, write_manifest

    check_provenance(folder)
    folder.mkdir(parents=True, exist_ok=True)
    section = to_html_section(entries, machine, options, invocation)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Regression matrix</title>"
            "</head><body style=\"font-family: system-ui, sans-serif; margin: 1.5em 2em;\">\n" + section
            + "</body></html>\n")
    texts = {"matrix.md": to_markdown(entries, machine, options, invocation), "matrix-section.html": section,
             "matrix.html": page,
             "matrix.json": json.dumps(to_json(entries, machine, options, invocation), indent=2, default=str) + "\n"}
    for name, text in texts.items():
        (folder / name).write_text(recorded(text, folder), encoding="utf-8")   # paths anchored under results/
    counts = Counter(o.status for e in entries for o in e.outcomes)
    write_manifest(folder, "reproduce", {"results": [e.result.name for e in entries],
                                         "max_minutes": options.max_minutes},
                   counts={"results": len(entries), "rows": sum(counts.values()), **counts},
                   tolerances=options.tolerances.rules, outputs=list(FILES))
    return [folder / name for name in FILES]
