"""Reading a benchmark file loads no numerical library: ``lsr-eval benchmark``'s check and the CLI's help stay fast
(the significance tests' and the folds' constraints are declared beside the config, their code imported on use)."""

from __future__ import annotations

import subprocess
import sys


def test_the_benchmark_config_imports_no_numpy_torch_or_ranx():
    code = ("import sys, lsr_eval.benchmark.config; "
            "print(sorted(m for m in ('numpy', 'scipy', 'torch', 'ranx', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
