"""What the tests that read the package's source share: where it is, and which ``lsr_eval`` modules a file imports
(an AST walk: absolute and relative imports, at any depth)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lsr_eval"


def imported(path: Path, root: Path = PACKAGE) -> list[tuple[str, int]]:
    """Every ``lsr_eval`` module ``path`` (under the package folder ``root``) imports, absolute or relative, at any
    depth, with its line."""
    package = ".".join(("lsr_eval", *path.relative_to(root).with_suffix("").parts[:-1]))
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "lsr_eval"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "lsr_eval":   # from lsr_eval import hardware: the names are modules, or the root's own
                out += [(f"lsr_eval.{a.name}" if (root / a.name).exists() or (root / f"{a.name}.py").exists()
                         else "lsr_eval", node.lineno) for a in node.names]
            elif module.split(".")[0] == "lsr_eval":
                out.append((module, node.lineno))
    return out


def absolute_imports(source: str) -> list[tuple[str, tuple[str, ...], int]]:
    """Every absolute import statement of ``source``, at any depth: ``(module, names, line)``; ``import a.b`` is
    ``("a.b", (), line)``, ``from m import x, y`` is ``("m", ("x", "y"), line)``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, (), node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node.module or "", tuple(a.name for a in node.names), node.lineno))
    return out
