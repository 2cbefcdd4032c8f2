"""`.ci/installed.py`, which lets `make install` skip pip: a skip only for an unchanged setup.cfg, the same
interpreter (under any of its names) and every pin met."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "installed.py"

SETUP_CFG = """[options]
install_requires =
    pytest>=1
    no-such-package-lsr-eval==1.0; python_version < "3"
[options.extras_require]
test =
    {test}
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The script as a module, rooted in ``tmp_path`` (its own setup.cfg and stamp), installed editable here."""
    spec = importlib.util.spec_from_file_location("ci_installed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "STAMP", tmp_path / "work" / ".installed")
    monkeypatch.setattr(module, "_editable_here", lambda: True)
    (tmp_path / "setup.cfg").write_text(SETUP_CFG.format(test="pytest>=1"))
    return module


def test_a_recorded_install_is_skipped_until_setup_cfg_changes(installed, tmp_path):
    assert installed.main(["test"]) == 1  # no stamp: a clean clone installs
    assert installed.main(["--record"]) == 0
    assert installed.main(["test"]) == 0  # the marker-excluded requirement counts as met
    (tmp_path / "setup.cfg").write_text(SETUP_CFG.format(test="pytest>=1\n    pytest-xdist"))
    assert installed.main(["test"]) == 1


def test_an_unmet_pin_or_another_folder_installs(installed, tmp_path, monkeypatch):
    (tmp_path / "setup.cfg").write_text(SETUP_CFG.format(test="pytest<1"))
    installed.main(["--record"])
    assert installed.main([]) == 0 and installed.main(["test"]) == 1
    (tmp_path / "setup.cfg").write_text(SETUP_CFG.format(test="no-such-package-lsr-eval"))
    installed.main(["--record"])
    assert installed.main(["test"]) == 1
    monkeypatch.setattr(installed, "_editable_here", lambda: False)
    assert installed.main([]) == 1


def test_the_stamp_holds_for_every_name_of_the_interpreter(installed, tmp_path, monkeypatch):
    """``python`` and ``python3`` (links to one binary) share a stamp; another interpreter does not."""
    real = tmp_path / "bin" / "python3.11"
    real.parent.mkdir()
    real.touch()
    for name in ("python", "python3"):
        os.symlink(real.name, real.parent / name)
    monkeypatch.setattr(sys, "executable", str(real.parent / "python"))
    installed.main(["--record"])
    monkeypatch.setattr(sys, "executable", str(real.parent / "python3"))
    assert installed.main(["test"]) == 0
    (real.parent / "python3.12").touch()
    monkeypatch.setattr(sys, "executable", str(real.parent / "python3.12"))
    assert installed.main(["test"]) == 1
