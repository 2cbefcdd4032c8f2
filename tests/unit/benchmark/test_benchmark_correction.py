"""A benchmark's ``significance.correction`` (bonferroni, holm, bh) is validated when its YAML is read, and the
report's note names the correction and what its markers control."""

from __future__ import annotations

import pandas as pd
import pytest

from lsr_eval.benchmark.config import load_config
from lsr_eval.errors import ConfigError
from lsr_eval.report.marks import CellNotes

YAML = """name: t
out: {out}
datasets:
  - {{spec: scifact}}
systems:
  - {{name: bm25, kind: bm25}}
  - {{name: other, kind: bm25, k1: 1.2}}
significance: {{baseline: bm25{extra}}}
"""


@pytest.mark.parametrize("extra, expected", [("", "bonferroni"), (", correction: holm", "holm"),
                                             (", correction: bh", "bh")])
def test_the_correction_is_read(tmp_path, extra, expected):
    path = tmp_path / "b.yaml"
    path.write_text(YAML.format(out=tmp_path / "out", extra=extra))
    assert load_config(path).significance.correction == expected


def test_an_unknown_correction_is_one_line(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(YAML.format(out=tmp_path / "out", extra=", correction: sidak"))
    with pytest.raises(ConfigError, match="b.yaml: significance: correction must be one of bonferroni, holm, bh, "
                                          "got 'sidak'$"):
        load_config(path)


@pytest.mark.parametrize("correction, words", [
    (None, "Bonferroni-corrected, α = 0.05"),   # tables made before the choice existed
    ("holm", "Holm-corrected (family-wise error rate), α = 0.05"),
    ("bh", "Benjamini-Hochberg-corrected (false discovery rate, not family-wise error), α = 0.05")])
def test_the_note_names_the_correction(correction, words):
    notes = CellNotes()
    row = pd.Series({"dataset": "d", "system": "s", "baseline": "b", "significance_test": "t-test",
                     "significance_alpha": 0.05, "nDCG@10_sig": "†", "nDCG@10_p": 0.01,
                     **({"significance_correction": correction} if correction else {})})
    assert notes.significance_mark(row, "nDCG@10", {("d", "nDCG@10")}) == "†"
    assert any(words in line for line in notes.significance_lines())
