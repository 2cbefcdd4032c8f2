"""Results derived from the other committed results, not rerun: the HTML report (``lsr-eval report``) and this
regression matrix. Each is one row, "could not run", naming the command that rebuilds it; the report's tables are
checked against the results they come from by ``tests/integration/test_committed_results.py``."""

from __future__ import annotations

from lsr_eval.reproduce.checks import Blocker
from lsr_eval.reproduce.compare import COULD_NOT_RUN
from lsr_eval.reproduce.jobs import Job, Options
from lsr_eval.reproduce.results import Result

#: The command that rebuilds each derived stage.
REBUILT_BY = {
    "report": "lsr-eval report results --out results/report --overwrite",
    "reproduce": "lsr-eval reproduce --all results/ --out work/reproduce --matrix results/reproduce",
}


def plan(result: Result, options: Options) -> Job:
    command = REBUILT_BY.get(result.stage, " ".join(map(str, result.manifest.get("command") or [])))
    why = f"derived from the other results, not rerun (rebuilt by {command})"
    return Job(command=command, rows={"": {}}, blocked={"": Blocker(COULD_NOT_RUN, why)}, kind="derived")
