"""The old name of :mod:`lsr_eval.pipeline.result`, kept for one release (see :mod:`lsr_eval.experiments`)."""

import importlib
import sys
import warnings

warnings.warn("lsr_eval.experiments.result is now lsr_eval.pipeline.result; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("lsr_eval.pipeline.result")
