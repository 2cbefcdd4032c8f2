"""Command-line options, one definition each for the commands and the studies' scripts: an option for any declared
setting (:func:`add_setting`), precision and device (argparse lives in :mod:`lsr_eval.commands`, the library's
command line)."""

from __future__ import annotations

import argparse
from typing import Any

from lsr_eval.models.options import DEFAULT_DEVICE, DEFAULT_PRECISION, DEVICE_CHOICES, PRECISIONS, check_device
from lsr_eval.settings import declaration, default_of, describe, scalar_type


def _device(value: str) -> str:
    try:
        return check_device(value)
    except ValueError as e:   # ConfigError: argparse reports it as a usage error
        raise argparse.ArgumentTypeError(str(e)) from None


def add_precision(p: argparse.ArgumentParser, *, choices: tuple[str, ...] = PRECISIONS, nargs: str | None = None,
                  flag: str = "--precision", default: Any = DEFAULT_PRECISION, default_text: str | None = None,
                  note: str = "") -> None:
    """``--precision`` among ``choices``, default :data:`~lsr_eval.models.options.DEFAULT_PRECISION` (``default``
    and ``default_text`` for a script whose default is another, said in its help); with ``nargs="+"`` a list of
    them (default: the default precision alone)."""
    if nargs and default == DEFAULT_PRECISION:
        default = [DEFAULT_PRECISION]
    said = default_text or f"{DEFAULT_PRECISION}: the same numbers on every machine"
    p.add_argument(flag, default=default, choices=choices, nargs=nargs,
                   help=f"forward-pass precision ({', '.join(choices)}; default {said}; bf16, or auto = bf16 on CUDA "
                        f"and CPUs with avx512_bf16/AMX, opt in for speed){note}; the resolved precision is recorded")


def add_device(p: argparse.ArgumentParser, default: str | None = DEFAULT_DEVICE, why: str = "",
               help: str | None = None) -> None:
    """``--device`` (:data:`~lsr_eval.models.options.DEVICE_CHOICES`); ``why`` says why a script's default is not
    ``auto``; ``help`` replaces the whole help (a command whose default comes from elsewhere)."""
    p.add_argument("--device", default=default, type=_device, metavar="DEVICE",
                   help=help or (f"{DEVICE_CHOICES} (default {default}"
                                 + (f": {why}" if why else "; auto = CUDA when present, else cpu") + ")"))


def add_setting(p: argparse.ArgumentParser, cls: type, name: str, flag: str | None = None, note: str = "",
                **options: Any) -> None:
    """``--<name>`` for the setting ``name`` that ``cls`` declares (:mod:`lsr_eval.settings`): its help, type,
    constraint and default read from the declaration. argparse only reads the text as the setting's type; the
    value is checked where the settings are made, so that a wrong one reads the same as from a YAML file."""
    f, tp, s = declaration(cls, name)
    default = options.pop("default", default_of(f))
    shown = "" if default is None else f"; default {default:g}" if isinstance(default, float) else \
        f"; default {default}"
    text = f"{s.help} ({describe(tp, s, null=None)}{shown}){note}".replace("%", "%%")
    p.add_argument(flag or "--" + name.replace("_", "-"), type=scalar_type(tp), default=default, help=text,
                   **options)
