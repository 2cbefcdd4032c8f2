"""The settings module: declarations read into words, one validator, one error format (hand-written cases)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest

from lsr_eval.settings import SettingError, declared, describe, setting, show, validate


@dataclass(frozen=True)
class Probe:
    k: float | Literal["suggested"] | None = setting(None, gt=0, help="a factor")
    n: int = setting(1, ge=1, help="a count")
    p: Literal["auto", "fp32"] = setting("fp32", help="a choice")
    b: float = setting(0.4, ge=0, le=1, help="a fraction")
    f: float = setting(0.5, gt=0, lt=1, help="an open interval")
    flag: bool | None = setting(None, help="a flag")
    d: str = setting("cpu", pattern=(r"cpu|cuda(:\d+)?", "cpu, cuda, cuda:N"), help="a form")
    e: str = setting("a", choices=lambda: ("a", "b"), help="a registry's names")

    def __post_init__(self) -> None:
        validate(self)


def test_each_declaration_reads_as_words():
    words = {f.name: describe(tp, s) for f, tp, s in declared(Probe)}
    assert words == {"k": "a number > 0, 'suggested' or null", "n": "an integer >= 1", "p": "one of auto, fp32",
                     "b": "a number in [0, 1]", "f": "a number in (0, 1)", "flag": "true, false or null",
                     "d": "one of cpu, cuda, cuda:N", "e": "one of a, b"}


@pytest.mark.parametrize("given, message", [
    ({"k": 0}, "k must be > 0, got 0"),                       # right type, outside the range: the range alone
    ({"k": -2.0}, "k must be > 0, got -2"),                   # 2.0 and 2 read the same
    ({"k": "big"}, "k must be a number > 0, 'suggested' or null, got 'big'"),   # wrong type: the declaration
    ({"k": float("nan")}, "k must be a number > 0, 'suggested' or null, got nan"),
    ({"n": 0}, "n must be >= 1, got 0"),
    ({"n": 1.5}, "n must be an integer >= 1, got 1.5"),
    ({"n": True}, "n must be an integer >= 1, got True"),     # a bool is no integer here
    ({"p": "fp8"}, "p must be one of auto, fp32, got 'fp8'"),
    ({"b": 1.5}, "b must be in [0, 1], got 1.5"),
    ({"f": 1}, "f must be in (0, 1), got 1"),
    ({"flag": 1}, "flag must be true, false or null, got 1"),
    ({"d": "gpu"}, "d must be one of cpu, cuda, cuda:N, got 'gpu'"),
    ({"e": "c"}, "e must be one of a, b, got 'c'"),
])
def test_a_wrong_value_gets_one_line(given, message):
    with pytest.raises(SettingError) as caught:
        Probe(**given)
    assert str(caught.value) == message


def test_right_values_pass():
    assert Probe(k="suggested", n=3, p="auto", b=0, f=0.1, flag=False, d="cuda:1", e="b").k == "suggested"
    assert Probe(k=2).k == 2 and Probe(b=1).b == 1


def test_the_place_goes_in_front_and_the_error_stays_the_same():
    with pytest.raises(SettingError) as caught:
        Probe(n=0)
    error = caught.value
    assert error.at("c.yaml", "train.") is error
    assert str(error) == "c.yaml: train.n must be >= 1, got 0"
    assert str(error.at("suite")) == "suite: c.yaml: train.n must be >= 1, got 0"


def test_values_show_as_written():
    assert [show(v) for v in (0.0, 1.5, -1, "x", None, 1e-5)] == ["0", "1.5", "-1", "'x'", "None", "1e-05"]


def test_a_declaration_needs_its_help():
    with pytest.raises(TypeError):
        setting(1)


def test_an_error_survives_a_process_boundary():
    import pickle

    error = SettingError("k", "> 0", 0, "f.yaml")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is SettingError and str(again) == str(error) == "f.yaml: k must be > 0, got 0"


def test_unknown_keys_of_any_type_are_named():
    from lsr_eval.errors import ConfigError
    from lsr_eval.settings import section

    with pytest.raises(ConfigError, match="^c.yaml: unknown key 'x.1'; allowed: b, d, e"):
        section(Probe, {1: "a", "zz": 2, "n": 1}, "c.yaml", "x.")


@pytest.mark.parametrize("tp, least, value, message", [
    (list[str], 1, ["a", 1], "x must be a non-empty list of strings, got ['a', 1]"),   # each item has the type
    (list[str], 1, [], "x must be a non-empty list of strings, got []"),                 # at least one item
    (list[str], 2, ["a"], "x must be a list of at least 2 strings, got ['a']"),
    (tuple[str, ...], None, "ab", "x must be a list of strings, got 'ab'"),               # a text is no list
    (dict[str, float], None, {"a": "high"}, "x must be a mapping of strings to numbers, got {'a': 'high'}"),
    (str, 1, "", "x must be a non-empty string, got ''"),
    (list | tuple, None, 3, "x must be a list, got 3"),                                   # said once
])
def test_lists_and_mappings_check_their_items_and_size(tp, least, value, message):
    from lsr_eval.settings import Setting, check

    with pytest.raises(SettingError) as caught:
        check("x", value, tp, Setting(help="a probe", min_items=least))
    assert str(caught.value) == message
    assert check("x", ["a", "b"], list[str], Setting(help="p", min_items=2)) == ["a", "b"]
    assert check("x", ("a",), tuple[str, ...], Setting(help="p", min_items=1)) == ("a",)   # a YAML list or a tuple
