"""Fuse runs with ranx (``ranx.fuse``; the default methods without it, :mod:`.native`), counting what goes in and out.

The fused scores are ranx's; the ranking is not: a fused :data:`~lsr_eval.data.types.Run` is a plain dict, ranked in
trec_eval order wherever it is written or evaluated. ``ranx.fuse`` keeps every document of every input (no top-k
cut: checked here, a query whose fused documents differ from the union of its input documents is an error); a cut
happens only when ``depth`` is given. Queries: the fused run holds the union of the input queries; a query missing
from some runs is fused from the others (counted); a query without documents in any run has no output (counted).
An input without any document, or one that shares no query with the other inputs, is an error: such a fusion only
copies the other runs (usually a run of another split or of another dataset was given by mistake).
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import asdict, dataclass
from itertools import islice
from typing import Any, Mapping, Sequence

from lsr_eval.data.types import Run
from lsr_eval.errors import ConfigError, InputError, LsrEvalError
from lsr_eval.fusion.methods import Settings, check_runs, ranx_params
from lsr_eval.fusion.native import FlatRuns, supports
from lsr_eval.fusion.ranx_runs import from_ranx, import_ranx, to_ranx, trec_ordered
from lsr_eval.runs.trec import DEPTH, trec_ranking
from lsr_eval.settings import check

log = logging.getLogger(__name__)

#: How many query ids a warning lists.
MAX_LISTED = 10


@dataclass(frozen=True, slots=True)
class RunCounts:
    """One input run: queries with documents, documents, queries present without documents, union queries it lacks."""

    queries: int
    documents: int
    empty_queries: int
    missing_queries: int


@dataclass(frozen=True, slots=True)
class FusionCounts:
    """Queries and documents in and out (``queries_out == queries_union - queries_without_documents``)."""

    inputs: tuple[RunCounts, ...]
    queries_union: int  #: queries present (with or without documents) in at least one run
    queries_in_all: int  #: queries with documents in every run
    queries_in_some: int  #: queries with documents in some runs but not all: fused from those that have them
    queries_without_documents: int  #: queries with no document in any run: absent from the output
    queries_out: int
    documents_out: int  #: after the ``depth`` cut
    documents_cut: int  #: removed by the ``depth`` cut

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Fusion:
    """A fused run, the settings that made it, and its counts."""

    run: Run
    method: str
    norm: str
    params: dict[str, Any]
    depth: int | None
    counts: FusionCounts

    def settings(self) -> dict[str, Any]:
        """Method, normalisation, parameters (numpy arrays as lists) and depth, as JSON-ready values."""
        return {"method": self.method, "norm": self.norm, "params": jsonable(self.params), "depth": self.depth}


def jsonable(value: Any) -> Any:
    """``value`` with numpy arrays and scalars turned into lists and floats (for manifests)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def check_inputs(runs: Sequence[Run], names: Sequence[str] | None = None) -> None:
    """Refuse a run without documents and a run whose answered queries meet none of the other runs' (see the module
    doc); ``names`` (e.g. file paths) name the runs in the message."""
    names = list(names) if names is not None else [f"run {i + 1}" for i in range(len(runs))]
    answered = [{q for q, hits in run.items() if hits} for run in runs]
    for name, queries, run in zip(names, answered, runs):
        if not queries:
            raise InputError(f"fusion input {name} holds no document ({len(run)} queries, all empty): nothing to "
                             "fuse from it")
    for i, (name, queries) in enumerate(zip(names, answered)):
        others = set().union(*(a for j, a in enumerate(answered) if j != i))
        if not queries & others:
            rest = ", ".join(n for j, n in enumerate(names) if j != i)
            raise InputError(f"fusion input {name} shares no query with {rest} ({len(queries)} queries, e.g. "
                             f"{', '.join(sorted(queries)[:3])}; theirs: e.g. {', '.join(sorted(others)[:3])}): runs "
                             "of different query sets?")


class Prepared:
    """Input runs ranked once in trec_eval order, and converted to ranx when a method needs it (for tuning, which
    fuses the same runs many times)."""

    def __init__(self, runs: Sequence[Run]) -> None:
        check_runs(len(runs))
        self.n_runs = len(runs)
        union: dict[str, None] = {}
        for run in runs:
            union.update(dict.fromkeys(run))
        self.qids = list(union)  # output order: first run's queries, then new ones in later runs
        self.docs = {q: set().union(*((run.get(q) or {}).keys() for run in runs)) for q in self.qids}
        answered = [{q for q, hits in run.items() if hits} for run in runs]
        self.inputs = tuple(RunCounts(queries=len(a), documents=sum(len(h) for h in run.values()),
                                      empty_queries=len(run) - len(a), missing_queries=len(union) - len(run))
                            for run, a in zip(runs, answered))
        self.in_all = set.intersection(*answered)
        self.in_some = set.union(*answered) - self.in_all
        self.without_docs = [q for q in self.qids if not self.docs[q]]
        self.fused_qids = sorted(q for q in self.qids if self.docs[q])  # sorted, as ranx keeps its query ids
        if not self.fused_qids:
            raise ConfigError("the runs hold no documents: nothing to fuse")
        self._runs = runs
        self._flat: FlatRuns | None = None
        self._ranx_runs: list[Any] | None = None

    @property
    def flat(self) -> FlatRuns:
        """The runs over :attr:`fused_qids` laid out for :mod:`lsr_eval.fusion.native` (built once)."""
        if self._flat is None:
            self._flat = FlatRuns([trec_ordered(run, self.fused_qids) for run in self._runs], self.fused_qids)
        return self._flat

    @property
    def ranx_runs(self) -> list[Any]:
        """The runs as ``ranx.Run`` objects over :attr:`fused_qids`."""
        if self._ranx_runs is None:
            self._ranx_runs = [to_ranx(run, self.fused_qids, name=f"run{i}") for i, run in enumerate(self._runs)]
        return self._ranx_runs


