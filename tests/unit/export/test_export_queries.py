"""Stage 3, queries: weight maps, Anserini TSV and JSON-vector topics (hand-checked), clause limit."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from lsr_eval.encode import SparseVectors
from lsr_eval.errors import ConfigError, InputError
from lsr_eval.export import (
    LUCENE_MAX_CLAUSES,
    export_queries,
    quantize_queries,
    queries_over_clause_limit,
    query_weight_maps,
    tsv_line,
    write_query_tsv,
)

VOCAB = ["[CLS]", "dog", "##s", "bark", "x"]


def vectors(rows: list[dict[int, float]], ids: list[str]) -> SparseVectors:
    dense = np.zeros((len(rows), len(VOCAB)), dtype=np.float32)
    for i, r in enumerate(rows):
        for j, w in r.items():
            dense[i, j] = w
    return SparseVectors(ids, sp.csr_matrix(dense), VOCAB)


def test_weight_maps_hand_computed():
    v = vectors([{3: 0.021, 1: 0.034}, {4: 0.004}], ["q1", "q2"])
    assert query_weight_maps(v) == {"q1": {"dog": 3, "bark": 2}, "q2": {}}
    q = quantize_queries(v, scale=1000)
    assert q.maps == {"q1": {"dog": 34, "bark": 21}, "q2": {"x": 4}}
    assert quantize_queries(v).dropped_zero_weights == 1 and quantize_queries(v).empty == ["q2"]
    with pytest.raises(InputError, match="duplicate query id 'q1'"):
        quantize_queries(vectors([{}, {}], ["q1", "q1"]))
    with pytest.raises(InputError, match="query 'qn'.*not finite"):
        quantize_queries(vectors([{1: np.nan}], ["qn"]))


def test_tsv_format_hand_checked(tmp_path):
    assert tsv_line("q7", {"dog": 3, "##s": 1, "bark": 2}) == "q7\tdog dog dog ##s bark bark"
    for bad in ("a\tb", "a\nb", " a"):
        with pytest.raises(InputError, match="TSV"):
            tsv_line(bad, {"dog": 1})
    maps = {"1": {"dog": 2}, "2": {}, "3": {"bark": 1, "x": 1}}
    with pytest.raises(InputError, match=r"1 query vector\(s\) are empty \(e.g. \['2'\]\)"):
        write_query_tsv(maps, tmp_path / "q.tsv")
    assert not (tmp_path / "q.tsv").exists()
    assert write_query_tsv(maps, tmp_path / "q.tsv", on_empty="skip") == ["2"]
    assert (tmp_path / "q.tsv").read_text() == "1\tdog dog\n3\tbark x\n"
    with pytest.raises(ConfigError, match="error, skip"):
        write_query_tsv(maps, tmp_path / "q.tsv", on_empty="keep")  # type: ignore[arg-type]


def test_clause_limit():
    assert LUCENE_MAX_CLAUSES == 1024
    maps = {"small": {f"t{i}": 1 for i in range(1024)}, "big": {f"t{i}": 1 for i in range(1025)}}
    assert queries_over_clause_limit(maps) == {"big": 1025}
    assert queries_over_clause_limit(maps, limit=10) == {"small": 1024, "big": 1025}


def test_export_queries_folder(tmp_path):
    v = vectors([{1: 0.02, 2: 0.011}, {}], ["a", "b"])
    sections = export_queries(v, tmp_path / "q", {"q": 1}, on_empty="skip", clause_limit=1)
    assert (tmp_path / "q" / "queries.tsv").read_text() == "a\tdog dog ##s\n"
    lines = [json.loads(x) for x in (tmp_path / "q" / "queries.jsonl").read_text().splitlines()]
    assert lines == [{"id": "a", "vector": {"dog": 2, "##s": 1}}, {"id": "b", "vector": {}}]
    from lsr_eval.export.queries import read_query_jsonl

    assert read_query_jsonl(tmp_path / "q" / "queries.jsonl") == {"a": {"dog": 2, "##s": 1}, "b": {}}
    c = sections["counts"]
    assert (c["queries_in"], c["queries_jsonl"], c["queries_tsv"], c["empty_vectors"]) == (2, 2, 1, 1)
    assert c["skipped_in_tsv"] == ["b"] and c["over_clause_limit"] == {"a": 2} and c["total_postings"] == 2
    man = json.loads((tmp_path / "q" / "manifest.json").read_text())
    assert man["parameters"]["scale"] == 100
