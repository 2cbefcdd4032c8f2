"""Systems that differ only in their training seed, aggregated: one row per arm (mean, sd, 95% t interval over
seeds: :func:`lsr_eval.significance.seed_summary`) with its per-seed rows below it, and a figure of the intervals.

A system's seed is read from its name: ``<arm>-s<seed>``, the name ``lsr-eval train`` gives each run of a config
with ``seeds:`` (:func:`lsr_eval.train.config.seed_suffix`); systems with the same ``<arm>`` on the same dataset
are one arm. When the row is linked to a training run (:func:`lsr_eval.report.linking.link_training`), the run's
manifest must record that seed (``train.seed``); a row whose manifest says otherwise is left out and said so. An arm
needs two seeds with a value to be aggregated; rows that are not ok or have no value are counted in the notes.
"""

from __future__ import annotations

import math
from typing import Mapping

import pandas as pd

from lsr_eval.report.formatting import NumberFormat
from lsr_eval.report.loading import TrainingRun
from lsr_eval.report.table import Table
from lsr_eval.train.config import seed_of, seed_suffix

__all__ = ["seed_arms", "seed_of", "seeds_figure", "seeds_table"]
SEED_COLUMNS = ("mean", "sd", "95% low", "95% high")


def _manifest_seed(run: TrainingRun | None) -> int | None:
    config = ((run.manifest or {}).get("config") or {}) if run is not None else {}
    seed = (config.get("train") or {}).get("seed") if isinstance(config, dict) else None
    return seed if isinstance(seed, int) else None


def seed_arms(frame: pd.DataFrame, dataset: str, measure: str,
              runs: Mapping[str, TrainingRun] | None = None) -> tuple[dict[str, dict[int, float]], list[str]]:
    """``{arm: {seed: value}}`` of ``measure`` on ``dataset`` for arms with at least two seeds (in row order),
    and notes on every seeded row left out (not ok, no value, a manifest of another seed, a lone seed)."""
    arms: dict[str, dict[int, float]] = {}
    notes: list[str] = []
    for _, row in frame[frame["dataset"] == dataset].iterrows():
        found = seed_of(str(row["system"]))
        if found is None:
            continue
        arm, seed = found
        linked = (runs or {}).get(str(row.get("run", "") or ""))
        recorded = _manifest_seed(linked)
        value = pd.to_numeric(row.get(measure, math.nan), errors="coerce")
        if recorded is not None and recorded != seed:
            notes.append(f"{row['system']}: its training manifest records seed {recorded}, not {seed}; left out")
        elif row.get("status", "ok") != "ok" or not math.isfinite(value):
            notes.append(f"{row['system']}: no {measure} ({row.get('status', 'ok')}); left out")
        else:
            arms.setdefault(arm, {})[seed] = float(value)
    for arm in [a for a, seeds in arms.items() if len(seeds) < 2]:
        notes.append(f"{arm}: one seed with a value ({', '.join(seed_suffix(s) for s in arms.pop(arm))}); not aggregated")
    return arms, notes


def seeds_table(frame: pd.DataFrame, dataset: str, measure: str, *, name: str,
                runs: Mapping[str, TrainingRun] | None = None, fmt: NumberFormat = NumberFormat()) -> Table | None:
    """The arms of ``dataset`` over seeds: per arm a row (mean, sd, 95% interval, seeds) and one row per seed
    (its value under ``mean``); None when no arm has two seeds."""
    from lsr_eval.significance import seed_summary

    arms, notes = seed_arms(frame, dataset, measure, runs)
    if not arms:
        return None
    labels: list[dict[str, str]] = []
    values: dict[str, list[float]] = {c: [] for c in SEED_COLUMNS}
    text: dict[str, list[str]] = {c: [] for c in SEED_COLUMNS}

    def add(system: str, seeds: str, cells: tuple[float, float, float, float]) -> None:
        labels.append({"dataset": dataset, "system": system, "seeds": seeds})
        for column, v in zip(SEED_COLUMNS, cells):
            shown = fmt.effectiveness_value(v) if not math.isnan(v) else math.nan
            values[column].append(shown)
            text[column].append(fmt.effectiveness(v) if not math.isnan(v) else "")

    for arm, by_seed in arms.items():
        s = seed_summary(list(by_seed.values()))
        add(arm, str(s.seeds), (s.mean, s.sd, s.low, s.high))
        for seed in sorted(by_seed):
            add(f"  {arm}{seed_suffix(seed)}", f"seed {seed}", (by_seed[seed], math.nan, math.nan, math.nan))
    notes = [f"{measure} ({fmt.effectiveness_unit}) over training seeds: per arm the mean, the sample sd and the "
             f"95% interval mean -+ t(0.975, n-1) sd / sqrt(n) (n seeds), its seeds' rows below it; a system's seed "
             f"is its name's -s<seed> suffix"] + notes
    from lsr_eval.report.tables import _table

    return _table(name, f"{measure} on {dataset} over training seeds", pd.DataFrame(labels), values, text, notes)


def seeds_figure(table: Table, title: str | None = None) -> "Figure":
    """Each arm's mean with its 95% interval (bar) and its seeds (dots), from :func:`seeds_table`."""
    from lsr_eval.report.plots import _figure

    labels, values = table.labels, table.values
    groups: list[tuple[int, list[int]]] = []   # (arm row, its seed rows): the seed rows follow their arm's
    for i in labels.index:
        if labels.at[i, "system"].startswith(" "):
            groups[-1][1].append(i)
        else:
            groups.append((i, []))
    arms = [i for i, _ in groups]
    fig = _figure((8.0, 1.6 + 0.5 * len(arms)))
    ax = fig.add_subplot()
    for y, (i, seeds) in enumerate(groups):
        mean, low, high = values.at[i, "mean"], values.at[i, "95% low"], values.at[i, "95% high"]
        ax.errorbar([mean], [y], xerr=[[mean - low], [high - mean]], fmt="o", color="C0", capsize=4, zorder=3,
                    label="mean, 95% interval" if y == 0 else None)
        ax.scatter([values.at[j, "mean"] for j in seeds], [y] * len(seeds), s=18, color="0.4", marker="x",
                   zorder=4, label="one seed" if y == 0 else None)
    ax.set_yticks(range(len(arms)))
    ax.set_yticklabels([labels.at[i, "system"] for i in arms], fontsize=8)
    ax.invert_yaxis()
    measure_on = table.title.removesuffix(" over training seeds")
    ax.set_xlabel(measure_on)
    ax.set_title(title or f"{measure_on}: mean and 95% interval over seeds", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return fig
