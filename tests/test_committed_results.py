"""The committed results agree with themselves: every benchmark table row equals the per-run files it was made from
(``table.csv`` = ``table.json`` = ``runs/<system>/<dataset>/metrics.json`` = that run's ``manifest.json``
metrics, efficiency columns = ``efficiency.json``), and the report tables regenerate byte for byte."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pandas as pd
import pytest

RESULTS = Path(__file__).resolve().parents[1] / "results"
BENCHMARKS = sorted(p.parent for p in (RESULTS / "benchmarks").glob("*/table.csv"))
#: pandas' ``to_json`` (as the benchmark calls it) keeps 10 decimals; table.csv keeps every digit.
JSON_DECIMALS = 10
#: The stage each kind of row's run manifest records.
STAGES = {"bm25": "bm25", "splade": "splade", "run": "run-file", "fusion": "fusion"}


def _same(a, b) -> bool:
    """Equal values, NaN/None/"" all meaning an empty cell."""
    empty = lambda v: v is None or v == "" or (isinstance(v, float) and math.isnan(v))  # noqa: E731
    if empty(a) or empty(b):
        return empty(a) and empty(b)
    return a == b


def _measure_columns(table: pd.DataFrame, manifest: dict) -> list[str]:
    """The measures the config names, or (a registry dataset without ``measures:``) the registry's own."""
    from lsr_eval.data.registry import BENCHMARKS

    datasets = manifest["config"]["datasets"]
    measures = {m for d in datasets for m in (d["measures"] or getattr(BENCHMARKS.get(d["spec"]), "measures", ()))}
    return [c for c in table.columns if c in measures]


MANIFESTS = sorted(RESULTS.rglob("manifest.json"))


def _in_history(commit: str) -> bool:
    repo = RESULTS.parent
    found = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True)
    if found.returncode == 0:
        return True
    shallow = subprocess.run(["git", "-C", str(repo), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True).stdout.strip() == "true"
    if shallow:
        pytest.skip(f"shallow clone: {commit} may lie beyond its history")
    return False


def test_every_committed_manifest_names_a_clean_commit_in_history():
    """A committed result is reproducible from a named commit or gone: no ``-dirty`` commit, none unknown."""
    assert MANIFESTS
    commits: dict[str, list[str]] = {}
    for path in MANIFESTS:
        commit = json.loads(path.read_text())["commit"]
        where = str(path.relative_to(RESULTS))
        assert isinstance(commit, str) and commit, f"{where}: no commit recorded"
        assert not commit.endswith("-dirty"), f"{where}: made by uncommitted code ({commit})"
        commits.setdefault(commit, []).append(where)
    missing = {c: places[:3] for c, places in commits.items() if not _in_history(c)}
    assert not missing, f"commits not in this repository's history: {missing}"


def test_there_are_committed_benchmarks():
    assert BENCHMARKS, f"no results/benchmarks/*/table.csv under {RESULTS}"


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.name)
def test_table_rows_equal_their_run_files(bench: Path):
    table = pd.read_csv(bench / "table.csv", keep_default_na=True)
    as_json = pd.DataFrame(json.loads((bench / "table.json").read_text()))
    manifest = json.loads((bench / "manifest.json").read_text())
    assert list(as_json.columns) == list(table.columns) and len(as_json) == len(table) == manifest["counts"]["rows"]
    for col in table.columns:
        for i, (a, b) in enumerate(zip(table[col], as_json[col])):
            numbers = isinstance(a, float) and isinstance(b, (int, float)) and not math.isnan(a)
            assert (abs(a - b) <= 0.5 * 10 ** -JSON_DECIMALS * (1 + 1e-6) if numbers else _same(a, b)), \
                f"{bench.name} row {i} column {col}: csv {a!r} != json {b!r}"
    kinds = {s["name"]: s["kind"] for s in manifest["config"]["systems"]}
    kinds.update({f["name"]: "fusion" for f in manifest["config"]["fusion"]})
    assert set(table["system"]) <= set(kinds), "table systems not in the benchmark config"
    measures = _measure_columns(table, manifest)
    assert measures
    checked = 0
    for row in table.to_dict("records"):
        run = bench / "runs" / row["system"] / row["dataset"]
        if row["status"] != "ok":
            continue
        metrics = json.loads((run / "metrics.json").read_text())
        run_manifest = json.loads((run / "manifest.json").read_text())
        where = f"{bench.name}: {row['system']} on {row['dataset']}"
        assert run_manifest["stage"] == STAGES[kinds[row["system"]]], where
        assert run_manifest["metrics"] == metrics, f"{where}: manifest metrics != metrics.json"
        assert set(metrics) == {m for m in measures if not _same(row[m], None)}, where
        for m in metrics:
            assert row[m] == metrics[m], f"{where}: table {m} {row[m]!r} != metrics.json {metrics[m]!r}"
            checked += 1
        if (run / "efficiency.json").exists():
            eff = json.loads((run / "efficiency.json").read_text())
            total = eff["latency"]["latency_ms"]["total"]
            assert (row["flops"], row["avg_d_dims"], row["avg_q_dims"]) == (
                eff["flops"]["expected_flops"], eff["flops"]["documents"]["avg_active_dims"],
                eff["flops"]["queries"]["avg_active_dims"]), where
            assert (row["latency_mean_ms"], row["latency_p50_ms"], row["latency_p99_ms"]) == (
                total["mean_ms"], total["p50_ms"], total["p99_ms"]), where
    assert checked


