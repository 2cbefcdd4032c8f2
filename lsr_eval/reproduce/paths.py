"""Where a recorded path lies on this machine. A manifest names its paths relative to the checkout (``results/x``;
the shared data as ``../shared/data/...``) or from an anchor (``$WORK/``, ``site-packages:``, ``~/``: see
:mod:`lsr_eval.manifest`); an old manifest names the absolute folders of the machine that made it. A relative path is
looked for from the result's checkout, the current folder and the running lsr-eval's checkout; an anchored one is
resolved on this machine; an absolute one is taken as it is. ``--path-map OLD=NEW`` moves a prefix of any of them
first (``$WORK=/data/work``, ``/work/shared/data=/data/shared``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lsr_eval.errors import ConfigError
from lsr_eval.manifest import SOURCE_ROOT, resolve_anchor


@dataclass(frozen=True)
class PathMap:
    """Prefix replacements for recorded paths, longest prefix first."""

    pairs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, items: list[str] | None) -> PathMap:
        pairs = []
        for item in items or []:
            old, sep, new = item.partition("=")
            if not sep or not old or not new:
                raise ConfigError(f"--path-map {item!r}: expected OLD=NEW (e.g. /work/shared/data=/data/shared)")
            pairs.append((old.rstrip("/") or "/", new.rstrip("/") or "/"))
        return cls(tuple(sorted(pairs, key=lambda p: -len(p[0]))))

    def apply(self, path: str) -> str:
        """``path`` with its longest mapped prefix replaced (whole path components only), then an anchored path
        (``$WORK/...``, ``site-packages:...``) resolved on this machine."""
        for old, new in self.pairs:
            if path == old or path.startswith(old + "/"):
                return resolve_anchor(new + path[len(old):])
        return resolve_anchor(path)

    def here(self, path: str) -> str:
        """:meth:`apply`, then a relative path looked for from the current folder and the running checkout
        (:func:`locate`)."""
        return locate(path, search_bases(None), self)


def locate(path: str, bases: list[Path], paths: PathMap) -> str:
    """The path on this machine: mapped; a relative one resolved against the first base where it exists (else
    returned as given, to fail where it is used, naming it)."""
    mapped = paths.apply(path)
    if os.path.isabs(mapped):
        return mapped
    for base in bases:
        if (base / mapped).exists():
            return str((base / mapped).resolve())
    return mapped


def search_bases(repo: Path | None) -> list[Path]:
    """Folders a relative recorded path is looked for from: the result's checkout, the current folder, and the
    checkout of the running lsr-eval."""
    out = [p for p in (repo, Path.cwd(), SOURCE_ROOT) if p is not None]
    return list(dict.fromkeys(p.resolve() for p in out))
