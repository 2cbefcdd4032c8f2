"""Exit 0 when this checkout is already installed as `make install` leaves it, so that the Makefile can skip pip
(its resolver and editable build take about 25 s of one core even when nothing changes); exit 1 otherwise.

Installed means: lsr-eval is an editable install of this folder, made from the setup.cfg that is here now (its
sha256 is kept in work/.installed after pip succeeds: `python .ci/installed.py --record`), and every requirement
of setup.cfg (install_requires and the extras named on the command line) is met by the installed versions."""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / "work" / ".installed"


def _stamp() -> str:
    """What must not change for a skip: setup.cfg's bytes and the interpreter (its resolved path: ``python`` and
    ``python3`` are one interpreter, and a stamp written through one holds for the other)."""
    return json.dumps({"setup.cfg": hashlib.sha256((ROOT / "setup.cfg").read_bytes()).hexdigest(),
                       "python": os.path.realpath(sys.executable)})


def _requirements(extras: list[str]) -> list[str]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = cfg["options"]["install_requires"].splitlines()
    for extra in extras:
        lines += cfg["options.extras_require"][extra].splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


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
        return 0 if all(_met(r) for r in _requirements(argv)) else 1
    except Exception:  # packaging missing, an unreadable stamp...: install
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
