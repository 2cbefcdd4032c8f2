"""Typed settings: each setting is declared once, as a dataclass field whose annotation gives its type and whose
:func:`setting` gives its constraint (range or choices), unit and one-line help, as ir_measures' ``ParamInfo`` does.
One validator (:func:`validate`) reads the declarations, and so do the command line's help
(:func:`lsr_eval.commands.options.add_setting`) and ``docs/settings.md`` (:mod:`lsr_eval.settings.docs`).

One error format, whatever the door (a YAML file, an option, a keyword, a manifest replayed):
``<name> must be <constraint>, got <value>``, raised here as :class:`SettingError`; the caller puts the file or
option in front (``bench.yaml: systems[0]: rescale_k must be > 0, got 0``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass
from typing import Any, Literal, Union, get_args, get_origin

from lsr_eval.errors import ConfigError

__all__ = ["Setting", "SettingError", "Validated", "setting", "validate", "check", "check_as", "declaration",
           "declared", "default_of", "describe", "scalar_type", "show", "check_option", "section"]

#: The key of a field's metadata that holds its :class:`Setting`.
KEY = "lsr_eval.setting"


class SettingError(ConfigError):
    """A setting's value outside its declaration: ``<name> must be <constraint>, got <value>``."""

    def __init__(self, name: str, rule: str, value: Any, where: str = "") -> None:
        self.name, self.rule, self.value, self.where = name, rule, value, where
        super().__init__(self._message())

    def __reduce__(self):   # raised in a worker process, it reaches the parent whole
        return SettingError, (self.name, self.rule, self.value, self.where)

    def _message(self) -> str:
        return f"{self.where + ': ' if self.where else ''}{self.name} must be {self.rule}, got {show(self.value)}"

    def at(self, where: str, prefix: str = "") -> SettingError:
        """This error said of a file, entry or option (``where``, put in front), the setting named
        ``<prefix><name>`` (a dotted key of a YAML section); the same exception, re-raised by the caller, so that
        its traceback still starts where the value was checked."""
        self.where = f"{where}: {self.where}" if where and self.where else where or self.where
        self.name = prefix + self.name
        self.args = (self._message(),)
        return self


@dataclass(frozen=True)
class Setting:
    """A setting's constraint and help. Bounds: ``ge``/``gt`` below, ``le``/``lt`` above; ``choices``: the allowed
    values, or a function giving them (a registry read when checked: engines); ``unit``: said in the help."""

    help: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[Any, ...] | Callable[[], Iterable[Any]] | None = None
    unit: str | None = None
    #: a string's form: (a regular expression it must match whole, the forms in words: ``auto, cpu, cuda, cuda:N``)
    pattern: tuple[str, str] | None = None
    #: the fewest items a list or mapping holds (a string: the fewest characters)
    min_items: int | None = None

    def allowed(self) -> tuple[Any, ...] | None:
        """The allowed values (None: any of the type)."""
        if self.choices is None:
            return None
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def bounds(self) -> str:
        """``>= 1``, ``> 0``, ``in [0, 1]``, ``in (0, 1)``, or '' without bounds."""
        low = ("[", self.ge) if self.ge is not None else ("(", self.gt) if self.gt is not None else None
        high = ("]", self.le) if self.le is not None else (")", self.lt) if self.lt is not None else None
        if low and high:
            return f"in {low[0]}{low[1]:g}, {high[1]:g}{high[0]}"
        if low:
            return f"{'>=' if low[0] == '[' else '>'} {low[1]:g}"
        if high:
            return f"{'<=' if high[0] == ']' else '<'} {high[1]:g}"
        return ""

    def within(self, x: float) -> bool:
        return ((self.ge is None or x >= self.ge) and (self.gt is None or x > self.gt)
                and (self.le is None or x <= self.le) and (self.lt is None or x < self.lt))


def setting(default: Any = MISSING, *, help: str | None = None, ge: float | None = None, gt: float | None = None,
            le: float | None = None, lt: float | None = None,
            choices: tuple[Any, ...] | Callable[[], Iterable[Any]] | None = None, unit: str | None = None,
            pattern: tuple[str, str] | None = None, min_items: int | None = None, like: Setting | None = None,
            default_factory: Any = MISSING, **field_options: Any) -> Any:
    """A dataclass field declared with its constraint (the type is the field's annotation); ``like``: a setting
    declared once elsewhere (e.g. :data:`lsr_eval.models.options.RESCALE_K`) whose constraint and help this field
    shares (what is given here overrides it)."""
    given = {k: v for k, v in dict(help=help, ge=ge, gt=gt, le=le, lt=lt, choices=choices, unit=unit,
                                   pattern=pattern, min_items=min_items).items() if v is not None}
    if like is None and help is None:
        raise TypeError("setting() needs help= or like=")   # a bug in a declaration, not bad input
    meta = {KEY: dataclasses.replace(like, **given) if like is not None else Setting(**given)}
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta, **field_options)
    return dataclasses.field(default=default, metadata=meta, **field_options)


