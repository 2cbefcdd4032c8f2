"""The one check of JsonVectorCollection folders and query files (lsr_eval.export.collection): every defect refused
with one line naming the file, the line and what to do; clean lines read as they are; the streaming pass and its
repeated-id test."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

from lsr_eval.errors import InputError
from lsr_eval.export.collection import (
    BOM,
    FLOAT16,
    FORMAT_DOC,
    JAVA_INT,
    UINT32,
    check_collection,
    iter_collection,
    parse_vector,
)
from lsr_eval.export.queries import read_query_jsonl

#: (name, bad line, what the one-line refusal says): each refused by every engine's weights
DEFECTS = [
    ("negative", '{"id": "b", "vector": {"x": -3}}', r"document 'b': weight of 'x' is -3, negative"),
    ("string weight", '{"id": "b", "vector": {"x": "5"}}', r"document 'b': weight of 'x' is \"5\", a string, not a"),
    ("nan", '{"id": "b", "vector": {"x": NaN}}', r"document 'b': weight of 'x' is NaN, not a finite number"),
    ("inf", '{"id": "b", "vector": {"x": Infinity}}', r"document 'b': weight of 'x' is Infinity, not a finite"),
    ("huge", '{"id": "b", "vector": {"x": 1000000000000}}', r"weight of 'x' is 1000000000000, above"),
    ("no vector", '{"id": "b", "contents": "x"}', r"document 'b': the line has no \"vector\""),
    ("no id", '{"vector": {"x": 1}}', r":2: the line has no \"id\""),
    ("numeric id", '{"id": 7, "vector": {"x": 1}}', r":2: its id 7 is a number, not a string"),
    ("not an object", '["b", {"x": 1}]', r":2: not a JSON object but an array"),
    ("bad json", '{"id": "b", "vector": {"x": 1}', r":2: not valid JSON"),
    ("vector not object", '{"id": "b", "vector": [1, 2]}', r"'b': its \"vector\" is an array, not an object"),
    ("boolean weight", '{"id": "b", "vector": {"x": true}}', r"'x' is true, a boolean, not a number"),
    ("term with space", '{"id": "b", "vector": {"x y": 1}}', r"term 'x y' is empty or holds whitespace"),
    ("empty id", '{"id": "", "vector": {"x": 1}}', r"its id '' is empty"),
]
GOOD = '{"id": "a", "vector": {"x": 3, "y": 1}}'


def collection(folder, *lines: str, name: str = "docs-00000.jsonl"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return folder


@pytest.mark.parametrize("weights", [JAVA_INT, UINT32, FLOAT16], ids=["java-int", "uint32", "float16"])
@pytest.mark.parametrize("name,line,message", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_each_defect_is_one_line_naming_file_line_and_the_format(tmp_path, name, line, message, weights):
    folder = collection(tmp_path / "c", GOOD, line)
    with pytest.raises(InputError, match=message) as e:
        check_collection(folder, weights)
    text = str(e.value)
    assert "\n" not in text and text.startswith(f"{folder / 'docs-00000.jsonl'}:2: ")
    assert text.endswith(f"(the format: {FORMAT_DOC})")
    with pytest.raises(InputError, match=message):  # the engines' reader refuses it the same way
        list(iter_collection(folder, weights))


def test_a_byte_order_mark_is_refused(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "d.jsonl").write_bytes(BOM + GOOD.encode() + b"\n")
    with pytest.raises(InputError, match=r"d\.jsonl:1: the line starts with a UTF-8 byte-order mark; save the file"):
        check_collection(tmp_path / "c")


def test_fractions_refused_by_integer_engines_rounded_on_request_kept_by_float_ones(tmp_path):
    folder = collection(tmp_path / "c", GOOD, '{"id": "b", "vector": {"x": 5.7, "y": 2.5, "z": 0.4, "w": 3.0}}')
    for weights in (JAVA_INT, UINT32):
        with pytest.raises(InputError, match=r":2: document 'b': weight of 'x' is 5.7, not an integer.*"
                                             r"lsr-eval export --scale.*--round-weights"):
            check_collection(folder, weights)
    checked = check_collection(folder, JAVA_INT, round_weights=True)
    assert checked.weights_rounded == 3 and checked.documents == 2  # 5.7, 2.5 and 0.4 changed; 3.0 is an integer
    docs = dict(iter_collection(folder, JAVA_INT, round_weights=True))
    assert docs["b"] == {"x": 6, "y": 2, "w": 3} and all(type(w) is int for w in docs["b"].values())  # half to even
    assert dict(iter_collection(folder, FLOAT16))["b"] == {"x": 5.7, "y": 2.5, "z": 0.4, "w": 3.0}
    assert check_collection(folder, FLOAT16).weights_rounded == 0


def test_each_engine_range(tmp_path):
    big = collection(tmp_path / "big", '{"id": "b", "vector": {"x": 2147483648}}')  # 2**31
    with pytest.raises(InputError, match=r"2147483648, above 2147483647 \(the largest Java int: Anserini reads"):
        check_collection(big, JAVA_INT)
    assert check_collection(big, UINT32).documents == 1
    with pytest.raises(InputError, match=r"above 65504 \(the largest float16, what Seismic stores\)"):
        check_collection(big, FLOAT16)
    with pytest.raises(InputError, match=r"above 4294967295"):
        check_collection(collection(tmp_path / "c", '{"id": "b", "vector": {"x": 4294967296}}'), UINT32)
    huge = collection(tmp_path / "h", '{"id": "b", "vector": {"x": 1' + "0" * 400 + "}}")  # beyond a float's range
    with pytest.raises(InputError, match="above"):
        check_collection(huge, FLOAT16)


def test_repeated_id_names_both_lines_across_files(tmp_path):
    folder = collection(tmp_path / "c", GOOD, '{"id": "b", "vector": {}}')
    collection(folder, '{"id": "c", "vector": {"x": 1}}', '{"id": "a", "vector": {"x": 2}}', name="docs-00001.jsonl")
    with pytest.raises(InputError, match=r"docs-00001\.jsonl:2: document 'a' repeats the id of .*docs-00000\.jsonl:1"):
        check_collection(folder)
    # the engines' reader streams without the whole-pass test: check_collection owns it
    assert [d for d, _ in iter_collection(folder)] == ["a", "b", "c", "a"]


def test_clean_collection_counts_empty_vectors_and_drops_zero_weights(tmp_path):
    folder = collection(tmp_path / "c", GOOD, '{"id": "b", "vector": {}}', "", '{"id": "c", "vector": {"x": 0}}',
                        '{"id": "d", "contents": "", "vector": {"x": 1, "y": 0, "z": 4}, "other": 1}')
    with gzip.open(folder / "docs-00001.jsonl.gz", "wt") as f:
        f.write('{"id": "e", "vector": {"x": 2}}\n')
    (folder / "manifest.txt").write_text("not a collection file")  # other suffixes are not read
    checked = check_collection(folder, JAVA_INT)
    assert checked.to_dict() | {"seconds": 0} == {"documents": 5, "documents_without_terms": 2, "postings": 5,
                                                  "files": 2, "weights_rounded": 0, "seconds": 0}
    assert dict(iter_collection(folder)) == {"a": {"x": 3, "y": 1}, "b": {}, "c": {}, "d": {"x": 1, "z": 4},
                                             "e": {"x": 2}}


def test_folders_without_documents_are_refused(tmp_path):
    with pytest.raises(InputError, match="is not a folder"):
        check_collection(tmp_path / "missing")
    (tmp_path / "none").mkdir()
    with pytest.raises(InputError, match="holds no .jsonl/.json/.gz collection files"):
        check_collection(tmp_path / "none")
    with pytest.raises(InputError, match="holds no documents"):
        check_collection(collection(tmp_path / "blank", "", "  "))


def test_the_check_streams(tmp_path):
    """Memory flat in the collection's size: 8 bytes of id hash per document, not the lines."""
    folder = tmp_path / "c"
    folder.mkdir()
    vector = {f"term{i}": i + 1 for i in range(100)}
    with open(folder / "docs.jsonl", "w") as f:
        for i in range(20_000):
            f.write(json.dumps({"id": f"document-{i}", "vector": vector}) + "\n")
    size = (folder / "docs.jsonl").stat().st_size
    tracemalloc.start()
    checked = check_collection(folder)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert checked.documents == 20_000 and checked.postings == 2_000_000
    assert peak < size / 20, (peak, size)  # ~30 MB of lines; the pass holds one line and the ids' hashes