def test_single_runs_agree_with_their_manifest():
    """Result folders holding one run (``metrics.json`` + ``manifest.json``) outside the benchmarks."""
    singles = [p.parent for p in RESULTS.glob("*/metrics.json")]
    for folder in singles:
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["metrics"] == json.loads((folder / "metrics.json").read_text()), folder


def test_report_tables_regenerate_byte_for_byte(tmp_path: Path):
    from lsr_eval.report.build import write_report

    committed = RESULTS / "report" / "tables"
    if not committed.is_dir():
        pytest.skip("no committed report")
    files = write_report(RESULTS, tmp_path / "report")
    made = tmp_path / "report" / "tables"
    assert sorted(p.name for p in made.iterdir()) == sorted(p.name for p in committed.iterdir())
    for p in sorted(committed.iterdir()):
        assert (made / p.name).read_bytes() == p.read_bytes(), f"{p} differs from a regenerated report"
    assert files.manifest is not None


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.name)
def test_significance_markers_follow_their_p_values(bench: Path):
    """``↓``/``†`` exactly where the corrected p-value is below alpha, by the sign of the difference from the
    baseline's row on the same dataset (the p-values themselves: tests/test_benchmark_significance.py)."""
    manifest = json.loads((bench / "manifest.json").read_text())
    sig = manifest["config"].get("significance")
    if not sig:
        pytest.skip("no significance in this benchmark")
    table = pd.read_csv(bench / "table.csv", keep_default_na=False)
    baselines = sig["baseline"] if isinstance(sig["baseline"], list) else [sig["baseline"]]
    columns = [(c, c[: -len("_sig")], "_p", baselines[0]) for c in table.columns if c.endswith("_sig")]
    if len(baselines) > 1:  # each baseline's own columns: <measure>_sig_vs_<baseline>, <measure>_p_vs_<baseline>
        columns += [(c, c[: -len(f"_sig_vs_{b}")], f"_p_vs_{b}", b) for b in baselines for c in table.columns
                    if c.endswith(f"_sig_vs_{b}")]
    assert columns
    for col, measure, p_suffix, baseline in columns:
        for row in table.to_dict("records"):
            if row[f"{measure}{p_suffix}"] == "":
                assert row[col] == "" and (row["system"] == baseline or row["status"] != "ok"), row
                continue
            base = table[(table["dataset"] == row["dataset"]) & (table["system"] == baseline)].iloc[0]
            p, diff = float(row[f"{measure}{p_suffix}"]), float(row[measure]) - float(base[measure])
            assert row[col] == ("" if not p < sig["alpha"] else "†" if diff > 0 else "↓"), (row["system"], measure)
