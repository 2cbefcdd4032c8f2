"""The Python API at the package root: ``import lsr_eval`` stays light, each verb gives what the stage functions
and commands give (on the tiny BEIR fixture with splade-tiny, Anserini and PISA), BM25 on SciFact reproduces the
committed benchmark, and the snippet of docs/api.md runs as written."""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REPO, quickstart_config, shared_path, splade_tiny_dir

HEAVY = ("torch", "jnius", "ranx", "pandas", "numba", "transformers")


def test_import_lsr_eval_imports_nothing_heavy():
    code = ("import sys, lsr_eval; names = lsr_eval.__all__; lsr_eval.evaluate; lsr_eval.Index; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    assert out.strip() == "[]"


def test_api_names_resolve_and_are_documented():
    import lsr_eval

    for name in lsr_eval.__all__:
        value = getattr(lsr_eval, name)
        assert name == "__version__" or (value.__doc__ and value.__doc__.strip()), name
    with pytest.raises(AttributeError):
        lsr_eval.no_such_verb


def test_no_module_of_the_package_imports_the_root_api():
    """The root's API names come from the top layer: a stage importing them would import every stage."""
    import lsr_eval

    api = set(lsr_eval.__all__) - {"__version__"}
    found = []
    for path in (REPO / "lsr_eval").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "lsr_eval" and not node.level:
                found += [f"{path.relative_to(REPO)}:{node.lineno}" for a in node.names if a.name in api]
    assert found == []


@pytest.mark.slow
def test_tiny_end_to_end_equals_the_stage_functions(tiny_beir, tmp_path):
    import lsr_eval
    from lsr_eval.evaluation import evaluate
    from lsr_eval.fusion import fuse
    from lsr_eval.pipeline.splade import SpladeSettings, run_splade

    model = str(splade_tiny_dir())
    ds = lsr_eval.load_dataset(str(tiny_beir))
    bm25 = lsr_eval.bm25(ds, work=tmp_path / "work")
    assert sorted(bm25) == ["q1", "q2", "q3"] and "q2" not in bm25["q2"]  # BEIR: the query's own id removed
    written = lsr_eval.bm25(ds, out=tmp_path / "bm25", work=tmp_path / "work")
    assert written == bm25 and (tmp_path / "bm25" / "manifest.json").is_file()

    enc = lsr_eval.Splade(model, work=tmp_path / "work")
    docs, queries = enc.encode(ds), enc.encode_queries(ds)
    assert docs.ids == ["d1", "d2", "d3", "d4", "q2"] and queries.ids == ["q1", "q2", "q3"]
    runs = {}
    for engine in ("pisa", "anserini"):  # the encoding's vectors: indexed into the work folder's caches
        with lsr_eval.Index.build(docs, engine=engine, work=tmp_path / "work") as index:
            runs[engine] = index.search(queries, k=10, remove_query=True)
    assert runs["pisa"] == runs["anserini"]  # two exact engines, one ranking
    with lsr_eval.Index.build(replace(docs, source=None), engine="anserini", work=tmp_path / "work") as index:
        assert index.search(queries, k=10, remove_query=True) == runs["anserini"]  # a temporary index, the same run
    assert not (tmp_path / "work" / "api").exists()  # the temporary folder is gone
    chain = run_splade(ds, tmp_path / "splade", tmp_path / "work", SpladeSettings.from_flat(model=model, hits=10))
    assert runs["anserini"] == chain.run  # the API's chain is the experiment's
    # ... and its encoding is the experiment's cache entry, reused there
    manifest = json.loads((tmp_path / "splade" / "manifest.json").read_text(encoding="utf-8"))
    assert Path(manifest["paths"]["encoding"]).name == enc.last_encoding.folder.name
    # Splade.run is that chain (the command line's lsr-eval splade calls it): in memory it keeps no folder
    in_memory = lsr_eval.Splade(model, search=lsr_eval.SearchOptions(hits=10), work=tmp_path / "work").run(
        tiny_beir)   # a dataset's folder (a Path) as well as a dataset
    assert in_memory.folder is None and in_memory.run == chain.run and in_memory.metrics == chain.metrics
    assert not any((tmp_path / "work" / "api").iterdir())
    from lsr_eval.cli import main

    assert main(["splade", model, str(tiny_beir), "--hits", "10", "--out", str(tmp_path / "cli"),
                 "--work-dir", str(tmp_path / "work")]) == 0
    cli = json.loads((tmp_path / "cli" / "manifest.json").read_text(encoding="utf-8"))
    assert cli["experiment"] == manifest["experiment"] and cli["metrics"] == manifest["metrics"]

    fused = lsr_eval.fuse([bm25, chain.run], "rrf")
    assert fused == fuse([bm25, chain.run], "rrf", depth=1000).run
    table = lsr_eval.evaluate(ds, {"bm25": bm25, "splade": chain.run, "rrf": fused}, baseline="bm25")
    assert list(table.index) == ["bm25", "splade", "rrf"]
    for name, run in (("bm25", bm25), ("splade", chain.run), ("rrf", fused)):
        expected = evaluate(ds.qrels(), run, ds.measures)
        assert table.loc[name, list(expected)].tolist() == list(expected.values())
    assert table.loc["bm25", "nDCG@10_sig"] == "" and table.attrs["baseline"] == "bm25"
    assert set(table.loc[["splade", "rrf"], "nDCG@10_sig"]) <= {"", "†", "↓"}


def _committed_bm25_scifact() -> dict[str, float]:
    with open(REPO / "results" / "benchmarks" / "bm25-beir" / "table.csv", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["dataset"] == "scifact" and r["system"] == "bm25")
    return {m: float(row[m]) for m in ("nDCG@10", "R@100")}


@pytest.mark.slow
def test_bm25_scifact_equals_the_committed_benchmark(tmp_path):
    import lsr_eval

    ds = lsr_eval.load_dataset(str(shared_path("beir", "scifact")))
    table = lsr_eval.evaluate(ds, {"bm25": lsr_eval.bm25(ds, work=tmp_path)}, measures=["nDCG@10", "R@100"])
    committed = _committed_bm25_scifact()
    assert table.loc["bm25"].to_dict() == pytest.approx(committed, abs=1e-9)


def snippet(doc: Path = REPO / "docs" / "api.md") -> str:
    """The first fenced Python block of ``doc``."""
    match = re.search(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    assert match, f"{doc} holds no python block"
    return match.group(1)


def test_the_readme_shows_the_snippet_that_runs_here():
    assert snippet(REPO / "README.md") == snippet()


def test_snippet_is_short_and_uses_the_root_api():
    code = snippet()
    assert 10 <= len(code.strip().splitlines()) <= 15
    assert "import lsr_eval\n" in code and "lsr_eval." in code


@pytest.mark.slow
def test_docs_api_snippet_runs_as_written(scifact_impact, monkeypatch, capsys, caplog):
    """The snippet's splade-tiny has the quickstart's settings: its encoding is the session's SciFact encoding
    (reused from the work folder, as a user's second run reuses the first's), and its row is the quickstart's."""
    monkeypatch.chdir(REPO)  # the snippet's ../shared/data is relative to the checkout
    monkeypatch.setenv("LSR_EVAL_WORK", str(scifact_impact.work))
    namespace: dict = {}
    with caplog.at_level("INFO", logger="lsr_eval"):
        exec(compile(snippet(), "docs/api.md", "exec"), namespace)
    assert "reused encoding" in caplog.text
    table = namespace["table"]
    assert list(table.index) == ["bm25", "splade-tiny", "rrf"]
    assert table.loc["bm25", "nDCG@10"] == pytest.approx(_committed_bm25_scifact()["nDCG@10"], abs=1e-9)
    assert table.loc["splade-tiny", "nDCG@10"] == pytest.approx(_committed_quickstart_splade_ndcg10(), abs=1e-9)
    assert "nDCG@10" in capsys.readouterr().out


def _committed_quickstart_splade_ndcg10() -> float:
    with open(REPO / quickstart_config()["out"] / "table.csv", encoding="utf-8") as f:
        return float(next(r for r in csv.DictReader(f) if r["system"] == "splade-tiny")["nDCG@10"])


def test_run_benchmark_table_equals_evaluate(tiny_beir, tmp_path):
    import yaml

    import lsr_eval
    from lsr_eval.runs.trec import write_run

    runs = {"a": {"q1": {"d1": 3.0, "d2": 1.0}, "q2": {"d2": 2.0, "d3": 1.0}, "q3": {"d4": 1.0, "d3": 0.5}},
            "b": {"q1": {"d4": 2.0, "d1": 1.0}, "q2": {"d1": 1.0}, "q3": {"d3": 4.0}}}
    for name, run in runs.items():
        write_run(run, tmp_path / f"{name}.trec", tag=name)
    cfg = {"name": "api-tiny", "out": str(tmp_path / "out"), "datasets": [{"spec": str(tiny_beir)}],
           "systems": [{"name": n, "kind": "run", "path": str(tmp_path / f"{n}.trec")} for n in runs],
           "fusion": [{"name": "rrf", "method": "rrf", "runs": ["a", "b"]}]}
    (tmp_path / "bench.yaml").write_text(yaml.safe_dump(cfg))
    table = lsr_eval.run_benchmark(tmp_path / "bench.yaml", work=tmp_path / "work").set_index("system")
    ds = lsr_eval.load_dataset(str(tiny_beir))
    expected = lsr_eval.evaluate(ds, {**runs, "rrf": lsr_eval.fuse(list(runs.values()))})
    for system in ("a", "b", "rrf"):
        assert table.loc[system, list(expected.columns)].tolist() == expected.loc[system].tolist(), system
    assert (tmp_path / "out" / "table.csv").is_file()
