"""Exception types. Every input problem raises one of these with a message that names the file, line or id."""

from __future__ import annotations


class LsrEvalError(Exception):
    """Base class: the CLI prints these as one-line errors (no traceback)."""


class InputError(LsrEvalError, ValueError):
    """Bad user input: malformed file, unknown name, duplicate id, ..."""


class ConfigError(InputError):
    """An invalid option value or configuration key."""


class JavaError(LsrEvalError, RuntimeError):
    """A Java exception raised inside Anserini, or no usable Java."""


class OutputExistsError(LsrEvalError):
    """An output folder holds a different experiment (pass --overwrite to replace it)."""
