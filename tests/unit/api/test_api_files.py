"""The stages on folders (lsr_eval.api.files) record what the commands recorded before them: a search without
engine options records ``engine_options: null`` (not ``{}``), so a folder written earlier is the same experiment."""

from __future__ import annotations

import json

from lsr_eval.api import files
from lsr_eval.export.queries import write_query_jsonl
from lsr_eval.search.counts import SearchCounts


class _Searcher:
    def __init__(self) -> None:
        self.opened_with: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def batch_search(self, maps, k, threads, remove_query):
        counts, run = SearchCounts(), {}
        for qid in maps:
            counts.add(qid, [("d1", 2.0), ("d2", 1.0)][:k], remove_query, run)
        return run, counts

    def describe(self) -> dict:
        return {"engine": "fake"}


class _Engine:
    def open(self, index, **knobs):
        return _Searcher()


def test_search_records_no_options_as_null_and_writes_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "configure", lambda name, options=None, max_clauses=None: (_Engine(), {}, {}))
    queries = tmp_path / "queries.jsonl"
    write_query_jsonl({"q1": {"a": 3}, "q2": {"b": 1}}, queries)
    done = files.search_folder(tmp_path / "index", queries, tmp_path / "run", hits=1, engine="pisa")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["experiment"]["engine"] == "pisa" and manifest["experiment"]["engine_options"] is None
    assert done.counts.queries == 2 and done.metrics == {} and done.run_file.read_text().count("\n") == 2
    again = files.search_folder(tmp_path / "index", queries, tmp_path / "run2", hits=1, engine="pisa",
                                options={"query_algorithm": "maxscore"})
    recorded = json.loads((tmp_path / "run2" / "manifest.json").read_text(encoding="utf-8"))
    assert recorded["experiment"]["engine_options"] == {"query_algorithm": "maxscore"} and again.counts.queries == 2