def show(value: Any) -> str:
    """A value as a message shows it: numbers as written in a file or an option (``0``, ``1.5``, ``-1``, whether
    they arrived as int or float), strings quoted."""
    if isinstance(value, float) and math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=False)


def declared(cls: type) -> list[tuple[dataclasses.Field, Any, Setting]]:
    """The declared settings of dataclass ``cls``: (field, its type, its :class:`Setting`), in field order."""
    hints = _hints(cls)
    return [(f, hints[f.name], f.metadata[KEY]) for f in dataclasses.fields(cls) if KEY in f.metadata]


def _members(tp: Any) -> tuple[list[Any], bool]:
    """(the non-None members of a type, whether None is allowed)."""
    if get_origin(tp) in (Union, types.UnionType):
        members = list(get_args(tp))
    else:
        members = [tp]
    optional = type(None) in members
    flat: list[Any] = []
    for m in members:
        if m is type(None):
            continue
        if get_origin(m) in (Union, types.UnionType):
            inner, opt = _members(m)
            flat += inner
            optional |= opt
        else:
            flat.append(m)
    return flat, optional


#: Member types in words, one and many.
_WORDS = {bool: ("true or false", "true or false values"), int: ("an integer", "integers"),
          float: ("a number", "numbers"), str: ("a string", "strings")}


def _name_of(tp: Any, many: bool = False, min_items: int | None = None) -> str:
    """One member type in words: ``an integer``, ``a number``, ``true or false``, ``'suggested'``, ``a string``,
    ``a list of strings``, ``a mapping of strings to strings`` (``many``: the plural; ``min_items``: ``non-empty`` or
    ``at least N``)."""
    if get_origin(tp) is Literal:
        return ", ".join(map(repr, get_args(tp)))
    if tp is str and min_items and not many:
        return "a non-empty string"
    if tp in _WORDS:
        return _WORDS[tp][many]
    origin, args = get_origin(tp) or tp, [a for a in get_args(tp) if a is not Ellipsis]
    args = [] if Any in args else args   # Any: no item type to say
    kind = "mapping" if isinstance(origin, type) and issubclass(origin, Mapping) else \
        "list" if origin in (tuple, list, Iterable) else None
    if kind is None:
        return getattr(tp, "__name__", str(tp))
    items = f"{_name_of(args[0], True)} to {_name_of(args[1], True)}" if kind == "mapping" and len(args) == 2 else \
        _name_of(args[0], True) if kind == "list" and args else ""
    if min_items and min_items > 1:   # a list of at least 2 strings
        return f"a {kind} of at least {min_items} {items or 'items'}"
    head = f"{'' if many else 'a '}{'non-empty ' if min_items else ''}{kind}{'s' if many else ''}"
    return f"{head} of {items}" if items else head


def describe(tp: Any, s: Setting, null: str | None = "null") -> str:
    """A setting's type and constraint in words: ``an integer >= 1 or null``, ``one of auto, fp32, bf16``
    (``null``: the word for None, or None to leave it out: an option left out is None)."""
    members, optional = _members(tp)
    allowed = choices_of(tp, s)
    if allowed is not None:
        parts = [f"one of {', '.join(map(str, allowed))}"]
    elif s.pattern is not None:
        parts = [f"one of {s.pattern[1]}"]
    else:
        bounds = s.bounds()
        parts = [part for m in members for part in (
            ["true", "false"] if m is bool else [f"{_name_of(m)} {bounds}" if bounds and m in (int, float)
                                                 else _name_of(m, min_items=s.min_items)])]
    parts = list(dict.fromkeys(parts)) + ([null] if optional and null else [])   # list | tuple: "a list" once
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def choices_of(tp: Any, s: Setting) -> tuple[Any, ...] | None:
    """The allowed values: the declaration's ``choices``, or a ``Literal`` type's (None: any value of the type)."""
    allowed = s.allowed()
    if allowed is not None:
        return allowed
    members, _ = _members(tp)
    if members and all(get_origin(m) is Literal for m in members):
        return tuple(v for m in members for v in get_args(m))
    return None


