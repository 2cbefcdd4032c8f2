"""The confirmatory rescaling study's analysis (docs/studies/confirm-rescale-nfcorpus.md): the registered rules,
applied to the committed tables, in the registered order.

    python studies/confirm_rescale_nfcorpus/analysis.py choose --study S --dev D      # dev table -> S/dev-choice.json
    python studies/confirm_rescale_nfcorpus/analysis.py ready-for-test --study S --dev D
    python studies/confirm_rescale_nfcorpus/analysis.py test --study S --dev D --test T   # -> S/verdicts.json, prints

``choose`` reads the dev table alone (no test file is opened): the best compensated k (H1's treatment) and the best k
among k = 1 and the compensated arms (H2), each the arm with the highest mean dev nDCG@10 over its three seeds.
``ready-for-test`` refuses, in one line, until the dev table holds 19 ok rows, the dev choice exists, and every run's
test search is committed unevaluated. ``test`` computes H1-H3 on test with the paired t-test over seeds
(:func:`lsr_eval.significance.seed_t_test`), the decision rule's verdicts, the interval half-widths, the smallest
difference three seeds detect with 80% power at the observed sd, each run's stability, and the per-seed rows.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from lsr_eval.significance.seed_ttest import seed_t_test
from lsr_eval.train.stability import stability

ARMS = ("k1", "k2-compensated", "k4-compensated", "k8-compensated", "k16-compensated", "k2-divided")
COMPENSATED = ("k2-compensated", "k4-compensated", "k8-compensated", "k16-compensated")
SEEDS = (1, 2, 3)
MEASURE = "nDCG@10"
K_OF = {"k1": 1, "k2-compensated": 2, "k4-compensated": 4, "k8-compensated": 8, "k16-compensated": 16}
CANDIDATES = 16          # InfoNCE candidates per query: batch 8 x (1 positive + 1 negative), in-batch
POWER = 0.8
INSPECT = "results/train/confirm-nfcorpus-inspect-head/diagnosis.json"
Direction = Literal["above", "below"]


class StudyError(Exception):
    """A missing or incomplete input, said in one line."""


def run_name(arm: str, seed: int) -> str:
    return f"confirm-nfcorpus-{arm}-s{seed}"


def _json(path: Path) -> dict | list:
    """The JSON document at ``path`` (:func:`lsr_eval.manifest.load_json`), a missing or broken one a StudyError."""
    from lsr_eval.errors import InputError
    from lsr_eval.manifest import load_json

    if not path.is_file():
        raise StudyError(f"{path}: missing")
    try:
        return load_json(path)
    except InputError as e:
        raise StudyError(str(e)) from None


def per_seed(table: Path) -> dict[str, dict[int, float]]:
    """``{arm: {seed: nDCG@10}}`` of a benchmark folder's ``table.json``; every one of the 18 runs and BM25 must
    be an ok row."""
    rows = {r["system"]: r for r in _json(table / "table.json")}
    expected = ["bm25", *(run_name(a, s) for a in ARMS for s in SEEDS)]
    bad = [name for name in expected if rows.get(name, {}).get("status") != "ok"]
    if bad:
        raise StudyError(f"{table}/table.json: {len(bad)} of the 19 rows missing or not ok ({', '.join(bad[:4])})")
    return {a: {s: float(rows[run_name(a, s)][MEASURE]) for s in SEEDS} for a in ARMS} | \
        {"bm25": {s: float(rows["bm25"][MEASURE]) for s in SEEDS}}


def mean(values: dict[int, float]) -> float:
    return math.fsum(values.values()) / len(values)


def best(arms: tuple[str, ...], values: dict[str, dict[int, float]]) -> str:
    """The arm with the highest mean over seeds (the first in ``arms`` order on a tie)."""
    return max(arms, key=lambda a: (mean(values[a]), -arms.index(a)))


@dataclass(frozen=True)
class Test:
    """One hypothesis: treatment minus baseline, paired by seed, and the decision rule's verdict."""

    name: str
    treatment: str
    baseline: str
    split: str
    diffs: dict[int, float]
    mean: float
    low: float
    high: float
    half_width: float
    sd: float
    detectable: float     # smallest |difference| detected with 80% power at this sd, 3 seeds, two-sided 5%
    p: float
    verdict: str


