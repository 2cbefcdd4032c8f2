"""The order ``make test`` hands test files out in (tests/scheduling.py), on hand-made items."""

from __future__ import annotations

import json

import scheduling


def _order(items: list[str], waits: set[str], durations: dict[str, float], workers: int = 1) -> list[str]:
    return scheduling.schedule(items, scheduling.file_of, lambda i: i in waits, durations, workers)


ITEMS = ["a.py::x", "a.py::enc", "b.py::t", "c.py::t1", "c.py::t2", "d.py::enc", "e.py::t", "f.py::enc", "f.py::t",
         "g.py::t"]
WAITS = {"a.py::enc", "d.py::enc", "f.py::enc"}
DURATIONS = {"a.py": 10, "b.py": 5, "c.py": 12, "d.py": 2, "e.py": 8, "f.py": 40, "g.py": 1}


def test_the_encoding_first_and_the_files_waiting_for_it_once_it_should_be_done():
    # 3 workers: the other two run 2 x 10 s of files while a.py encodes: c.py (12) and e.py (8) fill them
    assert _order(ITEMS, WAITS, DURATIONS, workers=3) == [
        "a.py::enc", "a.py::x",                           # the encoding's file: its waiting test first
        "c.py::t1", "c.py::t2", "e.py::t",                # longest first, each file's tests together, in order
        "f.py::enc", "f.py::t", "d.py::enc",              # then the waiting files, longest first
        "b.py::t", "g.py::t"]                             # the short files fill the end
    # one worker: nothing runs beside the encoding, the waiting files come right after it
    assert _order(ITEMS, WAITS, DURATIONS)[2:5] == ["f.py::enc", "f.py::t", "d.py::enc"]
    # more workers than files to fill them: the waiting files last
    assert _order(ITEMS, WAITS, DURATIONS, workers=8)[-3:] == ["f.py::enc", "f.py::t", "d.py::enc"]


def test_unknown_files_count_as_the_median_and_ties_keep_collection_order():
    items = ["a.py::t", "new.py::t", "b.py::t", "c.py::t", "old.py::t"]
    durations = {"a.py": 1, "b.py": 9, "c.py": 5, "gone.py": 100}  # median of the files present: 5
    assert _order(items, set(), durations, 4) == ["b.py::t", "new.py::t", "c.py::t", "old.py::t", "a.py::t"]
    assert _order(items, set(), {}, 4) == items  # no durations: collection order


def test_read_durations_keeps_valid_entries_and_tolerates_a_bad_file(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"a.py": 1.5, "b.py": -1, "c.py": "x", "d.py": True, "e.py": 2}))
    assert scheduling.read_durations(path) == {"a.py": 1.5, "e.py": 2.0}
    path.write_text("{not json")
    assert scheduling.read_durations(path) == {}
    assert scheduling.read_durations(tmp_path / "missing.json") == {}


def test_record_merges_the_files_that_ran_over_the_base(tmp_path):
    seconds = scheduling.total_by_file([("a.py::x", 1.04), ("a.py::y", 2.0), ("b.py::z", 0.26)])
    assert seconds == {"a.py": 3.04, "b.py": 0.26}
    out = tmp_path / "work" / "test-durations.json"
    scheduling.record(seconds, {"a.py": 9.0, "c.py": 4.0}, out)
    assert json.loads(out.read_text()) == {"a.py": 3.0, "b.py": 0.3, "c.py": 4.0}
    assert [p.name for p in out.parent.iterdir()] == ["test-durations.json"]
