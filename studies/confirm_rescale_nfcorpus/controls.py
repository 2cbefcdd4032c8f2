"""Exploratory controls of the NFCorpus rescaling study (docs/studies/confirm-rescale-nfcorpus-controls.md).

  python studies/confirm_rescale_nfcorpus/controls.py step0 CONFIG --out MODEL_DIR
      the model an arm's training starts from (its head rescaled, its input divided or compensated), saved as a
      final model is, so that `lsr-eval splade` searches it like a trained one;
  python studies/confirm_rescale_nfcorpus/controls.py snapshot CONFIG CHECKPOINT --out MODEL_DIR
      the model of one training checkpoint (a point of the learning curve), saved the same way;
  python studies/confirm_rescale_nfcorpus/controls.py summary --controls DIR --study DIR --dev TABLE --test TABLE
      the controls' numbers beside the confirmatory study's, and the registered statements (summary.json, .md).

It imports lsr_eval and is never imported by it. The driver is pipelines/confirm_rescale_controls.sh.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ARMS = ("k1", "k2-compensated", "k4-compensated", "k8-compensated", "k16-compensated", "k2-divided")
LONG = ("k1", "k16-compensated")        # the two arms trained for 900 steps, seed 1
LONG_STEPS = 900
CURVE = tuple(range(100, LONG_STEPS + 1, 100))
MEASURE = "nDCG@10"
#: The registered yardstick for one-seed differences: the sd over the confirmatory study's three seeds of the paired
#: dev difference k16-compensated - k1 (+0.0562, +0.0413, +0.0461), from the committed dev table; a one-seed
#: difference "remains" above 2 sd, is "gone" within +-2 sd, "reversed" below -2 sd.
YARDSTICK_SDS = 2.0


def _model(config: str):
    """An arm's config (seed 1) and its model as training builds it at step 0."""
    import torch

    from lsr_eval.train.config import load_config
    from lsr_eval.train.recipe import build_model

    cfg = load_config(config, ["seeds=[1]"])
    torch.manual_seed(cfg.train.seed)
    model, reports = build_model(cfg.model, bf16=False)
    return cfg, model, reports


def save_step0(config: str, out: Path) -> None:
    from lsr_eval.train.trainer import reports_dict

    cfg, model, reports = _model(config)
    model.save_pretrained(out)
    (out / "init.json").write_text(json.dumps({"config": config, "init": reports_dict(reports)}, indent=2,
                                              default=str) + "\n", encoding="utf-8")
    print(f"{cfg.name}: step-0 model in {out}")


def save_snapshot(config: str, checkpoint: Path, out: Path) -> None:
    from lsr_eval.train.checkpoint import load_modules
    from lsr_eval.train.ranking import trained_modules

    if not (checkpoint / "model.pt").is_file():
        raise SystemExit(f"{checkpoint}: no checkpoint there (model.pt); train first (the driver's 'long' stage)")
    cfg, model, _ = _model(config)
    load_modules(checkpoint, trained_modules(model))
    model.save_pretrained(out)
    print(f"{cfg.name}: {checkpoint.name} saved as a model in {out}")


def _metric(folder: Path) -> float | None:
    path = folder / "metrics.json"
    return json.loads(path.read_text(encoding="utf-8"))[MEASURE] if path.exists() else None


def _table(folder: Path) -> dict[str, float]:
    """System -> nDCG@10 of a committed benchmark table (its table.csv)."""
    with open(folder / "table.csv", encoding="utf-8", newline="") as f:
        return {row["system"]: float(row[MEASURE]) for row in csv.DictReader(f) if row.get(MEASURE)}


