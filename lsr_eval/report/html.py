"""The report as one self-contained HTML page: tables, figures embedded as base64 PNG (with links to the PNG/PDF
and table files beside it), and the manifests (what was run, on what, when)."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsr_eval import __version__
from lsr_eval.report.table import Table


@dataclass
class FigureFiles:
    """A figure written to disk: caption and its PNG and PDF files."""

    caption: str
    png: Path
    pdf: Path | None = None


@dataclass
class Section:
    """A part of the page, in order: intro, tables, figures, manifests, notes."""

    title: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[FigureFiles] = field(default_factory=list)
    manifests: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 1.5em 2em; color: #222;
       line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2em;
margin-top: 1.8em; } h3 { margin-top: 1.2em; }
.meta { color: #555; font-size: 0.9em; }
nav ul { columns: 2; font-size: 0.9em; }
.table-wrap { overflow-x: auto; margin: 0.6em 0; }
table.report { border-collapse: collapse; font-size: 0.85em; }
table.report caption { text-align: left; font-weight: 600; padding: 0.3em 0; }
table.report th, table.report td { border: 1px solid #ccc; padding: 0.25em 0.55em; white-space: nowrap; }
table.report th { background: #f2f2f2; position: sticky; top: 0; }
table.report tbody tr:nth-child(even) { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.missing { text-align: right; color: #999; font-style: italic; }
td.label { text-align: left; }
ul.notes { font-size: 0.8em; color: #555; margin-top: 0.2em; }
.files { font-size: 0.8em; color: #555; }
figure { margin: 1em 0; max-width: 960px; }
figure img { width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #444; }
dl.manifest { display: grid; grid-template-columns: max-content auto; gap: 0.15em 1em; font-size: 0.85em; }
dl.manifest dt { font-weight: 600; } dl.manifest dd { margin: 0; font-family: monospace; white-space: pre-wrap;
word-break: break-word; }
details { font-size: 0.8em; margin: 0.3em 0 1em; } pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; }
"""


def _files_line(out: Path, paths: list[Path]) -> str:
    links = " · ".join(f"<a href=\"{html.escape(p.relative_to(out).as_posix())}\">{html.escape(p.suffix[1:])}</a>"
                       for p in paths if p.exists())
    return f"<div class=\"files\">files: {links}</div>" if links else ""


def _manifest_html(label: str, doc: dict[str, Any] | None) -> str:
    if doc is None:
        return f"<h4>{html.escape(label)}</h4><p class=\"meta\">no manifest.json</p>"
    machine = doc.get("machine") or {}
    command = doc.get("command")
    fields = [
        ("created", doc.get("created")), ("stage", doc.get("stage")), ("commit", doc.get("commit")),
        ("command", " ".join(map(str, command)) if isinstance(command, list) else command),
        ("machine", ", ".join(f"{k}: {v}" for k, v in machine.items()) if isinstance(machine, dict) else machine),
        ("versions", ", ".join(f"{k} {v}" for k, v in (doc.get("versions") or {}).items())),
        ("experiment", json.dumps(doc.get("experiment"), ensure_ascii=False)),
    ]
    rows = "".join(f"<dt>{k}</dt><dd>{html.escape(str(v))}</dd>" for k, v in fields if v not in (None, ""))
    full = html.escape(json.dumps(doc, ensure_ascii=False, indent=2))
    return (f"<h4>{html.escape(label)}</h4><dl class=\"manifest\">{rows}</dl>"
            f"<details><summary>full manifest.json</summary><pre>{full}</pre></details>")


def _figure_html(out: Path, fig: FigureFiles) -> str:
    data = base64.b64encode(fig.png.read_bytes()).decode("ascii")
    files = [fig.png] + ([fig.pdf] if fig.pdf else [])
    return (f"<figure><img alt=\"{html.escape(fig.caption)}\" src=\"data:image/png;base64,{data}\">"
            f"<figcaption>{html.escape(fig.caption)}</figcaption>{_files_line(out, files)}</figure>")


def render_html(title: str, sections: list[Section], out: Path, table_files: dict[str, list[Path]],
                header: list[str]) -> str:
    """The page: title, ``header`` lines, a contents list, then each section. ``table_files`` maps a table name to
    its written files (linked under it); figure PNGs are read from disk and embedded."""
    parts = [f"<h1>{html.escape(title)}</h1>"]
    parts += [f"<div class=\"meta\">{html.escape(line)}</div>" for line in header]
    parts.append("<nav><ul>" + "".join(f"<li><a href=\"#{s.anchor}\">{html.escape(s.title)}</a></li>"
                                      for s in sections) + "</ul></nav>")
    for s in sections:
        parts.append(f"<h2 id=\"{s.anchor}\">{html.escape(s.title)}</h2>")
        if s.intro:
            parts.append(f"<p>{html.escape(s.intro)}</p>")
        for t in s.tables:
            parts.append(t.to_html() + _files_line(out, table_files.get(t.name, [])))
        parts += [_figure_html(out, f) for f in s.figures]
        parts += [_manifest_html(label, doc) for label, doc in s.manifests]
        if s.notes:
            parts.append("<ul class=\"notes\">" + "".join(f"<li>{html.escape(n)}</li>" for n in s.notes) + "</ul>")
    generated = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    parts.append(f"<hr><div class=\"meta\">generated by lsr-eval {html.escape(__version__)} on {generated}</div>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}"
            f"</title><style>{CSS}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
