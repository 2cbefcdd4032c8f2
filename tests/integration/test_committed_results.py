"""The committed results agree with themselves: every benchmark table row equals the per-run files it was made from
(``table.csv`` = ``table.json`` = ``runs/<system>/<dataset>/metrics.json`` = that run's ``manifest.json``
metrics, efficiency columns = ``efficiency.json``), the report tables regenerate byte for byte, every other result
folder's summaries are what the library makes from the raw files beside them, and a folder named after its
hardware (``*-cpu-avx2``) has that hardware in its manifest."""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from studies.bf16_fidelity import summary as bf16_fidelity
from studies.command_speed import summary as command_speed
from studies.encode_speed import summary as encode_speed
from studies.exact_engines import summary as exact_engines
from studies.gpu_check import summary as gpu_check
from studies.long_queries import summary as long_queries
from studies.pyserini_parity import summary as pyserini_parity
from studies.query_encoder import summary as query_encoder_speed
from studies.query_filter_bounds import summary as query_filter_bounds
from studies.query_path import summary as query_path
from studies.scale_curve import curve as scale_curve
from studies.scale_curve import summary as scale
from studies.train_step import summary as train_step
from studies.vector_check import summary as vector_check

RESULTS = Path(__file__).resolve().parents[2] / "results"
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
            # JSON's 10 decimals, plus the spacing of doubles there (2.9e5 is already 5.8e-11 wide)
            tolerance = 0.5 * 10 ** -JSON_DECIMALS * (1 + 1e-6) + (2 * math.ulp(a) if numbers else 0)
            assert (abs(a - b) <= tolerance if numbers else _same(a, b)), \
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
    """Result folders holding one run (``metrics.json`` + ``manifest.json``) outside the benchmarks: single runs
    and the dev evaluations of training (``train/*/dev-*``)."""
    singles = [p.parent for p in RESULTS.rglob("metrics.json") if "benchmarks" not in p.relative_to(RESULTS).parts]
    assert singles
    for folder in singles:
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["metrics"] == json.loads((folder / "metrics.json").read_text()), folder


def test_report_tables_regenerate_byte_for_byte(tmp_path: Path):
    from lsr_eval.report.build import write_report

    committed = RESULTS / "report" / "tables"
    if not committed.is_dir():
        pytest.skip("no committed report")
    files = write_report(RESULTS, tmp_path / "report", figures=False)  # the tables are compared, not the figures
    made = tmp_path / "report" / "tables"
    assert sorted(p.name for p in made.iterdir()) == sorted(p.name for p in committed.iterdir())
    for p in sorted(committed.iterdir()):
        assert (made / p.name).read_bytes() == p.read_bytes(), f"{p} differs from a regenerated report"
    assert files.manifest is not None and files.figures == [] and not (tmp_path / "report" / "plots").exists()


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.name)
def test_significance_markers_follow_their_p_values(bench: Path):
    """``↓``/``†`` exactly where the corrected p-value is below alpha, by the sign of the difference from the
    baseline's row on the same dataset (the p-values themselves: tests/integration/test_benchmark_significance.py)."""
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


# ---- every other committed result folder: its summaries are the library's, made from the raw files beside them ----

