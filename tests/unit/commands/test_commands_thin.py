"""The command line is a thin caller of the Python API: a command whose verb the API has parses its options, calls
the verb and prints; it imports the verb's module and none of the modules the verb's logic lives in (an AST check,
imports inside functions included)."""

from __future__ import annotations

from pathlib import Path

from package_imports import PACKAGE, absolute_imports, imported

#: command -> (the API module it calls, module prefixes of the verb's own logic it must not import)
THIN = {
    "evaluate": ("lsr_eval.api.evaluation", ("lsr_eval.evaluation.evaluate", "lsr_eval.significance.compare",
                                              "lsr_eval.runs", "lsr_eval.report")),
    "fuse": ("lsr_eval.api.fusion", ("lsr_eval.fusion.fuse", "lsr_eval.fusion.tune", "lsr_eval.fusion.cross_validation",
                                      "lsr_eval.runs", "lsr_eval.manifest", "lsr_eval.evaluation.evaluate")),
    "bm25": ("lsr_eval.api.runs", ("lsr_eval.pipeline.bm25", "lsr_eval.pipeline.reuse", "lsr_eval.pipeline.run_file",
                                   "lsr_eval.anserini", "lsr_eval.workdir")),
    "benchmark": ("lsr_eval.api.runs", ("lsr_eval.benchmark.run", "lsr_eval.workdir")),
    "splade": ("lsr_eval.api.vectors", ("lsr_eval.pipeline.splade", "lsr_eval.workdir", "lsr_eval.encode",
                                        "lsr_eval.anserini", "lsr_eval.engines")),
    # the stages one at a time on folders (lsr_eval.api.files)
    "encode": ("lsr_eval.api.files", ("lsr_eval.encode", "lsr_eval.pipeline.splade", "lsr_eval.manifest")),
    "index": ("lsr_eval.api.files", ("lsr_eval.engines", "lsr_eval.anserini", "lsr_eval.manifest")),
    "search": ("lsr_eval.api.files", ("lsr_eval.engines", "lsr_eval.evaluation", "lsr_eval.runs",
                                      "lsr_eval.manifest")),
    "carve_dev": ("lsr_eval.api.files", ("lsr_eval.data.splits", "lsr_eval.manifest")),
}


def thick_commands(root: Path = PACKAGE, thin: dict = THIN) -> list[str]:
    found = []
    for command, (api, logic) in thin.items():
        path = root / "commands" / f"{command}.py"
        modules = [m for m, _ in imported(path, root)]
        if api not in modules:
            found.append(f"commands/{command}.py does not call {api}")
        found += [f"commands/{command}.py:{line}: imports {m}, where the verb's logic lives"
                  for m, line in imported(path, root) if m.startswith(logic)]
    return found


def test_commands_with_an_api_verb_only_parse_call_and_print():
    found = thick_commands()
    assert found == [], "\n".join(found)


def test_checker_sees_a_command_doing_the_work_itself(tmp_path):
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "fuse.py").write_text(
        "def run(args):\n    from lsr_eval.fusion.fuse import fuse\n    return fuse(args.runs)\n")
    assert thick_commands(tmp_path, {"fuse": THIN["fuse"]}) == [
        "commands/fuse.py does not call lsr_eval.api.fusion",
        "commands/fuse.py:2: imports lsr_eval.fusion.fuse, where the verb's logic lives"]


#: What only the library does: write a stage's outputs (manifests, runs, metrics) and run models or processes.
WRITERS = {"lsr_eval.manifest": {"write_manifest", "prepare_output"}, "lsr_eval.runs.trec": {"write_run"},
           "lsr_eval.evaluation": {"write_metrics"}, "torch": None, "torch.distributed": None}


def commands_that_write(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted((root / "commands").glob("*.py")):
        for module, names, line in absolute_imports(path.read_text(encoding="utf-8")):
            if module not in WRITERS:
                continue
            written = WRITERS[module]
            if written is None:
                found.append(f"commands/{path.name}:{line}: imports {module}")
            found += [f"commands/{path.name}:{line}: imports {n} from {module}" for n in names
                      if written is not None and n in written]
    return found


def test_no_command_writes_a_stages_outputs_itself():
    """Every command leaves manifests, runs, metrics and models to the library function it calls."""
    found = commands_that_write()
    assert found == [], "\n".join(found)


def test_checker_sees_a_command_writing_its_manifest(tmp_path):
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "index.py").write_text(
        "from lsr_eval.manifest import read_manifest, write_manifest\nimport torch\n")
    assert commands_that_write(tmp_path) == ["commands/index.py:1: imports write_manifest from lsr_eval.manifest",
                                             "commands/index.py:2: imports torch"]