def detectable_difference(sd: float, n: int = len(SEEDS), level: float = 0.95, power: float = POWER) -> float:
    """The true mean paired difference that a two-sided one-sample t-test at ``level`` over ``n`` seeds detects
    with probability ``power`` when the differences' sd is ``sd`` (noncentral t; scipy)."""
    from scipy import optimize, stats

    if not sd > 0:
        return 0.0
    df, crit = n - 1, stats.t.ppf(0.5 + level / 2, n - 1)

    def shortfall(delta: float) -> float:
        ncp = delta * math.sqrt(n) / sd
        lower = stats.nct.sf(crit, df, -ncp)   # P(T < -crit) by symmetry (scipy's cdf gives NaN far out)
        return stats.nct.sf(crit, df, ncp) + (0.0 if math.isnan(lower) else lower) - power

    return float(optimize.brentq(shortfall, 1e-12, 100 * sd))


def compare(name: str, values: dict[str, dict[int, float]], treatment: str, baseline: str, split: str,
            direction: Direction | None) -> Test:
    """``treatment - baseline`` over seeds, with the registered verdict (``direction`` None: reported only)."""
    c = seed_t_test(values[baseline], values[treatment], pair="paired")
    diffs = {s: values[treatment][s] - values[baseline][s] for s in SEEDS}
    sd = math.sqrt(math.fsum((d - c.mean_difference) ** 2 for d in diffs.values()) / (len(SEEDS) - 1))
    if direction is None:
        verdict = "reported"
    elif c.low > 0 or c.high < 0:
        holds = c.low > 0 if direction == "above" else c.high < 0
        verdict = "holds" if holds else "rejected (interval excludes 0 in the other direction)"
    else:
        verdict = "not established (interval includes 0)"
    return Test(name, treatment, baseline, split, diffs, c.mean_difference, c.low, c.high, (c.high - c.low) / 2, sd,
                detectable_difference(sd), c.p_value, verdict)


def _created_after(iso: str) -> str:
    """Now, in manifests' format, waiting for the next second when ``iso`` (a manifest's time) is this one, so
    that the order of files is the order of their times."""
    while True:
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        if now > iso:
            return now
        time.sleep(0.2)


