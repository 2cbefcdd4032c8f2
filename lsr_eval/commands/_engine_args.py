"""``--engine`` and ``--engine-option`` (shared by the splade, index and search subcommands)."""

from __future__ import annotations

import argparse
from typing import Any

from lsr_eval.commands.options import add_setting
from lsr_eval.engines.registry import ENGINES, parse_option
from lsr_eval.pipeline.settings import SearchOptions


def engine_names() -> str:
    """The registered engines as a help text writes them (``anserini|pisa|...``)."""
    return "|".join(ENGINES)


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    add_setting(p, SearchOptions, "engine", note=": " + "; ".join(f"{k}: {v.summary}" for k, v in ENGINES.items()))
    p.add_argument("--engine-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an engine build setting or search knob (repeatable), e.g. query_cut=10 heap_factor=0.7 "
                        "for seismic (a smaller heap_factor scores more blocks: slower, closer to exact), "
                        "query_algorithm=maxscore for pisa")


def engine_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``--engine-option`` values as a dict (None when none was given)."""
    return dict(parse_option(o) for o in args.engine_option) or None
