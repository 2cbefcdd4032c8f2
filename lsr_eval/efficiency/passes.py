"""PISA's timing protocol, after the ``queries`` tool that naver's efficient SPLADE timed with (PISA's
``weight-queries`` branch, ``tools/queries.cpp``: ``perftest`` then ``op_perftest``): the query terms' postings are
warmed, every query runs once untimed, then ``passes`` timed passes run over all the queries in order and every
query's time of every pass is pooled into one sample (``n x passes`` times), summarised by mean and percentiles.

Here the untimed pass also does the warming (a binding has no call that only touches postings): it runs every query
through the same engine call, so every posting list a timed query reads has been read before.

Mallia, Siedlaczek, Mackenzie, Suel. "PISA: Performant Indexes and Search for Academia", OSIRRC@SIGIR 2019.
Lassance, Clinchant. "An Efficiency Study for SPLADE Models", SIGIR 2022 (latency: PISA's queries tool, 2 runs)."""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable, Sequence

from lsr_eval.efficiency.protocol import PASSES
from lsr_eval.settings import check


def timed_passes(calls: Sequence[Callable[[], Any]], passes: int = 2) -> list[float]:
    """Milliseconds of each call in ``calls`` (one query each, everything but the engine's work made beforehand):
    one untimed pass over all of them, then ``passes`` timed passes, pooled pass after pass (``len(calls) x
    passes`` times: the i-th query's time in pass p is at ``p * len(calls) + i``)."""
    check("passes", passes, int, PASSES)
    for call in calls:  # untimed: warms every posting list the timed passes read
        call()
    clock = time.perf_counter
    ms: list[float] = []
    for _ in range(passes):
        for call in calls:
            t0 = clock()
            call()
            ms.append((clock() - t0) * 1e3)
    return ms


def engine_calls(searcher: Any, weights: Sequence[Any], k: int) -> list[Callable[[], Any]]:
    """One call per query for :func:`timed_passes`: the searcher's ``engine_call(weights, k)`` where it has one (the
    engine's own top-k call alone, e.g. :meth:`lsr_eval.engines.pisa.PisaSearcher.engine_call`), else its
    ``search(weights, k)``."""
    make = getattr(searcher, "engine_call", None)
    if make is not None:
        return [make(w, k) for w in weights]
    return [partial(searcher.search, w, k) for w in weights]


def pooled_samples(encode_ms: Sequence[float], calls: Sequence[Callable[[], Any]],
                   passes: int) -> dict[str, list[float]]:
    """``encode`` (one time per query, as given), ``search`` (:func:`timed_passes` of ``calls``, the same queries in
    the same order) and ``total`` (each pooled search time plus its query's encoding) in milliseconds."""
    search = timed_passes(calls, passes)
    return {"encode": list(encode_ms), "search": search,
            "total": [encode_ms[i % len(encode_ms)] + ms for i, ms in enumerate(search)]}
