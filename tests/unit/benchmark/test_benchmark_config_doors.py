"""A benchmark YAML's wrong values end in one line naming the file and entry, never a traceback: a sweep value of
null, a BM25 system's fields that are not a list."""

from __future__ import annotations

import pytest
import yaml

from lsr_eval.benchmark.config import load_config
from lsr_eval.errors import ConfigError


def _bench(tmp_path, **over):
    cfg = {"name": "b", "out": str(tmp_path / "out"), "datasets": [str(tmp_path)],
           "systems": [{"name": "bm", "kind": "bm25"},
                       {"name": "s", "kind": "splade", "model": "splade-tiny", "doc_top_k": 20}]}
    cfg.update(over)
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize("over, message", [
    ({"sweep": [{"system": "s", "doc_top_k": [None]}]}, r"b\.yaml: sweep\[0\]: doc_top_k must be an integer >= 1, "
                                                        r"got None$"),
    ({"sweep": [{"system": "s", "query_threshold": [None]}]}, r"sweep\[0\]: query_threshold must be a number >= 0, "
                                                              r"got None$"),
    ({"systems": [{"name": "bm", "kind": "bm25", "fields": 5}]},
     r"b\.yaml: systems\[0\]: fields must be a list, got 5$"),
])
def test_one_line_for_a_wrong_value(tmp_path, over, message):
    with pytest.raises(ConfigError, match=message):
        load_config(_bench(tmp_path, **over))
