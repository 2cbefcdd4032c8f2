"""One module owns the JVM: nothing outside lsr_eval/anserini/ imports jnius, jnius_config or pyserini."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = {"jnius", "jnius_config", "pyserini"}
#: No exception: the side-by-side comparisons with Pyserini get its modules from
#: lsr_eval.anserini.pyserini_modules (JVM first, dummy OpenAI key).


def java_imports(path: Path, root: Path = REPO) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            names = [str(node.args[0].value)]
        else:
            continue
        found += [f"{path.relative_to(root)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    return found


def test_only_anserini_package_touches_java():
    offenders = []
    for folder in ("lsr_eval", "pipelines", "studies", "notebooks", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            rel = path.relative_to(REPO).as_posix()
            if rel.startswith("lsr_eval/anserini/"):
                continue
            offenders += java_imports(path)
    assert offenders == [], "imports of jnius/pyserini outside lsr_eval/anserini/:\n" + "\n".join(offenders)


def test_checker_detects_an_import(tmp_path):
    bad = tmp_path / "probe.py"  # under tmp_path: tests never write into the repository
    bad.write_text("import os\nfrom jnius import autoclass\nimport pyserini.search\n")
    found = java_imports(bad, tmp_path)
    assert [f.split(": ")[1] for f in found] == ["jnius", "pyserini.search"]