def _verdict(diff: float | None, sd: float) -> str | None:
    if diff is None:
        return None
    if diff > YARDSTICK_SDS * sd:
        return "remains"
    return "reversed" if diff < -YARDSTICK_SDS * sd else "gone"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def summarise(controls: Path, dev_table: Path, test_table: Path) -> dict:
    """Every control's number beside the confirmatory study's, and the registered statements (None where a part
    has not run yet)."""
    import statistics

    dev, test = _table(dev_table), _table(test_table)
    trained = {split: {arm: _mean([t[f"confirm-nfcorpus-{arm}-s{s}"] for s in (1, 2, 3)]) for arm in ARMS}
               for split, t in (("dev", dev), ("test", test))}
    seed_diffs = [dev[f"confirm-nfcorpus-k16-compensated-s{s}"] - dev[f"confirm-nfcorpus-k1-s{s}"] for s in (1, 2, 3)]
    sd = statistics.stdev(seed_diffs)
    step0 = {split: {arm: _metric(controls / "step0" / arm / split) for arm in ARMS} for split in ("dev", "test")}
    out: dict = {"measure": MEASURE, "yardstick": {"seed_diffs_dev": seed_diffs, "sd": sd,
                                                   "threshold": YARDSTICK_SDS * sd},
                 "step0": {}, "long": {}}
    for split in ("dev", "test"):
        rows = {}
        for arm in ARMS:
            s0, tr = step0[split][arm], trained[split][arm]
            rows[arm] = {"step0": s0, "trained_90_mean": tr, "learned": None if s0 is None else tr - s0}
        gap0 = (None if None in (step0[split]["k16-compensated"], step0[split]["k1"])
                else step0[split]["k16-compensated"] - step0[split]["k1"])
        gap90 = trained[split]["k16-compensated"] - trained[split]["k1"]
        out["step0"][split] = {"arms": rows, "gap_step0": gap0, "gap_trained_90": gap90,
                               "share_at_step0": None if gap0 is None else gap0 / gap90,
                               "statement": _verdict(gap0, sd)}
    curve = {arm: {step: _metric(controls / "long" / arm / f"step-{step:04d}" / "dev") for step in CURVE}
             for arm in LONG}
    gaps = {step: (None if None in (curve["k16-compensated"][step], curve["k1"][step])
                   else curve["k16-compensated"][step] - curve["k1"][step]) for step in CURVE}
    at90 = {arm: dev[f"confirm-nfcorpus-{arm}-s1"] for arm in LONG}
    out["long"] = {"curve": curve, "gap": gaps, "seed1_at_90": at90,
                   "gap_at_90_seed1": at90["k16-compensated"] - at90["k1"],
                   "gap_at_900": gaps[LONG_STEPS], "statement": _verdict(gaps[LONG_STEPS], sd),
                   "k1_learned": None if curve["k1"][LONG_STEPS] is None
                   else curve["k1"][LONG_STEPS] - at90["k1"]}
    return out


def _f(x: float | None, signed: bool = False) -> str:
    return "not run yet" if x is None else (f"{x:+.4f}" if signed else f"{x:.4f}")


def render(summary: dict) -> str:
    """The summary as the results page shows it."""
    y = summary["yardstick"]
    lines = [f"Yardstick for one-seed differences: 2 sd of the confirmatory paired dev difference k16 - k1 over its "
             f"three seeds = {y['threshold']:.4f} (sd {y['sd']:.4f}).", "",
             "**Step 0** (nDCG@10; trained = mean of the three 90-step seeds):", "",
             "| arm | dev step 0 | dev trained | test step 0 | test trained |", "|---|---|---|---|---|"]
    for arm in ARMS:
        d, t = summary["step0"]["dev"]["arms"][arm], summary["step0"]["test"]["arms"][arm]
        lines.append(f"| {arm} | {_f(d['step0'])} | {_f(d['trained_90_mean'])} | {_f(t['step0'])} | "
                     f"{_f(t['trained_90_mean'])} |")
    lines.append("")
    for split in ("dev", "test"):
        s = summary["step0"][split]
        share = "" if s["share_at_step0"] is None else f" ({s['share_at_step0']:.0%} of the trained gap)"
        lines.append(f"- {split}: k16 - k1 at step 0 {_f(s['gap_step0'], True)}{share}, after 90 steps "
                     f"{_f(s['gap_trained_90'], True)}: the advantage at step 0 {s['statement'] or 'not run yet'}.")
    long = summary["long"]
    lines += ["", "**900 steps, seed 1, dev** (nDCG@10 every 100 steps; 90 = the confirmatory seed-1 run):", "",
              "| step | k1 | k16-compensated | k16 - k1 |", "|---|---|---|---|",
              f"| 90 | {_f(long['seed1_at_90']['k1'])} | {_f(long['seed1_at_90']['k16-compensated'])} | "
              f"{_f(long['gap_at_90_seed1'], True)} |"]
    for step in CURVE:
        lines.append(f"| {step} | {_f(long['curve']['k1'][step])} | {_f(long['curve']['k16-compensated'][step])} | "
                     f"{_f(long['gap'][step], True)} |")
    lines += ["", f"- k16 - k1 at 900 steps {_f(long['gap_at_900'], True)} (seed 1 at 90: "
              f"{_f(long['gap_at_90_seed1'], True)}): the advantage {long['statement'] or 'not run yet'}; k = 1 "
              f"gained {_f(long['k1_learned'], True)} from 90 to 900 steps."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s0 = sub.add_parser("step0")
    s0.add_argument("config")
    s0.add_argument("--out", type=Path, required=True)
    sn = sub.add_parser("snapshot")
    sn.add_argument("config")
    sn.add_argument("checkpoint", type=Path)
    sn.add_argument("--out", type=Path, required=True)
    sm = sub.add_parser("summary")
    sm.add_argument("--controls", type=Path, required=True)
    sm.add_argument("--dev", type=Path, required=True)
    sm.add_argument("--test", type=Path, required=True)
    args = p.parse_args(argv)
    if args.cmd == "step0":
        save_step0(args.config, args.out)
    elif args.cmd == "snapshot":
        save_snapshot(args.config, args.checkpoint, args.out)
    else:
        summary = summarise(args.controls, args.dev, args.test)
        (args.controls / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        (args.controls / "summary.md").write_text(render(summary), encoding="utf-8")
        print(render(summary), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
