"""The exploratory controls' results where the rescaling result is quoted: README.md, docs/results.md and the study's
results page hold a block rendered from the controls' summary (controls.py's, from the committed runs and tables,
as results/studies/confirm-rescale-nfcorpus-controls/summary.json holds it), between ``<!-- controls: begin -->``
and ``<!-- controls: end -->``.

    python studies/confirm_rescale_nfcorpus/controls_pages.py write   # each page's block, replaced
    python studies/confirm_rescale_nfcorpus/controls_pages.py check   # every page shows its block (exit 1 if not)
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTROLS = "results/studies/confirm-rescale-nfcorpus-controls"
DEV_TABLE, TEST_TABLE = (f"results/benchmarks/confirm-rescale-nfcorpus-{s}" for s in ("dev", "test"))
REGISTRATION = "docs/studies/confirm-rescale-nfcorpus-controls.md"
PAGES = {"readme": "README.md", "results": "docs/results.md",
         "study": "docs/studies/confirm-rescale-nfcorpus-results.md"}
BEGIN, END = "<!-- controls: begin -->", "<!-- controls: end -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), re.S)


def _controls():
    import importlib.util

    name = "confirm_controls"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("controls.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_VERB = {"remains": "remains", "gone": "is gone", "reversed": "is reversed"}


def _s(x: float) -> str:
    return f"{x:+.3f}"


def short(summary: dict) -> str:
    """The controls in a few sentences (README.md, docs/results.md)."""
    test = summary["step0"]["test"]
    arms = test["arms"]
    if any(a["step0"] is None for a in arms.values()):
        return f"Exploratory controls are registered ({REGISTRATION}) and not all run yet.\n"
    lost = [arm for arm, a in arms.items() if a["learned"] < 0]
    if len(lost) == len(arms):
        who = "every arm's untrained model scores higher than the mean of its 90-step runs"
    elif not lost:
        who = "every arm's 90-step runs score higher on average than its untrained model"
    else:
        who = f"the untrained model scores higher than the mean of its 90-step runs for {', '.join(lost)}"
    text = (f"Exploratory controls, registered after the study ({REGISTRATION}): on NFCorpus test {who} (k = 1 "
            f"{arms['k1']['step0']:.3f} at step 0, {arms['k1']['trained_90_mean']:.3f} after 90 steps; k = 16 "
            f"{arms['k16-compensated']['step0']:.3f} and {arms['k16-compensated']['trained_90_mean']:.3f}), and "
            f"k = 16's advantage {_VERB[test['statement']]} at step 0 ({_s(test['gap_step0'])}; dev "
            f"{_s(summary['step0']['dev']['gap_step0'])})")
    if test["statement"] != "remains" and {"k1", "k16-compensated"} <= set(lost):
        text += ": the +0.040 measures how much less 90 steps lose at k = 16 than at k = 1"
    text += "."
    long = summary["long"]
    if long["gap_at_900"] is None:
        text += " The 900-step control (seed 1, dev) has not finished yet."
    else:
        text += (f" After 900 steps (seed 1, dev) k16 - k1 is {_s(long['gap_at_900'])} (at 90: "
                 f"{_s(long['gap_at_90_seed1'])}): the advantage {_VERB[long['statement']]}; k = 1 moved "
                 f"{_s(long['k1_learned'])} from 90 to 900 steps.")
    return textwrap.fill(text, 118, break_on_hyphens=False) + "\n"


def block(page: str, summary: dict) -> str:
    """The block of one page: the study page gets the full summary under its short reading."""
    if page != "study":
        return short(summary)
    return (short(summary) + "\n" + _controls().render(summary)
            + "\n(`studies/confirm_rescale_nfcorpus/controls.py summary`, from the committed runs; exploratory: the "
            "registered verdicts above are unchanged.)\n")


def load(repo: Path = REPO) -> dict:
    """The controls' summary from the committed runs and tables (what summary.json holds: the registered test
    checks that)."""
    return _controls().summarise(repo / CONTROLS, repo / DEV_TABLE, repo / TEST_TABLE)


def check_page(text: str, summary: dict, page: str) -> list[str]:
    """What is wrong with one page's block ([] when it shows exactly the block rendered from ``summary``)."""
    found = _BLOCK.findall(text)
    if len(found) != 1:
        return [f"{PAGES[page]}: {len(found)} controls blocks, expected 1"]
    return [] if found[0] == block(page, summary) else [f"{PAGES[page]}: the controls block is not the summary's"]


def write(repo: Path = REPO) -> None:
    summary = load(repo)
    for page, rel in PAGES.items():
        path = repo / rel
        text = path.read_text(encoding="utf-8")
        new = _BLOCK.sub(lambda _: f"{BEGIN}\n{block(page, summary)}{END}", text)
        if new == text and not _BLOCK.search(text):
            raise SystemExit(f"{rel}: no {BEGIN} ... {END} block to fill; add the two markers where it belongs")
        path.write_text(new, encoding="utf-8")


def main(argv: list[str]) -> int:
    if argv == ["write"]:
        write()
        return 0
    if argv == ["check"]:
        summary = load()
        problems = [p for page, rel in PAGES.items()
                    for p in check_page((REPO / rel).read_text(encoding="utf-8"), summary, page)]
        print("\n".join(problems) or "every page shows the controls' block")
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