def _fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` has type ``tp`` (one member; bounds apart)."""
    if tp is Any:
        return True
    if get_origin(tp) is Literal:
        return value in get_args(tp)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if tp is str:
        return isinstance(value, str)
    origin, args = get_origin(tp) or tp, get_args(tp)
    if origin in (list, tuple) and args:   # a YAML list fills a tuple field too
        return isinstance(value, (list, tuple)) and all(_fits(v, args[0]) for v in value)
    if isinstance(origin, type) and issubclass(origin, Mapping) and len(args) == 2:
        return isinstance(value, Mapping) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if isinstance(origin, type):
        return isinstance(value, origin)
    return True


def check(name: str, value: Any, tp: Any, s: Setting, where: str = "") -> Any:
    """``value`` if it fits the declaration, else a :class:`SettingError`: the constraint alone when the type is
    right and the value outside it (``must be > 0``), else the whole declaration (``must be a number > 0 or null``),
    so that one wrong value reads the same through every door."""
    members, optional = _members(tp)
    if value is None:
        if optional:
            return value
        raise SettingError(name, describe(tp, s), value, where)
    allowed = choices_of(tp, s)
    if allowed is not None:
        if value in allowed:
            return value
        raise SettingError(name, f"one of {', '.join(map(str, allowed))}", value, where)
    fitting = [m for m in members if _fits(value, m)]
    if (not fitting or (s.pattern is not None and not re.fullmatch(s.pattern[0], value))
            or (s.min_items is not None and hasattr(value, "__len__") and len(value) < s.min_items)):
        raise SettingError(name, describe(tp, s), value, where)
    if any(m in (int, float) for m in fitting) and not s.within(value):
        raise SettingError(name, s.bounds(), value, where)
    return value


def declaration(cls: type, field: str) -> tuple[dataclasses.Field, Any, Setting]:
    """The declaration of ``cls``'s setting ``field``: (field, type, :class:`Setting`)."""
    for one in declared(cls):
        if one[0].name == field:
            return one
    raise KeyError(f"{cls.__name__} declares no setting {field!r}")   # a bug in the caller, not bad input


def check_as(cls: type, field: str, value: Any, name: str | None = None, null: bool = True) -> Any:
    """``value`` checked against the declaration of ``cls``'s ``field`` (errors name it ``name``, default the
    field's): a value given elsewhere for that setting, e.g. a sweep's list (``null=False``: None refused too)."""
    _, tp, s = declaration(cls, field)
    if not null:
        members, _ = _members(tp)
        tp = Union[tuple(members)]
    return check(name or field, value, tp, s)


def section(cls: type, data: Any, where: str, prefix: str = "") -> Mapping[str, Any]:
    """``data`` when it can make dataclass ``cls``: a mapping with no key ``cls`` lacks and every required one (a
    YAML file's section; ``where`` names the file and entry, ``prefix`` the section's dotted name), else a
    ConfigError naming the key and what is allowed."""
    if not isinstance(data, Mapping):
        of = f" for {prefix.rstrip('.')}" if prefix else ""
        raise ConfigError(f"{where}: expected a mapping of keys{of}, got {type(data).__name__}")
    fields = dataclasses.fields(cls)
    unknown = sorted(set(data) - {f.name for f in fields}, key=str)
    if unknown:
        raise ConfigError(f"{where}: unknown key '{prefix}{unknown[0]}'; allowed: "
                          f"{', '.join(sorted(f.name for f in fields))}")
    missing = [f.name for f in fields if f.name not in data and default_of(f) is MISSING]
    if missing:
        raise ConfigError(f"{where}: missing required key '{prefix}{missing[0]}'")
    return data


def check_option(table: Mapping[str, tuple[type, Setting]], name: str, value: Any, where: str) -> Any:
    """``value`` checked as the option ``name`` of ``table`` (option -> (type, declaration): an engine's
    options), converted to that type (a float option holds a float), errors said of ``where`` (the engine)."""
    tp, declared_as = table[name]
    try:
        return tp(check(name, value, tp, declared_as))
    except SettingError as e:
        raise e.at(where) from None


def scalar_type(tp: Any) -> type:
    """The type a text is read as for a setting of type ``tp`` (an option's value): int, float or str."""
    members, _ = _members(tp)
    return next((m for m in members if m in (int, float)), str)


def validate(obj: Any) -> None:
    """Check every declared setting of dataclass instance ``obj``."""
    for f, tp, s in declared(type(obj)):
        check(f.name, getattr(obj, f.name), tp, s)


class Validated:
    """A dataclass of declared settings checked when made (:func:`validate`); a subclass with more to check calls
    ``super().__post_init__()`` first."""

    def __post_init__(self) -> None:
        validate(self)


def default_of(f: dataclasses.Field) -> Any:
    """A field's default (``dataclasses.MISSING`` when it has none: a required setting)."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING
