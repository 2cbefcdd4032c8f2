"""Settings documented from their declarations: one Markdown table a dataclass (name, type and constraint, default,
unit, help), so that ``docs/settings.md`` (``lsr-eval settings --markdown``) cannot drift from the code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING

from lsr_eval.settings import declared, default_of, describe


def _default(f) -> str:
    value = default_of(f)
    if value is MISSING:
        return "(required)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def table(cls: type) -> str:
    """The declared settings of ``cls`` as a Markdown table."""
    rows = ["| setting | type and constraint | default | unit | what it is |", "|---|---|---|---|---|"]
    for f, tp, s in declared(cls):
        cell = describe(tp, s).replace("|", "\\|")
        rows.append(f"| `{f.name}` | {cell} | {_default(f)} | {s.unit or ''} | {s.help.replace('|', '/')} |")
    return "\n".join(rows)


def markdown(sections: Sequence[tuple[str, str, type]], title: str, intro: str) -> str:
    """A page: ``title``, ``intro``, then for each (heading, where the settings are given, class) its table."""
    parts = [f"# {title}", "", intro, ""]
    for heading, where, cls in sections:
        parts += [f"## {heading}", "", where, "", table(cls), ""]
    return "\n".join(parts)
