"""The old name of :mod:`lsr_eval.pipeline.bm25`, kept for one release (see :mod:`lsr_eval.experiments`)."""

import importlib
import sys
import warnings

warnings.warn("lsr_eval.experiments.bm25 is now lsr_eval.pipeline.bm25; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("lsr_eval.pipeline.bm25")
