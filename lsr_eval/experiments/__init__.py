"""The old name of :mod:`lsr_eval.pipeline` (one system on one dataset), kept for one release: importing it, or any
of its modules, warns and gives the module of the new name."""

import warnings

warnings.warn("lsr_eval.experiments is now lsr_eval.pipeline; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
