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

from lsr_eval.manifest import check_provenance, recorded, write_manifest
from lsr_eval.reproduce.compare import REPRODUCED, STATUSES, RowOutcome
from lsr_eval.reproduce.jobs import Job, Options, _minutes
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


def made_on(result: Result) -> str:
    """Where a committed result was made: its manifest's CPU and commit."""
    m = result.manifest
    cpu = (m.get("machine") or {}).get("cpu") or "?"
    return f"{cpu}, commit {str(m.get('commit') or '?')[:7]}"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _summary(results: list[dict[str, Any]]) -> str:
    counts = Counter(r["status"] for e in results for r in e["rows"])
    total = sum(counts.values())
    return (f"{len(results)} result{'s' * (len(results) != 1)}, {total} row{'s' * (total != 1)}: "
            + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]))


def _estimate(seconds: float | None) -> str:
    return "?" if seconds is None else _minutes(seconds)


def _tolerances(data: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in data["tolerances_described"].items())


def _header(data: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The sentence above the table and the (label, text) lines under it."""
    machine = data["machine"]
    kept = sum(1 for e in data["results"] if e.get("kept"))
    sentence = (f"Every committed result rerun on this machine by `{data['invocation']}` (lsr-eval commit "
                f"{str(machine.get('commit'))[:12]}, {data['date']})"
                + (f"; {kept} kept from an earlier matrix, each with the machine and date that reproduced it."
                   if kept else "."))
    lines = [("This machine", machine["summary"]),
             ("Versions", ", ".join(f"{k} {v}" for k, v in machine["versions"].items())),
             ("Tolerances", _tolerances(data)), ("Summary", _summary(data["results"]))]
    return sentence, lines


def to_markdown(data: dict[str, Any]) -> str:
    """The matrix (:func:`to_json`'s record) as Markdown."""
    sentence, meta = _header(data)
    lines = ["# Regression matrix", "", sentence, "", *(f"- **{k}**: {v}" for k, v in meta), "",
             "| result | kind | rows | verdict | made on | estimated | command | reproduced on |",
             "|---|---|---|---|---|---|---|---|"]
    for e in data["results"]:
        lines.append(f"| {_md(e['result'])} | {_md(e['kind'])} | {len(e['rows'])} | {_md(e['verdict'])} | "
                     f"{_md(e['made_on'])} | {_estimate(e['estimate_s'])} | `{_md(e['command'])}` | "
                     f"{_md(e['reproduced_on'])}, {e['date']} |")
    lines += ["", "## Rows", "", "| result | row | status |", "|---|---|---|"]
    for e in data["results"]:
        for r in e["rows"]:
            lines.append(f"| {_md(e['result'])} | {_md(r['row'] or '(whole result)')} | {_md(r['summary'])} |")
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


def to_html_section(data: dict[str, Any]) -> str:
    """The matrix (:func:`to_json`'s record) as one self-contained ``<section>`` (its style scoped to it)."""
    e_ = html.escape
    sentence, meta = _header(data)
    sentence = sentence.replace(f"`{data['invocation']}`", f"<code>{e_(data['invocation'])}</code>")
    parts = [f"<section id=\"regression-matrix\"><style>{STYLE}</style>", "<h2>Regression matrix</h2>",
             f"<p class=\"meta\">{sentence}</p>", "<ul class=\"meta\">",
             *(f"<li><b>{k}</b>: {e_(v)}</li>" for k, v in meta), "</ul>",
             "<table><thead><tr><th>result</th><th>kind</th><th>row</th><th>status</th><th>made on</th>"
             "<th>estimated</th><th>command</th><th>reproduced on</th></tr></thead><tbody>"]
    for e in data["results"]:
        n = len(e["rows"])
        for i, r in enumerate(e["rows"]):
            head = (f"<td rowspan=\"{n}\">{e_(e['result'])}</td><td rowspan=\"{n}\">{e_(e['kind'])}</td>"
                    if i == 0 else "")
            tail = (f"<td rowspan=\"{n}\">{e_(e['made_on'])}</td><td rowspan=\"{n}\">{_estimate(e['estimate_s'])}"
                    f"</td><td rowspan=\"{n}\"><code>{e_(e['command'])}</code></td>"
                    f"<td rowspan=\"{n}\">{e_(e['reproduced_on'])}, {e['date']}</td>" if i == 0 else "")
            parts.append(f"<tr>{head}<td>{e_(r['row'] or '(whole result)')}</td>"
                         f"<td class=\"{_cls(r['status'])}\">{e_(r['summary'])}</td>{tail}</tr>")
    parts.append("</tbody></table></section>")
    return "\n".join(parts) + "\n"


def to_json(entries: list[MatrixEntry], machine: dict[str, Any], options: Options, invocation: str,
            kept: list[dict[str, Any]] | tuple = ()) -> dict:
    """The matrix as one record: the entries rerun now (on ``machine``, today) and ``kept`` ones of an earlier
    matrix (:func:`kept_entries`), ordered by result name."""
    def row(o: RowOutcome) -> dict[str, Any]:
        c = o.comparison
        return {"row": o.row, "status": o.status, "summary": o.summary(), "detail": o.detail,
                "compared": c.compared if c else None,
                "differences": [{"key": d.key, "kind": d.kind, "old": d.old, "new": d.new}
                                for d in (c.differences if c else [])]}

    today = _dt.date.today().isoformat()
    fresh = [{"result": e.result.name, "kind": e.job.kind, "command": e.job.command,
              "estimate_s": e.job.estimate_s, "made_on": made_on(e.result), "verdict": e.verdict(),
              "reproduced_on": machine["summary"], "date": today, "kept": False, "rows": [row(o) for o in e.outcomes]}
             for e in entries]
    return {"invocation": invocation, "machine": machine, "date": today, "tolerances": options.tolerances.rules,
            "tolerances_described": options.tolerances.describe(), "max_minutes": options.max_minutes,
            "results": sorted([*fresh, *kept], key=lambda r: r["result"])}


def kept_entries(previous: dict[str, Any], results: list[Result]) -> tuple[list[dict[str, Any]], list[Result]]:
    """For ``--update``: the entries of the earlier matrix ``previous`` (its ``matrix.json``) whose result is still
    committed as it was (same name, same \"made on\": CPU and commit of its manifest) and reproduced there on
    every row, each keeping the machine and date that reproduced it (``kept``); and the results to rerun (new, made
    again since, or not reproduced on every row then: rerun, so that a difference is never carried over)."""
    old = {e["result"]: e for e in previous.get("results", [])}
    machine, date = previous.get("machine", {}).get("summary", "?"), previous.get("date", "?")
    kept, rerun = [], []
    for result in results:
        entry = old.get(result.name)
        if (entry is not None and entry["made_on"] == made_on(result) and entry["rows"]
                and all(r["status"] == REPRODUCED for r in entry["rows"])):
            kept.append({**entry, "reproduced_on": entry.get("reproduced_on", machine),
                         "date": entry.get("date", date), "kept": True})
        else:
            rerun.append(result)
    return kept, rerun


def write_matrix(entries: list[MatrixEntry], machine: dict[str, Any], options: Options, folder: Path,
                 invocation: str = "lsr-eval reproduce", kept: list[dict[str, Any]] | tuple = ()) -> list[Path]:
    """Write :data:`FILES` and a manifest into ``folder`` (under a repository's ``results/``: from a clean checkout
    only, :func:`lsr_eval.manifest.write_manifest`), with the ``kept`` entries of an earlier matrix beside those
    rerun now; returns the files written."""
    check_provenance(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = to_json(entries, machine, options, invocation, kept)
    section = to_html_section(data)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Regression matrix</title>"
            "</head><body style=\"font-family: system-ui, sans-serif; margin: 1.5em 2em;\">\n" + section
            + "</body></html>\n")
    texts = {"matrix.md": to_markdown(data), "matrix-section.html": section, "matrix.html": page,
             "matrix.json": json.dumps(data, indent=2, default=str) + "\n"}
    for name, text in texts.items():
        (folder / name).write_text(recorded(text, folder), encoding="utf-8")   # paths anchored under results/
    counts = Counter(r["status"] for e in data["results"] for r in e["rows"])
    write_manifest(folder, "reproduce", {"results": [e["result"] for e in data["results"]],
                                         "max_minutes": options.max_minutes},
                   counts={"results": len(data["results"]), "rows": sum(counts.values()), **counts,
                           "kept": len(kept)},
                   tolerances=options.tolerances.rules, outputs=list(FILES))
    return [folder / name for name in FILES]
