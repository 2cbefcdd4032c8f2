"""CLI subcommands, one module each (a thin layer over the stages).

Each module defines ``NAME`` (the subcommand), ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Modules import heavy packages (torch, jnius, ranx) only inside ``run``, so ``lsr-eval --help`` stays fast.
"""
