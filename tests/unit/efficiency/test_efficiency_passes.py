"""PISA's timing protocol (lsr_eval.efficiency.passes): one untimed pass, then the pooled timed passes, pass after
pass; checked with calls that record their order and take a known time."""

from __future__ import annotations

import pytest

from lsr_eval.efficiency import passes
from lsr_eval.settings import SettingError


class Clock:
    """A fake ``perf_counter``: each call i of the timed function advances it by ``cost[i]`` seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_one_untimed_pass_then_pooled_passes_pass_after_pass(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(passes.time, "perf_counter", clock)
    order: list[str] = []

    def call(name: str, seconds: float):
        def run():
            order.append(name)
            clock.now += seconds
        return run

    ms = passes.timed_passes([call("a", 0.001), call("b", 0.003)], passes=2)
    assert order == ["a", "b"] * 3          # the untimed pass, then two timed ones
    assert ms == pytest.approx([1.0, 3.0, 1.0, 3.0])   # pass 1's queries, then pass 2's: n x passes times


def test_pooled_samples_pair_each_search_with_its_querys_encoding(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(passes.time, "perf_counter", clock)

    def cost(seconds):
        def run():
            clock.now += seconds
        return run

    out = passes.pooled_samples([10.0, 20.0], [cost(0.002), cost(0.005)], passes=3)
    assert out["encode"] == [10.0, 20.0]
    assert out["search"] == pytest.approx([2.0, 5.0] * 3)
    assert out["total"] == pytest.approx([12.0, 25.0] * 3)   # mean total = mean encode + mean search
    assert sum(out["total"]) / 6 == pytest.approx(15.0 + 3.5)


def test_engine_calls_prefer_the_engines_own_call_else_search():
    class Plain:
        def search(self, weights, k, qid="query"):
            return [("d", float(k))] * len(weights)

    class WithCall(Plain):
        def engine_call(self, weights, k):
            return lambda: ("engine", len(weights), k)

    assert [c() for c in passes.engine_calls(WithCall(), [{"a": 1}, {"a": 1, "b": 2}], 7)] == \
        [("engine", 1, 7), ("engine", 2, 7)]
    assert [c() for c in passes.engine_calls(Plain(), [{"a": 1}], 3)] == [[("d", 3.0)]]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_passes_is_a_positive_integer(bad):
    with pytest.raises(SettingError, match="passes must be"):
        passes.timed_passes([lambda: None], passes=bad)


def test_the_benchmark_protocol_and_its_passes(tmp_path):
    from lsr_eval.benchmark.config import EfficiencyEntry

    assert EfficiencyEntry().timed_passes is None and EfficiencyEntry(protocol="pisa").timed_passes == 2
    assert EfficiencyEntry(protocol="pisa", passes=3).timed_passes == 3
    with pytest.raises(SettingError, match=r"^rounds must be 1 with protocol pisa .*got 2$"):
        EfficiencyEntry(protocol="pisa", rounds=2)
    with pytest.raises(SettingError, match="protocol must be one of fastest, pisa, got 'tool'"):
        EfficiencyEntry(protocol="tool")
