"""``lsr-eval`` command line: discovers the subcommand modules in :mod:`lsr_eval.commands`."""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from types import ModuleType

from lsr_eval import __version__, commands
from lsr_eval.errors import LsrEvalError, on_disk_full


def _command_modules() -> list[ModuleType]:
    mods = [importlib.import_module(f"{commands.__name__}.{m.name}") for m in pkgutil.iter_modules(commands.__path__)]
    return sorted((m for m in mods if hasattr(m, "NAME")), key=lambda m: m.NAME)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lsr-eval", description="Learned sparse retrieval through Anserini.")
    parser.add_argument("--version", action="version", version=f"lsr-eval {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for mod in _command_modules():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        with on_disk_full(None, f"running `lsr-eval {args.command}`", clean=False):  # a write no stage guarded
            return int(args._run(args) or 0)
    except LsrEvalError as e:
        print(f"lsr-eval {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    finally:  # a failed command (or benchmark row) leaves no empty output folder behind
        from lsr_eval.manifest import remove_empty_outputs

        for folder in remove_empty_outputs():
            logging.getLogger("lsr_eval").info("removed the empty output folder %s", folder)


if __name__ == "__main__":
    sys.exit(main())
