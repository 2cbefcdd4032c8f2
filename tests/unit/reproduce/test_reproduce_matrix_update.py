"""``lsr-eval reproduce --all results/ --update``: the entries of the earlier matrix whose result is committed as it
was are kept with the machine and date that reproduced them, the others (new, or made again: another commit) are
rerun; the merged matrix lists both, by result name, and says which machine reproduced each."""

from __future__ import annotations

import json
from pathlib import Path

from lsr_eval.reproduce.compare import RowOutcome
from lsr_eval.reproduce.jobs import Job, Options
from lsr_eval.reproduce.matrix import MatrixEntry, kept_entries, to_json, to_markdown, write_matrix
from lsr_eval.reproduce.results import Result

OLD_MACHINE = {"summary": "Intel Xeon (AMX), 2 cores", "commit": "1" * 40, "versions": {"torch": "2.13.0"}}
NEW_MACHINE = {"summary": "AMD EPYC (avx512_bf16), 2 cores", "commit": "2" * 40, "versions": {"torch": "2.13.0"}}


def _result(name: str, commit: str) -> Result:
    return Result(Path("/nowhere") / name, {"commit": commit, "machine": {"cpu": "AMD EPYC"}}, name, None)


def _previous() -> dict:
    rows = [{"row": "scifact bm25", "status": "reproduced", "summary": "reproduced (50 values)"}]
    return {"machine": OLD_MACHINE, "date": "2026-12-01",
            "results": [{"result": name, "kind": "benchmark", "command": f"lsr-eval reproduce results/{name}",
                         "estimate_s": 121.0, "made_on": f"AMD EPYC, commit {commit[:7]}", "verdict": "1 reproduced",
                         "rows": rows}
                        for name, commit in (("benchmarks/a", "a" * 40), ("benchmarks/b", "b" * 40),
                                             ("benchmarks/gone", "c" * 40))]}


def test_kept_are_the_unchanged_results_and_the_rest_is_rerun():
    results = [_result("benchmarks/a", "a" * 40), _result("benchmarks/b", "d" * 40), _result("train/new", "e" * 40)]
    kept, rerun = kept_entries(_previous(), results)
    assert [k["result"] for k in kept] == ["benchmarks/a"]                  # b was made again; gone is not committed
    assert kept[0]["reproduced_on"] == OLD_MACHINE["summary"] and kept[0]["date"] == "2026-12-01" and kept[0]["kept"]
    assert [r.name for r in rerun] == ["benchmarks/b", "train/new"]


def test_an_entry_not_reproduced_on_every_row_is_rerun():
    previous = _previous()
    previous["results"][0]["rows"] = [{"row": "x", "status": "differs", "summary": "differs: nDCG@10 0.5 -> 0.4"}]
    kept, rerun = kept_entries(previous, [_result("benchmarks/a", "a" * 40)])
    assert kept == [] and [r.name for r in rerun] == ["benchmarks/a"]


def test_kept_entries_are_counted_on_the_same_machine_too():
    previous = {**_previous(), "machine": NEW_MACHINE}
    kept, _ = kept_entries(previous, [_result("benchmarks/a", "a" * 40)])
    md = to_markdown(to_json([], NEW_MACHINE, Options(), "lsr-eval reproduce --update", kept))
    assert "; 1 kept from an earlier matrix" in md


def test_the_merged_matrix_names_the_machine_of_each_entry(tmp_path):
    kept, rerun = kept_entries(_previous(), [_result("benchmarks/a", "a" * 40), _result("train/new", "e" * 40)])
    fresh = [MatrixEntry(rerun[0], Job("lsr-eval reproduce results/train/new", {}, kind="training"),
                         [RowOutcome("train/new", "dev", "could not run", "over --max-minutes 5")])]
    data = to_json(fresh, NEW_MACHINE, Options(), "lsr-eval reproduce --all results/ --update", kept)
    assert [e["result"] for e in data["results"]] == ["benchmarks/a", "train/new"]
    assert [e["reproduced_on"] for e in data["results"]] == [OLD_MACHINE["summary"], NEW_MACHINE["summary"]]
    md = to_markdown(data)
    assert "; 1 kept from an earlier matrix" in md
    assert "| benchmarks/a | benchmark | 1 | 1 reproduced |" in md and "Intel Xeon (AMX), 2 cores, 2026-12-01 |" in md
    assert "| train/new | dev | could not run: over --max-minutes 5 |" in md
    assert "- **Summary**: 2 results, 2 rows: 1 reproduced, 1 could not run" in md
    written = write_matrix(fresh, NEW_MACHINE, Options(), tmp_path / "m", "lsr-eval reproduce --update", kept)
    assert {p.name for p in written} == {"matrix.md", "matrix-section.html", "matrix.html", "matrix.json"}
    assert json.loads((tmp_path / "m" / "matrix.json").read_text())["results"] == data["results"]
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["counts"]["results"] == 2 and manifest["counts"]["kept"] == 1
    html = (tmp_path / "m" / "matrix-section.html").read_text()
    assert "<code>lsr-eval reproduce --update</code>" in html and "Intel Xeon (AMX), 2 cores, 2026-12-01" in html