def test_fast_path_and_slow_path_agree():
    line = b'{"id": "d", "vector": {"a": 1, "b": 0, "c": 7.0}}'
    assert parse_vector(line, JAVA_INT) == ("d", {"a": 1, "c": 7}, 0)
    assert parse_vector(line, FLOAT16) == ("d", {"a": 1, "c": 7.0}, 0)
    assert parse_vector(b'{"id": "d", "vector": {"a": 1, "b": 0}}', JAVA_INT) == ("d", {"a": 1}, 0)


QUERY_DEFECTS = [
    ('{"id": "q2", "vector": {"x": -1}}', r"q\.jsonl:2: query 'q2': weight of 'x' is -1, negative"),
    ('{"id": "q2", "vector": {"x": NaN}}', r"q\.jsonl:2: query 'q2': weight of 'x' is NaN, not a finite number"),
    ('{"id": "q2", "vector": {"x": "3"}}', r"q\.jsonl:2: query 'q2': weight of 'x' is \"3\", a string"),
    ('{"id": "q2", "vector": {"x": 1.5}}', r"q\.jsonl:2: query 'q2': weight of 'x' is 1.5, not an integer"),
    ('{"id": 2, "vector": {"x": 1}}', r"q\.jsonl:2: its id 2 is a number"),
    ('{"id": "q1", "vector": {"x": 1}}', r"q\.jsonl:2: duplicate query id 'q1'"),
]


@pytest.mark.parametrize("line,message", QUERY_DEFECTS)
def test_query_file_defects_name_the_query(tmp_path, line, message):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q1", "vector": {"x": 2}}\n' + line + "\n")
    with pytest.raises(InputError, match=message) as e:
        read_query_jsonl(path)
    assert "\n" not in str(e.value)


def test_query_file_empty_queries_kept_and_float_engines_take_fractions(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q1", "vector": {"x": 2, "y": 0}}\n{"id": "q2", "vector": {}}\n')
    assert read_query_jsonl(path) == {"q1": {"x": 2}, "q2": {}}
    path.write_text('{"id": "q1", "vector": {"x": 2.5}}\n')
    assert read_query_jsonl(path, FLOAT16) == {"q1": {"x": 2.5}}
