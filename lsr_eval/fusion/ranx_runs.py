"""Conversion between our runs (``{qid: {docid: score}}``) and ``ranx.Run`` objects, keeping trec_eval's order.

Rank-based ranx methods (RRF, Borda, ISR, RBC, rank normalisation, the position probabilities of PosFuse...) read a
run's rank from the insertion order of its numba dictionaries. ``ranx.Run(dict)`` sorts each query with an unstable
``argsort`` of the scores, so tied documents land in an arbitrary order, whereas trec_eval breaks ties by docid
descending. Here each query's documents are inserted in trec_eval order (:func:`lsr_eval.runs.trec.trec_order`) and
the Run is marked sorted, so ranx never re-sorts the inputs. ``ranx.fuse`` needs every run to hold the same query
ids: a query a run lacks gets an empty result list (ranx keeps it, and a rank-based method then gives it nothing).

Document ids reach numba as fixed-width numpy strings (the width rounded up to a power of two, so that the
constructor compiles for a handful of widths, not one per dataset) and are keyed as numba strings, the type ranx's
normalisations give: ranx's kernels then compile once, not once for raw runs and again for normalised ones.
"""

from __future__ import annotations

import functools
import math
import sys
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

from lsr_eval.data.types import Run
from lsr_eval.fusion.numba_cache import cache_on_disk, module_functions
from lsr_eval.runs.trec import hits_arrays, trec_order

#: Smallest width (characters) of the numpy strings holding document ids.
MIN_ID_WIDTH = 16


def _id_width(longest: int) -> int:
    return max(MIN_ID_WIDTH, 1 << math.ceil(math.log2(max(longest, 1))))


def trec_ordered(run: Run, qids: Sequence[str]) -> tuple[list[list[str]], list[np.ndarray]]:
    """For each of ``qids``: its document ids and scores in trec_eval order (empty for a query the run lacks)."""
    docs: list[list[str]] = []
    scores: list[np.ndarray] = []
    for qid in qids:
        ids, values = hits_arrays(qid, run.get(qid) or {})
        order = trec_order(ids, values)
        docs.append([ids[i] for i in order.tolist()])
        scores.append(values[order])
    return docs, scores


#: numba's typed-container helpers :func:`import_ranx` leaves without a disk cache: ``List.sort``'s key function
#: enters its cache key by identity, so each process would add an entry that is never read.
UNCACHED_HELPERS = ("_sort",)


@functools.cache
def import_ranx() -> Any:
    """``ranx``, with its numba kernels and numba's typed-container helpers (``Dict``/``List`` get, contains, make,
    append... which ranx's runs and qrels and ours call from Python) saved to numba's disk cache under a lock
    (:mod:`lsr_eval.fusion.numba_cache`).

    numba compiles those helpers without a cache, once per process and container type: ``lsr-eval fuse --method
    bordafuse`` of two DL19 runs took 17-18 s, 5-6 s once they are cached (the same run). The cache is numba's
    (per folder and CPU), and it serves every typed list and dict of the process from then on."""
    import ranx
    from numba.typed import typeddict, typedlist

    cache_on_disk(module_functions([typeddict, typedlist], skip=UNCACHED_HELPERS), enable=True)
    cache_on_disk(module_functions(m for name, m in list(sys.modules.items()) if name.split(".")[0] == "ranx"))
    return ranx


def to_ranx(run: Run, qids: Sequence[str], name: str | None = None) -> Any:
    """A ``ranx.Run`` over exactly ``qids`` (in that order), documents in trec_eval order, marked sorted."""
    ranx = import_ranx()
    from numba.typed import List as TypedList

    docs, scores = trec_ordered(run, qids)
    width = _id_width(max((len(d) for ids in docs for d in ids), default=1))
    out = ranx.Run(name=name)
    out.run = _kernels().string_keyed_run(TypedList(qids),
                                          TypedList([np.array(ids, dtype=f"<U{width}") for ids in docs]),
                                          TypedList(scores))
    out.sorted = True
    return out


def to_ranx_qrels(qrels: dict[str, dict[str, int]], qids: Sequence[str]) -> Any:
    """A ``ranx.Qrels`` over ``qids``; ranx sorts its query ids, so ``qids`` must be sorted for the hit lists of
    the training estimators to pair queries by position with the runs of :func:`to_ranx`."""
    ranx = import_ranx()
    if list(qids) != sorted(qids):
        raise ValueError("qids must be sorted to pair ranx qrels with ranx runs by position")
    return ranx.Qrels({q: dict(qrels[q]) for q in qids})


@functools.cache
def _kernels() -> SimpleNamespace:
    """This module's numba helpers, compiled on first call and kept in numba's disk cache under its lock:
    ``string_keyed_run`` builds a run's typed dicts keyed by numba strings (the key type of ranx's normalised runs);
    ``joined_keys`` and ``values`` read a typed dict in one call each (boxing items one by one from Python is ~10x
    slower)."""
    from numba import njit, types
    from numba.typed import Dict as TypedDict

    @njit(cache=True)
    def string_keyed_run(qids, docs, scores):  # pragma: no cover - compiled
        out = TypedDict()
        for i in range(len(qids)):
            results = TypedDict.empty(key_type=types.unicode_type, value_type=types.float64)
            ids = docs[i]
            row = scores[i]
            for j in range(len(ids)):
                results[ids[j] + ""] = row[j]  # + "": a numba string, as ranx's to_unicode
            out[qids[i]] = results
        return out

    @njit(cache=True)
    def joined_keys(d, sep):  # pragma: no cover - compiled
        return sep.join(list(d.keys()))

    @njit(cache=True)
    def values(d):  # pragma: no cover - compiled
        out = np.empty(len(d))
        for i, v in enumerate(d.values()):
            out[i] = v
        return out

    cache_on_disk((string_keyed_run, joined_keys, values))
    return SimpleNamespace(string_keyed_run=string_keyed_run, joined_keys=joined_keys, values=values)


#: Separator of the joined document ids; an id holding it is read back one by one instead.
_SEP = "\n"


def from_ranx(run: Any, qids: Sequence[str]) -> Run:
    """``{qid: {docid: score}}`` for each of ``qids`` found in the ranx run (queries without documents included)."""
    kernels = _kernels()
    out: Run = {}
    for qid in qids:
        d = run.run.get(qid)
        if d is None:
            continue
        n = len(d)
        ids = kernels.joined_keys(d, _SEP).split(_SEP) if n else []
        if len(ids) != n:
            ids = list(d.keys())
        out[qid] = dict(zip(ids, kernels.values(d).tolist()))
    return out
