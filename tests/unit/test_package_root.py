"""``import lsr_eval`` is light and shows its verbs: ``dir()`` lists them before any is imported."""

from __future__ import annotations

import subprocess
import sys


def test_dir_lists_the_verbs_without_importing_them():
    code = ("import sys, lsr_eval; names = dir(lsr_eval); "
            "print(all(v in names for v in lsr_eval.__all__), 'torch' in sys.modules, 'lsr_eval.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "False"]
