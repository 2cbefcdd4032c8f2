"""studies/gpu_check/run.py and gpu_check.sh: the comparison run on the CPU against itself (a tiny model, a few
documents), the agreement measures by hand, and the shell script's refusal without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from studies.harness.agreement import vector_agreement

REPO = Path(__file__).resolve().parents[2]

from conftest import run_script  # noqa: E402
from tiny_models import sample_texts, tiny_model  # noqa: E402


def test_agreement_by_hand():
    # row 0: impacts 150 and 30 against 150 and 31 (0.305 * 100 = 30.5 -> 30 to even; 0.31 -> 31): differs by 1;
    # row 1: 0.004 rounds to 0 (dropped) against an absent term: identical impacts, but top-2 {1, 2} against {1};
    # row 2: impacts 300/200/100 against 300/100/200, top-2 {1, 2} against {1, 3}
    a = sp.csr_matrix(np.array([[1.5, 0.305, 0.0, 0.0], [0.0, 2.0, 0.004, 0.0], [0.0, 3.0, 2.0, 1.0]]))
    b = sp.csr_matrix(np.array([[1.5, 0.31, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 3.0, 1.0, 2.0]]))
    got = vector_agreement(a, b, scale=100, top_k=2)
    assert (got["rows"], got["identical_integer_rows"]) == (3, 1)
    assert got["max_abs_weight_difference"] == pytest.approx(1.0)
    assert got["max_abs_impact_difference"] == 100            # row 2: 200 vs 100
    assert (got["impact_entries_differing"], got["impact_entries"]) == (3, 6)
    assert got["rows_with_same_top_k"] == 1
    assert got["mean_top_k_overlap"] == pytest.approx((1 + 0.5 + 0.5) / 3) and got["min_top_k_overlap"] == 0.5
    same = vector_agreement(a, a.copy())
    assert same["identical_integer_rows"] == 3 and same["max_abs_weight_difference"] == 0.0
    with pytest.raises(ValueError, match="shapes differ"):
        vector_agreement(a, b[:2])


def test_top_k_ties_go_to_the_lower_vocabulary_id():
    a = sp.csr_matrix(np.array([[1.0, 1.0, 1.0]]))
    b = sp.csr_matrix(np.array([[1.0, 1.0, 0.0]]))
    assert vector_agreement(a, b, top_k=2)["rows_with_same_top_k"] == 1


def test_check_on_the_cpu_against_itself(tmp_path, capfd):
    """--device cpu: fp32 on the 'device' equals the CPU reference bit for bit; bf16 differs, within what bf16
    can do; docs/s and the summary are written and the summary regenerates from the json."""
    data = tmp_path / "beir"
    data.mkdir()
    with open(data / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(sample_texts(12)):
            f.write(json.dumps({"_id": f"d{i}", "title": "", "text": text}) + "\n")
    out = tmp_path / "out"
    rc = run_script("studies/gpu_check/run.py", ["--device", "cpu", "--docs", "10", "--batch-size", "4",
                         "--data", str(data), "--model", str(tiny_model("bert")), "--max-length", "64",
                         "--out", str(out)])
    assert rc == 0
    r = json.loads((out / "gpu_check.json").read_text())
    assert list(r["encodings"]) == ["reference", "fp32", "bf16"] and r["docs"] == 10
    assert [(e["device"], e["precision"]["name"]) for e in r["encodings"].values()] == [
        ("cpu", "fp32"), ("cpu", "fp32"), ("cpu", "bf16")]
    assert all(e["docs_per_s"] > 0 for e in r["encodings"].values())
    fp32, bf16 = r["agreement"]["fp32_vs_reference"], r["agreement"]["bf16_vs_reference"]
    assert fp32["identical_integer_rows"] == 10 and fp32["max_abs_weight_difference"] == 0.0
    assert r["fp32_within_tolerance"] is True
    assert 0 < bf16["max_abs_weight_difference"] < 0.5 and bf16["impact_entries_differing"] > 0
    assert r["agreement"]["bf16_vs_fp32"] == bf16           # fp32 on the device is the reference itself here
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "gpu-check" and manifest["machine"] == r["machine"]
    from studies.gpu_check.summary import summaries

    assert summaries(out) == {"summary.md": (out / "summary.md").read_text()}
    assert "agrees with the reference" in capfd.readouterr().out


def test_shell_script_refuses_without_a_gpu(tmp_path):
    """No CUDA device visible (CUDA_VISIBLE_DEVICES empty, so this holds on a GPU machine too): a clear refusal,
    status 3, nothing written."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OUT": str(tmp_path / "out"), "PYTHON": sys.executable,
           "DATA": str(tmp_path)}
    (tmp_path / "corpus.jsonl").write_text("{}\n")
    done = subprocess.run(["bash", str(REPO / "pipelines" / "gpu_check.sh")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 3, done.stderr
    assert "no GPU" in done.stderr and "CUDA device" in done.stderr and "nothing was written" in done.stderr
    assert not (tmp_path / "out").exists()
