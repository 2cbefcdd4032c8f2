"""The engine registry owns its listings: an engine registered in ``ENGINES`` (and nowhere else) is in ``lsr-eval
index``'s help and its package in reproduce's machine record; removing it removes it from both."""

from __future__ import annotations

import importlib

import pytest

from lsr_eval.engines import registry
from lsr_eval.engines.registry import EngineSpec
from lsr_eval.export.collection import UINT32
from lsr_eval.reproduce import machine

FAKE = EngineSpec("tests.nowhere", "FakeEngine", "fake-engine-package==1.2", "a fake engine", UINT32)


def _index_help() -> str:
    from lsr_eval.commands import index

    return importlib.reload(index).HELP


@pytest.fixture
def fake_engine(monkeypatch):
    monkeypatch.setitem(registry.ENGINES, "fake", FAKE)
    yield "fake"
    monkeypatch.undo()
    _index_help()          # the module's help read again without the fake engine


def test_a_registered_engine_is_listed_where_engines_are(fake_engine, monkeypatch):
    assert "fake" in _index_help().split("--engine ")[1].split(")")[0].split("|")
    assert "fake-engine-package" in machine.recorded_packages()
    monkeypatch.setattr(machine, "installed_version", lambda name: "1.2" if name == "fake-engine-package" else None)
    record = machine.describe_machine()
    assert record["versions"]["fake-engine-package"] == "1.2" and "fake-engine-package 1.2" in record["summary"]


def test_every_engine_of_the_registry_is_listed_and_nothing_else():
    listed = _index_help().split("--engine ")[1].split(")")[0].split("|")
    assert listed == list(registry.ENGINES)
    assert set(machine.engine_packages()) == {"pyterrier-pisa", "pyseismic-lsr", "bmp", "qdrant-client"}
    assert "fake-engine-package" not in machine.recorded_packages()