def _check_ranx_query(hits: Mapping[str, float], docs: set[str], qid: str, settings: Settings) -> None:
    """Refuse a query of a ranx fusion that lost an input document or scored one with a non-finite number."""
    if hits.keys() != docs:
        lost = sorted(docs - hits.keys())[:MAX_LISTED]
        raise LsrEvalError(f"ranx {settings.method.name} returned {len(hits)} documents for query {qid!r} instead of "
                           f"the {len(docs)} of the inputs (missing: {lost})")
    bad = [d for d, s in hits.items() if not math.isfinite(s)]
    if bad:
        raise LsrEvalError(f"ranx {settings.method.name} with norm {settings.norm}: query {qid!r}, document "
                           f"{bad[0]!r}: fused score {hits[bad[0]]} is not finite")


def check_depth(depth: int | None) -> None:
    """Refuse a fused-run cut that is not a positive integer or None."""
    check("depth", depth, int | None, DEPTH)


def fuse_prepared(prepared: Prepared, settings: Settings, depth: int | None = None, native: bool = True) -> Fusion:
    """Fuse prepared runs with resolved settings (see :func:`fuse`); ``native``: the methods of
    :mod:`lsr_eval.fusion.native` are computed there (same floats as ranx), else every method goes through ranx."""
    check_depth(depth)
    method = settings.method
    order = [q for q in prepared.qids if prepared.docs[q]]
    native = native and supports(settings)
    if native:  # every input document, finite scores, trec_eval order: by construction (FlatRuns.fuse)
        fused = prepared.flat.fuse(settings)
        out = {q: fused[q] for q in order}
    else:
        from numba.core.errors import NumbaTypeSafetyWarning

        ranx = import_ranx()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumbaTypeSafetyWarning)  # ranx's own uint64 -> int64 index casts
            fused = ranx.fuse(prepared.ranx_runs, norm=None if settings.norm == "none" else settings.norm,
                              method=method.name, params=ranx_params(method, settings.params))
        out = from_ranx(fused, order)
    cut = 0
    for qid in prepared.fused_qids:
        hits = out.get(qid, {})
        if not native:
            _check_ranx_query(hits, prepared.docs[qid], qid, settings)
        if depth is not None and len(hits) > depth:
            cut += len(hits) - depth
            out[qid] = dict(islice(hits.items(), depth)) if native else dict(trec_ranking(hits, qid)[:depth])
    counts = FusionCounts(
        inputs=prepared.inputs, queries_union=len(prepared.qids), queries_in_all=len(prepared.in_all),
        queries_in_some=len(prepared.in_some), queries_without_documents=len(prepared.without_docs),
        queries_out=len(out), documents_out=sum(len(h) for h in out.values()), documents_cut=cut)
    return Fusion(out, method.name, settings.norm, dict(settings.params), depth, counts)


def fuse(runs: Sequence[Run], method: str = "rrf", norm: str | None = None, params: Mapping[str, Any] | None = None,
         depth: int | None = None, names: Sequence[str] | None = None) -> Fusion:
    """Fuse ``runs`` with the ranx method ``method`` (see :mod:`lsr_eval.fusion.methods`).

    ``norm``: a normalisation name, None for the method's default (``min-max`` for score-based methods, ``none`` for
    rank-based ones). ``params``: e.g. ``{"k": 60}`` for RRF (the default), ``{"weights": [0.3, 0.7]}`` for wsum;
    missing required values are errors. ``depth``: keep the first ``depth`` documents of each query in trec_eval
    order (None: all, which is ranx's behaviour). Counts are logged when queries are missing from some runs. An
    empty input, or one sharing no query with the others, is an :class:`InputError` naming it (``names``).
    """
    settings = Settings.make(method, norm, params, len(runs))
    check_inputs(runs, names)
    prepared = Prepared(runs)
    if prepared.in_some:
        some = sorted(prepared.in_some)
        log.warning("%d queries have documents in some runs only (fused from those): %s", len(some),
                    ", ".join(some[:MAX_LISTED]))
    if prepared.without_docs:
        log.warning("%d queries have no document in any run (no output): %s", len(prepared.without_docs),
                    ", ".join(prepared.without_docs[:MAX_LISTED]))
    return fuse_prepared(prepared, settings, depth)
