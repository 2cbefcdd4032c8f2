"""The latency protocol's settings, declared once and light to import (the benchmark's config reads them without
loading torch): :mod:`lsr_eval.efficiency.latency` times queries with them."""

from __future__ import annotations

from lsr_eval.settings import Setting

#: Unmeasured queries before the timed ones.
WARMUP = Setting(help="unmeasured queries first", ge=0, unit="queries")