#: results folder (a pattern under results/, ``*`` within one path part) -> (the stage its manifest records, the
#: pipelines/ script its manifest's command names, or for a studies/<name>/run.py the study's name)
SUMMARIES = {
    "bf16-fidelity": ("bench-bf16-fidelity", "bench_bf16_fidelity"),
    "commands": ("bench-commands", "bench_commands"),
    "encode*": ("bench-encode", "bench_encode"),
    "exact-engines": ("check-exact-engines", "check_exact_engines"),
    "gpu-check": ("gpu-check", "gpu_check"),
    "long-queries": ("bench-long-queries", "bench_long_queries"),
    "parity-pyserini": ("parity-pyserini", "parity_pyserini"),
    "query-encoder*": ("bench-query-encoder", "bench_query_encoder"),
    "query-filter-bounds": ("bench-query-filter-bounds", "bench_query_filter_bounds"),
    "query-path/*": ("bench-query-path", "bench_query_path"),
    "scale": ("bench-scale", "bench_scale"),
    "train-step*": ("bench-train-step", "bench_train_step"),
    "vector-check": ("bench-vector-check", "vector_check"),
}
#: pipelines/ script -> the library function that makes each summary file of its results folder (summary.md,
#: table.csv, ...) again from the raw files beside it
SCRIPT_SUMMARIES = {
    "bench_bf16_fidelity": bf16_fidelity.summaries,
    "bench_commands": command_speed.summaries,
    "bench_encode": encode_speed.summaries,
    "check_exact_engines": exact_engines.summaries,
    "gpu_check": gpu_check.summaries,
    "bench_long_queries": long_queries.summaries,
    "parity_pyserini": pyserini_parity.summaries,
    "bench_query_encoder": query_encoder_speed.summaries,
    "bench_query_filter_bounds": query_filter_bounds.summaries,
    "bench_query_path": query_path.summaries,
    "bench_scale": scale.summaries,
    "bench_train_step": train_step.summaries,
    "vector_check": vector_check.summaries,
}
#: folders with a manifest checked by the tests above: benchmark tables and their runs, the report, single runs
#: (metrics.json = the manifest's metrics) and training logs with their dev evaluations; a study's per-run searches
#: (an evaluated dev run is a single run; an unevaluated test run: tests/unit/test_confirm_rescale_study.py)
CHECKED_ABOVE = ("benchmarks/*", "benchmarks/*/runs/*/*", "report", "reproduce", "splade-scifact-minilm-random-head",
                 "train/*", "train/*/dev-*", "train/*/dev", "train/*/heldout",
                 "train/*/inspect-head/*",  # the last two: also tests/unit/test_rescale_mlm_study.py
                 "studies/*/runs/*/dev", "studies/*/runs/*/test",
                 # the rescaling study's exploratory controls: tests/unit/test_confirm_rescale_controls.py
                 "studies/confirm-rescale-nfcorpus-controls/step0/*/dev",
                 "studies/confirm-rescale-nfcorpus-controls/step0/*/test",
                 "studies/confirm-rescale-nfcorpus-controls/long/*/*/dev",
                 "studies/msmarco-scale-generator",  # tests/unit/test_msmarco_scale_generator.py
                 "studies/msmarco-scale-memory",
                 "studies/msmarco-scale-8.8m",  # the last two: tests/unit/test_msmarco_scale_memory.py
                 "studies/pisa-timing",  # tests/unit/test_pisa_timing_study.py
                 "studies/msmarco-scale-duplication",  # tests/unit/test_msmarco_scale_duplication.py
                 "studies/msmarco-scale-engines",  # tests/unit/test_msmarco_scale_engines.py
                 "studies/msmarco-scale-8.8m-engines")  # tests/unit/test_msmarco_scale_8_8m_engines.py
#: folders named after their hardware: suffix -> (CPU flags the manifest must record, flags it must not)
HARDWARE_NAMES = {"-cpu-avx2": ({"avx2"}, {"avx512_bf16", "amx_bf16"})}


def _matches(rel: str, pattern: str) -> bool:
    return re.fullmatch(re.escape(pattern).replace(r"\*", "[^/]*"), rel) is not None


def _folders(patterns) -> list[Path]:
    return sorted(p.parent for p in MANIFESTS
                  if any(_matches(p.parent.relative_to(RESULTS).as_posix(), pat) for pat in patterns))


def test_every_result_folder_is_checked():
    """A folder with a manifest is either in :data:`SUMMARIES` (the library rebuilds its summaries) or checked by the
    tests above: a new kind of result needs a registry entry."""
    unknown = [str(p.parent.relative_to(RESULTS)) for p in MANIFESTS
               if not any(_matches(p.parent.relative_to(RESULTS).as_posix(), pat)
                          for pat in (*SUMMARIES, *CHECKED_ABOVE))]
    assert not unknown, f"results folders no test checks (add them to SUMMARIES): {unknown}"


