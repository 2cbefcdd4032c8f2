"""Exit 0 when this checkout is already installed as `make install` leaves it, so that the Makefile can skip pip
(its resolver and editable build take about 25 s of one core even when nothing changes); exit 1 otherwise.

Installed means: lsr-eval is an editable install of this folder, made from the pyproject.toml and constraints.txt
that are here now (their sha256 are kept in work/.installed after pip succeeds: `python .ci/installed.py --record`),
every requirement of pyproject.toml (dependencies and the extras named on the command line) is met by the
installed versions, and so is every pin of constraints.txt for those packages (`make install` installs with
`-c constraints.txt`: the exact versions the suite was made with)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / "work" / ".installed"
#: The files a skip depends on; a change to either installs again.
FILES = ("pyproject.toml", "constraints.txt")


def _stamp() -> str:
    """What must not change for a skip: the bytes of pyproject.toml and constraints.txt and the interpreter (its
    resolved path: ``python`` and ``python3`` are one interpreter, and a stamp written through one holds for the
    other)."""
    return json.dumps({**{name: hashlib.sha256((ROOT / name).read_bytes()).hexdigest() for name in FILES},
                       "python": os.path.realpath(sys.executable)})


def _requirements(extras: list[str]) -> list[str]:
    """pyproject.toml's dependencies and those of each extra in ``extras`` (a missing extra: KeyError)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project.get("dependencies", []))
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    return [line.strip() for line in lines if line.strip()]


def _constraints() -> list[str]:
    """constraints.txt's lines, without comments and blank lines."""
    lines = (line.split("#", 1)[0].strip() for line in (ROOT / "constraints.txt").read_text().splitlines())
    return [line for line in lines if line]


def _name(requirement: str) -> str:
    """The normalised project name of a requirement (PEP 503: ``PyYAML``, ``pyyaml`` and ``py_yaml`` are one)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    return canonicalize_name(Requirement(requirement).name)


def _pins(requirements: list[str]) -> list[str]:
    """The constraints of the packages that ``requirements`` name (those whose marker holds here)."""
    from packaging.requirements import Requirement

    names = {_name(r) for r in requirements if (marker := Requirement(r).marker) is None or marker.evaluate()}
    return [c for c in _constraints() if _name(c) in names]


def _editable_here() -> bool:
    for dist in metadata.distributions(name="lsr-eval"):  # a build's lsr_eval.egg-info in the cwd has no direct_url
        url = json.loads(dist.read_text("direct_url.json") or "{}")
        if url.get("dir_info", {}).get("editable", False) and url.get("url") == ROOT.as_uri():
            return True
    return False


def _met(requirement: str) -> bool:
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    if req.marker is not None and not req.marker.evaluate():
        return True  # not for this interpreter or platform
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        return False
    return req.specifier.contains(version, prereleases=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--record"]:
        STAMP.parent.mkdir(exist_ok=True)
        STAMP.write_text(_stamp())
        return 0
    try:
        if not STAMP.is_file() or STAMP.read_text() != _stamp() or not _editable_here():
            return 1
        requirements = _requirements(argv)
        return 0 if all(_met(r) for r in requirements + _pins(requirements)) else 1
    except Exception:  # packaging missing, an unreadable stamp or pyproject.toml...: install
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
