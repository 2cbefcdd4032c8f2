"""`lsr-eval encode` under torchrun: 2 CPU processes (gloo) share the shards; rank 0 writes the manifest; the union
equals a single-process encoding."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from tiny_models import tiny_bert

from lsr_eval.encode.reader import load_matrix


def test_two_process_encoding_equals_one(tiny_beir, tmp_path):
    model = str(tiny_bert())
    common = [model, str(tiny_beir), "--max-length-d", "32", "--doc-top-k", "10", "--shard-size", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533",
                    "-m", "lsr_eval.cli", "encode", *common, "--out", str(tmp_path / "two")],
                   check=True, env=env, timeout=300, capture_output=True)
    subprocess.run([sys.executable, "-m", "lsr_eval.cli", "encode", *common, "--out", str(tmp_path / "one")],
                   check=True, env=env, timeout=300, capture_output=True)
    manifest = json.loads((tmp_path / "two" / "manifest.json").read_text())
    assert manifest["counts"]["documents_out"] == 5 and manifest["parameters"]["world_sizes"] == [2]
    ids2, m2 = load_matrix(tmp_path / "two")
    ids1, m1 = load_matrix(tmp_path / "one")
    assert ids2 == ids1 == ["d1", "d2", "d3", "d4", "q2"]
    assert np.allclose(m2.toarray(), m1.toarray(), atol=1e-5)
