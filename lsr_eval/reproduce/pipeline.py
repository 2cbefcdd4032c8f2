"""A result made by a study's script (``studies/<name>/*.py``, or a script that was under ``pipelines/`` before the
studies moved out of it: :data:`MOVED_SCRIPTS`), rerun with the command line its manifest recorded: ``--out`` and
``--work-dir`` point to fresh folders, ``--reuse`` (a cache of another run) is dropped, other recorded paths are mapped
(``--path-map``) and must exist here. The script runs in a child process from this checkout, stopped at
``--max-minutes`` when that is set.

One row: the manifest's sections (experiment identity, counts, figures; timings skipped by kind) and every JSON file
it lists in ``outputs``. Most of these scripts measure speed: what remains to compare is their counts and any
quality figure they record (a fidelity, a parity, a bound).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from lsr_eval.errors import LsrEvalError
from lsr_eval.manifest import SOURCE_ROOT, is_anchored, read_manifest
from lsr_eval.reproduce.checks import Blocker
from lsr_eval.reproduce.compare import COULD_NOT_RUN, flatten
from lsr_eval.reproduce.estimate import recorded_seconds
from lsr_eval.reproduce.jobs import Job, Options, Rows, TimeLimit
from lsr_eval.reproduce.records import identity
from lsr_eval.reproduce.results import Result

#: Scripts that moved from ``pipelines/`` to ``studies/``: a committed manifest keeps the command it ran, and its
#: replay runs the script's new home (manifests are never rewritten).
MOVED_SCRIPTS = {
    "pipelines/bench_encode.py": "studies/encode_speed/run.py",
    "pipelines/bench_query_path.py": "studies/query_path/run.py",
    "pipelines/bench_query_encoder.py": "studies/query_encoder/run.py",
    "pipelines/parity_pyserini.py": "studies/pyserini_parity/run.py",
    "pipelines/bench_scale.py": "studies/scale_curve/run.py",
    "pipelines/bench_long_queries.py": "studies/long_queries/run.py",
    "pipelines/bench_bf16_fidelity.py": "studies/bf16_fidelity/run.py",
    "pipelines/gpu_check.py": "studies/gpu_check/run.py",
    "pipelines/bench_train_step.py": "studies/train_step/run.py",
    "pipelines/check_exact_engines.py": "studies/exact_engines/run.py",
    "pipelines/bench_commands.py": "studies/command_speed/run.py",
    "pipelines/bench_query_filter_bounds.py": "studies/query_filter_bounds/run.py",
}
#: Manifest keys that are not results.
NOT_COMPARED = ("stage", "outputs", "experiment")
#: Options whose value the rerun replaces (``--out``; a scratch folder: ``--work-dir``, or a study's ``--work``) or
#: drops (``--reuse``): a rerun never resumes from the recorded run's scratch files.
OUT, WORKS, DROPPED = "--out", ("--work-dir", "--work"), ("--reuse",)


def script_path(recorded: str) -> str | None:
    """The script a recorded ``command[0]`` runs today, relative to the checkout: ``studies/<name>/<file>.py`` as it
    is, an old ``pipelines/<file>.py`` through :data:`MOVED_SCRIPTS` (or as it is, where it is still there); None
    for a command that is no script of the checkout."""
    path = Path(recorded)
    if path.suffix != ".py":
        return None
    if path.parent.name == "pipelines":
        old = f"pipelines/{path.name}"
        return MOVED_SCRIPTS.get(old, old)
    if len(path.parts) >= 3 and path.parts[-3] == "studies":
        return "/".join(path.parts[-3:])
    return None


def is_pipeline(manifest: Mapping[str, Any]) -> bool:
    command = [str(a) for a in manifest.get("command") or []]
    return bool(command) and script_path(command[0]) is not None


def _outputs(folder: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON documents among the manifest's ``outputs``, by file stem."""
    out = {}
    for name in manifest.get("outputs") or []:
        path = folder / str(name)
        if str(name).endswith(".json") and path.is_file():
            out[Path(name).stem] = json.loads(path.read_text(encoding="utf-8"))
    return out


def rows(folder: Path) -> Rows:
    """The one row of a pipeline result in ``folder``."""
    manifest = read_manifest(folder) or {}
    row = flatten(identity(manifest.get("experiment")), "experiment.")
    row.update(flatten({k: v for k, v in manifest.items() if k not in NOT_COMPARED}))
    for stem, doc in _outputs(folder, manifest).items():
        row.update(flatten(doc, f"{stem}.") if isinstance(doc, Mapping) else {stem: doc})
    return {"": row}


def _arguments(argv: list[str], options: Options) -> tuple[list[str], list[str], str | None]:
    """(arguments without ``--out``, the scratch folder and ``--reuse``; recorded paths missing here; the recorded
    command's scratch-folder option, if it had one)."""
    out, missing, work = [], [], None
    skip_next = False
    for i, arg in enumerate(argv):
        if skip_next:
            skip_next = False
            continue
        name = arg.split("=", 1)[0]
        if name in (OUT, *WORKS, *DROPPED):
            work = name if name in WORKS else work
            skip_next = "=" not in arg
            continue
        if os.path.isabs(arg) or is_anchored(arg):   # a path of an old (absolute) or a new (anchored) manifest
            arg = options.paths.here(arg)
            if not Path(arg).exists():
                missing.append(arg)
        out.append(arg)
    return out, missing, work


def _new_folder(top: Path, committed: Path) -> Path:
    """Where the rerun wrote the result: ``top`` itself, or (a script that writes one folder per setting under
    ``--out``) its subfolder named like the committed one."""
    if (top / "manifest.json").is_file():
        return top
    for candidate in sorted(top.rglob(committed.name)):
        if (candidate / "manifest.json").is_file():
            return candidate
    raise LsrEvalError(f"the rerun wrote no manifest.json under {top}")


def plan(result: Result, options: Options) -> Job:
    argv = [str(a) for a in result.manifest["command"]]
    relative = script_path(argv[0]) or argv[0]
    script = SOURCE_ROOT / relative
    args, missing, work_option = _arguments(argv[1:], options)
    command = f"python {relative} " + " ".join([*args, OUT, "OUT", *([work_option, "WORK"] if work_option else [])])
    job = Job(command=command.strip(), rows=rows(result.folder), kind="pipeline",
              estimate_s=recorded_seconds(result.manifest, _outputs(result.folder, result.manifest).values()),
              stops_itself=True)
    if not script.is_file():
        job.blocked[""] = Blocker(COULD_NOT_RUN, f"this checkout has no {script.relative_to(SOURCE_ROOT)}")
    elif missing:
        job.blocked[""] = Blocker(COULD_NOT_RUN, f"missing data: {', '.join(missing)}")
    if job.blocked:
        return job

    def run(out: Path, work: Path) -> Rows:
        top = out / "result"
        full = [sys.executable, str(script), *args, OUT, str(top), *([work_option, str(work)] if work_option else [])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SOURCE_ROOT),
                                                                          os.environ.get("PYTHONPATH")]))}
        limit = None if options.max_minutes is None else options.max_minutes * 60
        with open(out / "log.txt", "w", encoding="utf-8") as log_file:
            try:
                done = subprocess.run(full, cwd=SOURCE_ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                      timeout=limit)
            except subprocess.TimeoutExpired:
                raise TimeLimit(f"stopped after --max-minutes {options.max_minutes:g} (no recorded time to "
                                "estimate it by)") from None
        if done.returncode != 0:
            raise LsrEvalError(f"{script.name} exited with status {done.returncode} (log: {out / 'log.txt'})")
        return rows(_new_folder(top, result.folder))

    job.run = run
    return job
