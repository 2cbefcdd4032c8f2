"""Folders show the data flow, and a stage imports only from itself and earlier stages: text -> sparse vectors
(models, encode) -> collection (export) -> what every searcher shares (search) -> Anserini -> the engines -> runs ->
metrics, significance, fusion, efficiency -> pipeline (one system on one dataset) -> benchmarks -> report, with
training a side branch; and inside a stage no two modules import each other (no cycle; the API's verbs among them).
Imports inside functions count too: a lazy import that runs backwards is still a backwards dependency."""

from __future__ import annotations

from pathlib import Path

from package_imports import PACKAGE, absolute_imports, imported

#: Stages in data-flow order; modules of one stage may import each other.
STAGES: list[set[str]] = [
    {"__init__", "errors", "defaults", "_lazy", "hardware", "settings"},   # the package root holds only its version;
    # settings: the declarations every stage uses (lsr_eval.settings)
    {"manifest"},
    {"workdir"},
    {"data"},
    {"models"},
    {"encode"},
    {"export"},
    {"search"},     # what every searcher shares (counts, the tie rule): Anserini's and the engines' alike
    {"anserini"},
    {"engines"},    # the engine registry and adapters, Anserini's among them
    {"runs"},
    {"evaluation"},
    {"significance", "fusion", "efficiency"},
    {"train"},
    {"pipeline", "experiments"},   # experiments: the old name of pipeline, kept one release (a warning)
    {"benchmark"},
    {"report"},
    {"reproduce"},
    {"api"},
    {"commands"},
    {"cli"},
]
#: The one documented exception: reproduce replays a recorded command line through today's parser.
ALLOWED = {("reproduce", "cli")}
RANK = {name: i for i, stage in enumerate(STAGES) for name in stage}


def stage_of(module: str) -> str:
    """``lsr_eval.engines.pisa`` -> ``engines``; ``lsr_eval`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def backwards_imports(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        src = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for module, line in imported(path, root):
            dst = stage_of(module)
            if src not in RANK or dst not in RANK:
                found.append(f"lsr_eval/{rel}:{line}: {module} (a stage STAGES does not list)")
            elif RANK[dst] > RANK[src] and (src, dst) not in ALLOWED:
                found.append(f"lsr_eval/{rel}:{line}: {src} imports the later stage {module}")
    return found


def module_cycles(folder: Path, root: Path = PACKAGE) -> list[str]:
    """The import cycles among the modules of one package folder (``lsr_eval/api``), imports inside functions
    included: each as ``a -> b -> a``."""
    package = ".".join(("lsr_eval", *folder.relative_to(root).parts))
    graph = {f"{package}.{p.stem}": {m for m, _ in imported(p, root) if m.startswith(package + ".")}
             for p in sorted(folder.glob("*.py")) if p.stem != "__init__"}
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycle = path[path.index(nxt):] + [nxt]
                key = frozenset(cycle)
                if key not in done:
                    done.add(key)
                    found.append(" -> ".join(m.rsplit(".", 1)[1] for m in cycle))
            elif nxt in graph:
                visit(nxt, path + [nxt])

    for start in graph:
        visit(start, [start])
    return found


def test_anserini_does_not_reach_the_engines(tmp_path):
    """The engines wrap Anserini; Anserini's searcher reaches what both share in ``search``, never ``engines``."""
    (tmp_path / "anserini").mkdir()
    (tmp_path / "anserini" / "probe.py").write_text("from lsr_eval.search.counts import SearchCounts\n"
                                                    "from lsr_eval.engines.registry import ENGINES\n")
    assert backwards_imports(tmp_path) == [
        "lsr_eval/anserini/probe.py:2: anserini imports the later stage lsr_eval.engines.registry"]


def test_no_cycle_inside_a_stage():
    found = [f"lsr_eval/{folder.name}: {cycle}" for folder in sorted(PACKAGE.iterdir())
             if folder.is_dir() and (folder / "__init__.py").exists() for cycle in module_cycles(folder)]
    assert found == [], "modules that import each other:\n" + "\n".join(found)


