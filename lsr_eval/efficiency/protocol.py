"""The latency protocol's settings, declared once and light to import (the benchmark's config reads them without
loading torch): :mod:`lsr_eval.efficiency.latency` times queries with them."""

from __future__ import annotations

from typing import Literal

from lsr_eval.settings import Setting

#: Unmeasured queries before the timed ones.
WARMUP = Setting(help="unmeasured queries first", ge=0, unit="queries")
#: Timed passes over all the queries, pooled (PISA's queries tool in naver's branch: 2; lsr_eval.efficiency.passes).
PASSES = Setting(help="timed passes over all the queries after one untimed pass, every query's times pooled (PISA's "
                      "queries tool: 2)", ge=1, unit="passes")
#: How a benchmark times its queries: ``fastest``, each query's fastest time over the rounds (the first round cold
#: unless warm-up queries precede it), its whole search call timed; ``pisa``, PISA's queries tool
#: (lsr_eval.efficiency.passes): one untimed pass, then the pooled timed passes of the engine's own call.
LatencyProtocol = Literal["fastest", "pisa"]