def choose(study: Path, dev: Path, repo: Path) -> dict:
    """The dev choice (no test file read), written to ``study/dev-choice.json``."""
    values = per_seed(dev)
    dev_created = _json(dev / "manifest.json")["created"]
    suggested = _json(repo / INSPECT)["suggested_k"]
    best_comp = best(COMPENSATED, values)
    best_k = best(("k1", *COMPENSATED), values)
    h1_dev = compare("H1 (dev, biased up by the choice)", values, best_comp, "k1", "dev", None)
    h2: dict = {"suggested_k": suggested, "best_k_on_dev": K_OF[best_k], "same": K_OF[best_k] == suggested}
    if not h2["same"]:
        suggested_arm = next((a for a, k in K_OF.items() if k == suggested), None)
        if suggested_arm is None:
            raise StudyError(f"{repo / INSPECT}: suggested k {suggested} is not an arm of the study")
        t = compare("H2 (dev): best minus suggested", values, best_k, suggested_arm, "dev", "above")
        h2["difference"] = asdict(t)
        h2["verdict"] = ("rejected" if t.low > 0 else "neither confirmed nor rejected (the dev data cannot tell "
                         "the two k apart)")
    else:
        h2["verdict"] = "holds"
    out = {"created": _created_after(dev_created), "rule": "highest mean dev nDCG@10 over seeds 1-3",
           "dev_table": str(dev), "dev_table_created": dev_created,
           "dev_means": {a: mean(values[a]) for a in (*ARMS, "bm25")},
           "dev_per_seed": {a: {str(s): v for s, v in values[a].items()} for a in ARMS},
           "best_compensated": best_comp, "best_k_arm": best_k, "H1_dev": asdict(h1_dev), "H2": h2}
    (study / "dev-choice.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


def ready_for_test(study: Path, dev: Path) -> None:
    """Refuse (:class:`StudyError`) unless the test table's turn has come."""
    per_seed(dev)
    _json(study / "dev-choice.json")
    for a in ARMS:
        for s in SEEDS:
            folder = study / "runs" / run_name(a, s) / "test"
            manifest = _json(folder / "manifest.json")
            if manifest.get("metrics") or (folder / "metrics.json").exists():
                raise StudyError(f"{folder}: holds test numbers before the test table")
            if not (folder / "run.trec.xz").is_file():
                raise StudyError(f"{folder}/run.trec.xz: missing")


def run_stability(repo: Path) -> dict[str, dict]:
    """Each run's :class:`~lsr_eval.train.stability.Stability` from its committed log."""
    out = {}
    for a in ARMS:
        for s in SEEDS:
            log = repo / "results" / "train" / run_name(a, s) / "log.jsonl"
            if not log.is_file():
                raise StudyError(f"{log}: missing")
            records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
            out[run_name(a, s)] = stability(records, CANDIDATES).to_dict()
    return out


def verdicts(study: Path, dev: Path, test: Path, repo: Path) -> dict:
    """H1-H3 on test from the committed tables and the committed dev choice; written to ``study/verdicts.json``."""
    choice = _json(study / "dev-choice.json")
    if per_seed(dev) and choice["best_compensated"] != best(COMPENSATED, per_seed(dev)):
        raise StudyError(f"{study}/dev-choice.json: its choice is not the dev table's (recompute it)")
    values = per_seed(test)
    h1 = compare("H1: best compensated k (dev) minus k = 1", values, choice["best_compensated"], "k1", "test",
                 "above")
    h3 = compare("H3: divided k = 2 minus k = 1", values, "k2-divided", "k1", "test", "below")
    out = {"measure": MEASURE, "test_means": {a: mean(values[a]) for a in (*ARMS, "bm25")},
           "test_per_seed": {a: {str(s): v for s, v in values[a].items()} for a in ARMS},
           "H1": asdict(h1), "H2": choice["H2"], "H1_dev": choice["H1_dev"], "H3": asdict(h3),
           "stability": run_stability(repo)}
    (study / "verdicts.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


MEASURES = ("nDCG@10", "RR@10", "R@100", "R@1000")
BEGIN, END = "<!-- analysis: begin -->", "<!-- analysis: end -->"


def _rows_table(table: Path, label: str) -> list[str]:
    """The committed table's rows of the study (every measure, as committed), under a backed-by comment."""
    rows = {r["system"]: r for r in _json(table / "table.json")}
    out = [f"<!-- backed-by: {label} -->", "| run | " + " | ".join(MEASURES) + " |",
           "|---|" + "---|" * len(MEASURES)]
    for name in ["bm25", *(run_name(a, s) for a in ARMS for s in SEEDS)]:
        out.append(f"| {name} | " + " | ".join(f"{rows[name][m]:.4f}" for m in MEASURES) + " |")
    return out


def part_times(repo: Path, study: Path) -> dict[str, dict[str, float]]:
    """Each run's committed wall times: training (and its mean step), the dev search (encoding, index, search,
    evaluation) and the test search (the encoding and index reused)."""
    out = {}
    for a in ARMS:
        for s in SEEDS:
            name = run_name(a, s)
            train = _json(repo / "results" / "train" / name / "manifest.json")["timings"]
            dev, test = (_json(study / "runs" / name / split / "manifest.json")["throughput"]["total_seconds"]
                         for split in ("dev", "test"))
            out[name] = {"train_s": train["elapsed_s"], "step_s": train["mean_step_s"], "dev_s": dev, "test_s": test}
    return out


def render(verdicts_: dict, times: dict[str, dict[str, float]], dev_label: str, test_label: str,
           dev: Path, test: Path) -> str:
    """The results document's block: verdicts, arm means, per-seed tables, stability and wall times."""
    lines = [BEGIN, "", "**Verdicts** (nDCG@10, treatment minus baseline, paired by seed; 95% t interval over 3 "
             "seeds):", ""]
    for key in ("H1", "H3"):
        lines.append(f"- {_line(verdicts_[key])}")
    h2 = verdicts_["H2"]
    lines.append(f"- H2: inspect-head's suggested k {h2['suggested_k']}, best k on dev {h2['best_k_on_dev']} -> "
                 f"{h2['verdict']}" + (f"; {_line(h2['difference'])}" if "difference" in h2 else ""))
    lines.append(f"- Beside H1, on dev (biased up by the choice): {_line(verdicts_['H1_dev'])}")
    lines += ["", "**Arm means over the three seeds** (nDCG@10; the dev choice reads the dev column only):", "",
              "| arm | dev | test |", "|---|---|---|"]
    dev_means = per_seed(dev)
    for a in (*ARMS, "bm25"):
        lines.append(f"| {a} | {mean(dev_means[a]):.4f} | {verdicts_['test_means'][a]:.4f} |")
    lines += ["", "**Per run, NFCorpus dev** (`results/benchmarks/confirm-rescale-nfcorpus-dev`):", "",
              *_rows_table(dev, dev_label), "", "**Per run, NFCorpus test** (`results/benchmarks/"
              "confirm-rescale-nfcorpus-test`):", "", *_rows_table(test, test_label), "",
              "**Stability and wall time per run** (registered rule: diverged = a non-finite loss or the last 10 "
              "steps' mean ranking loss not below the first 10's; collapsed = the last mean within 5% of ln 16 = "
              "2.773; times from the committed manifests, two single-thread parts at a time):", "",
              "| run | first rank loss | last rank loss | flag | training s | mean step s | dev search s | "
              "test search s |", "|---|---|---|---|---|---|---|---|"]
    for name, st in verdicts_["stability"].items():
        flag = "diverged" if st["diverged"] else "collapsed" if st["collapsed"] else "ok"
        t = times[name]
        lines.append(f"| {name} | {st['first_rank']:.3f} | {st['last_rank']:.3f} | {flag} | {t['train_s']:.0f} | "
                     f"{t['step_s']:.2f} | {t['dev_s']:.0f} | {t['test_s']:.0f} |")
    total = sum(t["train_s"] + t["dev_s"] + t["test_s"] for t in times.values())
    steps = [t["step_s"] for t in times.values()]
    lines += ["", f"Summed over the 18 parts: {total / 3600:.2f} hours of one thread (two parts at a time); mean "
              f"step {math.fsum(steps) / len(steps):.2f} s, against the amendment's 5.0 s estimate.", "", END]
    return "\n".join(lines)


def _line(t: dict) -> str:
    diffs = ", ".join(f"{d:+.4f}" for d in t["diffs"].values())
    return (f"{t['name']} ({t['treatment']} - {t['baseline']}, {t['split']}): mean {t['mean']:+.4f}, 95% "
            f"[{t['low']:+.4f}, {t['high']:+.4f}] (half-width {t['half_width']:.4f}; per seed {diffs}; 80%-power "
            f"detectable {t['detectable']:.4f}) -> {t['verdict']}")


def _label(table: Path) -> str:
    """A benchmark folder as a backed-by comment names it (relative to ``results/``)."""
    parts = table.resolve().parts
    return "/".join(parts[parts.index("results") + 1:]) if "results" in parts else table.name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stage", choices=["choose", "ready-for-test", "test", "render"])
    p.add_argument("--study", type=Path, required=True)
    p.add_argument("--dev", type=Path, required=True)
    p.add_argument("--test", type=Path)
    p.add_argument("--repo", type=Path, default=Path("."))
    args = p.parse_args(argv)
    try:
        if args.stage == "choose":
            c = choose(args.study, args.dev, args.repo)
            print(f"dev choice: best compensated {c['best_compensated']}, best k {c['best_k_arm']}; "
                  f"H2 {c['H2']['verdict']} (suggested k {c['H2']['suggested_k']})")
            print(_line(c["H1_dev"]))
        elif args.stage == "ready-for-test":
            ready_for_test(args.study, args.dev)
            print("ready for the test table: 19 ok dev rows, the dev choice, 18 unread test runs")
        elif args.stage == "render":
            if args.test is None:
                raise StudyError("render: pass --test (the test table's folder)")
            v = _json(args.study / "verdicts.json")
            print(render(v, part_times(args.repo, args.study), _label(args.dev), _label(args.test), args.dev,
                         args.test))
        else:
            if args.test is None:
                raise StudyError("test: pass --test (the test table's folder)")
            v = verdicts(args.study, args.dev, args.test, args.repo)
            for key in ("H1", "H1_dev", "H3"):
                print(_line(v[key]))
            print(f"H2: suggested k {v['H2']['suggested_k']}, best k on dev {v['H2']['best_k_on_dev']} -> "
                  f"{v['H2']['verdict']}")
            flagged = {r: ("diverged" if s["diverged"] else "collapsed") for r, s in v["stability"].items()
                       if s["diverged"] or s["collapsed"]}
            print(f"stability: {len(flagged)} of 18 runs flagged" + (f" ({flagged})" if flagged else ""))
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
