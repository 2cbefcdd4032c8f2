"""``import lsr_eval`` is light and shows its verbs: ``dir()`` lists them before any is imported."""

from __future__ import annotations

import subprocess
import sys


def test_dir_lists_the_verbs_without_importing_them():
    code = ("import sys, lsr_eval; names = dir(lsr_eval); "
            "print(all(v in names for v in lsr_eval.__all__), 'torch' in sys.modules, 'lsr_eval.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "False"]


def test_dir_is_the_verbs_and_types_only():
    import lsr_eval

    shown = [n for n in dir(lsr_eval) if not n.startswith("__")]
    assert {"evaluate", "run_evaluation", "fuse", "run_fusion", "TuneOn", "CrossValidate", "Run", "Qrels",
            "SparseVectors"} <= set(shown)
    assert all(n in lsr_eval.__all__ for n in shown), [n for n in shown if n not in lsr_eval.__all__]
    assert lsr_eval.Run == dict[str, dict[str, float]]


def test_the_old_name_of_pipeline_still_works_for_one_release_and_warns():
    code = ("import warnings, sys; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    import lsr_eval.experiments.bm25\nexcept DeprecationWarning as w:\n    print('warned', w)\n"
            "warnings.simplefilter('ignore', DeprecationWarning)\n"
            "from lsr_eval.experiments.bm25 import Bm25Settings\nimport lsr_eval.pipeline.bm25 as new\n"
            "print(Bm25Settings is new.Bm25Settings, sys.modules['lsr_eval.experiments.bm25'] is new)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["warned lsr_eval.experiments is now lsr_eval.pipeline; the old name goes in the next "
                                "release", "True True"]