def test_checker_sees_a_cycle(tmp_path):
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "__init__.py").write_text("")
    (tmp_path / "api" / "runs.py").write_text("def f():\n    from lsr_eval.api.evaluation import g\n")
    (tmp_path / "api" / "evaluation.py").write_text("from lsr_eval.api.runs import f\n")
    (tmp_path / "api" / "inputs.py").write_text("")
    assert module_cycles(tmp_path / "api", tmp_path) == ["evaluation -> runs -> evaluation"]


def test_every_stage_imports_only_earlier_stages():
    found = backwards_imports()
    assert found == [], "imports against the data flow:\n" + "\n".join(found)


def test_checker_sees_a_backwards_import(tmp_path):
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "probe.py").write_text(
        "def f():\n    from lsr_eval.engines.base import MARKER\n    from ..data import types\n")
    assert backwards_imports(tmp_path) == [
        "lsr_eval/export/probe.py:2: export imports the later stage lsr_eval.engines.base"]


#: What library code must not contain: a study's import, or a path of this checkout worked out from the module's own
#: file (an installed wheel has no checkout). The manifest's source root (``SOURCE_ROOT``: where the code that ran
#: lives, for provenance) and the evaluation's provenance are the documented uses of ``__file__``.
CHECKOUT_PATHS = ("parents[2]", "parents[3]", ".parent.parent.parent")
#: Where argparse belongs: the command line (its commands and its entry point), nowhere else in the library.
COMMAND_LINE = ("commands", "cli.py")


def study_imports_and_checkout_paths(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        source = path.read_text(encoding="utf-8")
        for module, _, line in absolute_imports(source):
            if module.split(".")[0] == "studies":
                found.append(f"lsr_eval/{rel}:{line}: imports {module}")
            if module == "argparse" and rel.parts[0] not in COMMAND_LINE:
                found.append(f"lsr_eval/{rel}:{line}: argparse outside the command line")
        for i, line in enumerate(source.splitlines(), 1):
            if "__file__" in line and any(p in line for p in CHECKOUT_PATHS):
                found.append(f"lsr_eval/{rel}:{i}: a checkout path from the module's own file")
    return found


def test_library_imports_no_study_knows_no_checkout_path_and_parses_no_arguments():
    found = study_imports_and_checkout_paths()
    assert found == [], "library code that reaches the checkout:\n" + "\n".join(found)


def test_checker_sees_a_study_import_and_a_checkout_path(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "probe.py").write_text(
        "from pathlib import Path\nimport studies.query_path.measure\nREPO = Path(__file__).resolve().parents[2]\n"
        "import argparse\n")
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "fine.py").write_text("import argparse\n")
    assert study_imports_and_checkout_paths(tmp_path) == [
        "lsr_eval/report/probe.py:2: imports studies.query_path.measure",
        "lsr_eval/report/probe.py:4: argparse outside the command line",
        "lsr_eval/report/probe.py:3: a checkout path from the module's own file"]


#: Each heavy library and the one module (or the one stage) that imports it: the rest of the library goes through
#: that owner (the JVM through lsr_eval.anserini.jvm, as Pyserini's one module owns it).
OWNERS = {"jnius": ("anserini/jvm.py",), "jnius_config": ("anserini/jvm.py",), "matplotlib": ("report/plots.py",),
          "ranx": ("fusion/ranx_runs.py",), "onnx": ("models/onnx_query.py",),
          "onnxruntime": ("models/onnx_query.py",), "pyserini": ("anserini/pyserini_modules.py",),
          "numba": ("fusion/",)}


def owner_violations(root: Path = PACKAGE, owners: dict = OWNERS) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for module, _, line in absolute_imports(path.read_text(encoding="utf-8")):
            allowed = owners.get(module.split(".")[0])
            if allowed is not None and not rel.startswith(allowed):
                found.append(f"lsr_eval/{rel}:{line}: imports {module}, owned by {', '.join(allowed)}")
    return found


def test_each_heavy_library_has_one_owner():
    found = owner_violations()
    assert found == [], "\n".join(found)


def test_checker_sees_a_second_owner(tmp_path):
    (tmp_path / "anserini").mkdir()
    (tmp_path / "anserini" / "searcher.py").write_text("def f():\n    from jnius import cast\n")
    (tmp_path / "anserini" / "jvm.py").write_text("import jnius\n")
    assert owner_violations(tmp_path) == [
        "lsr_eval/anserini/searcher.py:2: imports jnius, owned by anserini/jvm.py"]