@pytest.mark.parametrize("folder", _folders(SUMMARIES), ids=lambda p: str(p.relative_to(RESULTS)))
def test_summaries_equal_what_the_library_makes_from_the_raw_files(folder: Path):
    rel = folder.relative_to(RESULTS).as_posix()
    stage, script = next(v for pat, v in SUMMARIES.items() if _matches(rel, pat))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["stage"] == stage, f"{rel}: made by {manifest['stage']}, not {script}"
    made_by = Path(manifest["command"][0])
    assert (made_by.parent.name if made_by.stem == "run" else made_by.stem) == script, \
        f"{rel}: made by {manifest['command'][0]}, not {script}"
    made = SCRIPT_SUMMARIES[script](folder)
    assert made and set(made) <= set(manifest["outputs"]) | {"summary.md"}, (rel, sorted(made))
    for name, text in made.items():
        committed = (folder / name).read_bytes()
        assert committed == text.encode("utf-8"), f"{rel}/{name} differs from what {script}'s summaries make"


@pytest.mark.parametrize("folder", [p.parent for p in MANIFESTS if any(p.parent.name.endswith(s)
                                                                          for s in HARDWARE_NAMES)],
                         ids=lambda p: str(p.relative_to(RESULTS)))
def test_hardware_in_a_folder_name_is_in_its_manifest(folder: Path):
    """``*-cpu-avx2`` says the figures come from an AVX2 CPU without native bf16: the manifest's machine must say
    so (its recorded CPU flags), not only the name."""
    from lsr_eval.hardware import CPU_BF16_FLAGS

    need, exclude = next(v for s, v in HARDWARE_NAMES.items() if folder.name.endswith(s))
    machine = json.loads((folder / "manifest.json").read_text())["machine"]
    assert "cpu_flags" in machine, f"{folder.name}: the manifest records no CPU flags (made before they were)"
    flags = set(machine["cpu_flags"])
    assert need <= flags and not flags & exclude, (folder.name, sorted(flags))
    assert machine["cpu_bf16_native"] is bool(flags & set(CPU_BF16_FLAGS))


def test_scale_note_agrees_with_its_manifest():
    """results/scale/NOTE.md states the command, commit, duration and that nothing was skipped: each as the
    manifest and results.json record it."""
    folder = RESULTS / "scale"
    if not (folder / "NOTE.md").exists():
        pytest.skip("no results/scale/NOTE.md")
    note = (folder / "NOTE.md").read_text()
    manifest = json.loads((folder / "manifest.json").read_text())
    results = json.loads((folder / "results.json").read_text())
    command = re.search(r"`(python pipelines/bench_scale\.py[^`]*)`", note).group(1).split()
    parse = scale_curve.parse_args
    stated, ran = vars(parse(command[2:])), vars(parse(manifest["command"][1:]))
    for where in ("out", "work_dir"):   # where it wrote may differ (a clean worktree), not what it measured
        stated.pop(where), ran.pop(where)
    assert stated == ran, command
    assert manifest["commit"].startswith(re.search(r"from clean commit ([0-9a-f]{7,})", note).group(1))
    assert manifest["created"].startswith(re.search(r"on (\d{4}-\d{2}-\d{2})", note).group(1))
    minutes = int(re.search(r"in (\d+)\s+minutes", note).group(1))
    assert minutes == round(results["seconds"] / 60), (minutes, results["seconds"])
    if "nothing skipped" in note:
        assert manifest["skipped"] == [] and results["skipped"] == [] and not manifest["experiment"]["reuse_runs"]


def test_the_committed_regression_matrix_lists_every_result_with_status_and_command():
    """results/reproduce (``make reproduce MATRIX=results/reproduce``) names every committed result but itself, each
    with a command and a verdict per row, and its Markdown gives each result's line."""
    from lsr_eval.reproduce.results import find_results, load_result

    folder = RESULTS / "reproduce"
    if not (folder / "matrix.json").is_file():
        pytest.skip("no committed matrix")
    matrix = json.loads((folder / "matrix.json").read_text(encoding="utf-8"))
    listed = {r["result"]: r for r in matrix["results"]}
    names = {load_result(f).name for f in find_results(RESULTS)} - {"reproduce"}
    assert names <= set(listed), f"committed results missing from the matrix: {sorted(names - set(listed))}"
    markdown = (folder / "matrix.md").read_text(encoding="utf-8")
    for name in names:
        entry = listed[name]
        assert entry["command"] and entry["rows"] and all(r["status"] for r in entry["rows"]), name
        assert f"| {name} | " in markdown, name
