"""Anserini's own ``SearchCollection`` run in this process, and the JVM's memory read from Python.

Both serve side-by-side checks of :mod:`lsr_eval.anserini.searcher` against Anserini itself: the same index and
topics searched by ``SearchCollection`` (its command-line options, parsed by args4j as ``IndexCollection``'s are in
:func:`lsr_eval.anserini.indexer.run_index_collection`), and the heap each search leaves or peaks at
(``java.lang.management``).

Design notes: docs/design.md."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from lsr_eval.anserini.hits import handles
from lsr_eval.anserini.jvm import autoclass, cast, detach, java_errors, java_list
from lsr_eval.errors import ConfigError, InputError, JavaError
from lsr_eval.search.params import K, check_threads
from lsr_eval.settings import check, setting, validate

MB = 2 ** 20
#: Logger whose level is lowered to WARN while ``SearchCollection`` runs quietly.
SEARCH_LOGGER = "io.anserini.search"
_BAD_TOPIC_CHARS = re.compile(r"[\t\r\n]")

__all__ = ["SearchCollectionRun", "search_collection_argv", "run_search_collection", "write_tsv_topics",
           "pretokenized", "JvmMemory", "HeapSampler", "process_rss_mb"]


@dataclass
class SearchCollectionRun:
    """What one ``SearchCollection`` run was given and how long it took (index opening to run file closed)."""

    argv: list[str]
    output: str
    seconds: float


def search_collection_argv(index: str | os.PathLike, topics: str | os.PathLike, output: str | os.PathLike,
                           model: Literal["bm25", "impact"], hits: int = 1000, threads: int = 2,
                           remove_query: bool = False, k1: float = 0.9, b: float = 0.4) -> list[str]:
    """Command line of ``SearchCollection`` for BM25 (English analyzer) or impact (pre-tokenised topics) search of a
    ``TsvString`` topics file, ``threads`` query threads, one parameter configuration."""
    check("hits", hits, int, K)
    check_threads(threads)
    argv = ["-index", str(index), "-topics", str(topics), "-topicReader", "TsvString", "-output", str(output),
            "-hits", str(hits), "-threads", str(threads), "-parallelism", "1"]
    if model == "bm25":
        argv += ["-bm25", "-bm25.k1", str(k1), "-bm25.b", str(b)]
    elif model == "impact":
        argv += ["-impact", "-pretokenized"]
    else:
        raise ConfigError(f"unknown SearchCollection model {model!r}; allowed: bm25, impact")
    if remove_query:
        argv.append("-removeQuery")
    return argv


def run_search_collection(argv: list[str], quiet: bool = True) -> SearchCollectionRun:
    """Run ``SearchCollection`` with command-line ``argv`` in this process (its run file replaced if present)."""
    args = autoclass("io.anserini.search.SearchCollection$Args")()
    parser = autoclass("org.kohsuke.args4j.CmdLineParser")(args)
    with java_errors(f"SearchCollection {' '.join(argv)}"):
        parser.parseArgument(java_list(argv))
    output = Path(str(args.output))
    if output.exists():
        output.unlink()
    output.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with _quiet(quiet), java_errors(f"SearchCollection {' '.join(argv)}"):
        h = handles()
        h.call(_run_and_close(), args)
    seconds = time.perf_counter() - t0
    if not output.exists():
        raise JavaError(f"SearchCollection wrote no run file {output} (argv: {' '.join(argv)})")
    return SearchCollectionRun(list(argv), str(output), seconds)


_run_and_close_handle = None
_handle_lock = threading.Lock()


def _run_and_close():
    """``args -> { sc = new SearchCollection(args); try { sc.run(); } finally { sc.close(); } }`` as one method
    handle, so that the ``SearchCollection`` never crosses into Python: pyjnius keeps the last object each Java
    method was called on referenced (its bound-method proxy holds it until that method is called on another object),
    which would keep a finished ``SearchCollection`` and all its topics (180 MB for 1,500 SciFact impact topics) on
    the heap until the next one replaced it."""
    global _run_and_close_handle
    with _handle_lock:
        if _run_and_close_handle is None:
            h = handles()
            with java_errors("composing SearchCollection's run handle"):
                mh, mt, cls = h.mh, h.mt, h.cls
                sc = cls("io.anserini.search.SearchCollection")
                void = autoclass("java.lang.Void").TYPE
                ctor = h.lookup.findConstructor(sc, mt.methodType(void,
                                                                  cls("io.anserini.search.SearchCollection$Args")))
                run = h.lookup.findVirtual(sc, "run", mt.methodType(void))
                close = mh.dropArguments(h.lookup.findVirtual(sc, "close", mt.methodType(void)), 0,
                                         cls("java.lang.Throwable"))  # (Throwable, SC) -> void: the finally block
                _run_and_close_handle = mh.filterArguments(mh.tryFinally(run, close), 0, ctor)
        return _run_and_close_handle


class _quiet:
    """Anserini's search loggers at WARN inside the block (restored to the root level after)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        if self.on:
            with java_errors("lowering SearchCollection's log level"):
                self._configurator = autoclass("org.apache.logging.log4j.core.config.Configurator")
                level = autoclass("org.apache.logging.log4j.Level")
                self._root = autoclass("org.apache.logging.log4j.LogManager").getRootLogger().getLevel()
                self._configurator.setLevel(SEARCH_LOGGER, level.WARN)

    def __exit__(self, *exc) -> None:
        if self.on:
            with java_errors("restoring SearchCollection's log level"):
                self._configurator.setLevel(SEARCH_LOGGER, self._root)


def write_tsv_topics(topics: Iterable[tuple[str, str]], path: str | os.PathLike) -> int:
    """Write ``qid<TAB>text`` lines (Anserini's ``TsvString`` topics); returns the number written.

    A query id that is empty or holds whitespace, or a text that is blank or holds a tab or line break, is refused
    (naming the query): ``SearchCollection`` would split it differently from the caller."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for qid, text in topics:
                if not qid or any(c.isspace() for c in qid):
                    raise InputError(f"{path}: query id {qid!r} is empty or holds whitespace")
                if not text.strip() or _BAD_TOPIC_CHARS.search(text):
                    raise InputError(f"{path}: query {qid}: text is blank or holds a tab or line break "
                                     "(normalise whitespace first)")
                f.write(f"{qid}\t{text}\n")
                n += 1
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return n


def pretokenized(weights: Mapping[str, int], qid: str = "query") -> str:
    """Anserini's pre-tokenised impact query: each term with a positive weight repeated ``weight`` times."""
    parts = []
    for term, w in weights.items():
        if w > 0:
            if not term or any(c.isspace() for c in term):
                raise InputError(f"query {qid}: term {term!r} is empty or holds whitespace (not a token)")
            parts.append(" ".join([term] * int(w)))
    return " ".join(parts)


# ---- memory ---------------------------------------------------------------------------------------------------

class JvmMemory:
    """The running JVM's heap (``MemoryMXBean`` and the heap's memory pools), in MiB."""

    def __init__(self) -> None:
        with java_errors("reading the JVM's memory beans"):
            factory = autoclass("java.lang.management.ManagementFactory")
            self._bean = factory.getMemoryMXBean()
            pools = factory.getMemoryPoolMXBeans()
            heap = autoclass("java.lang.management.MemoryType").HEAP
            self._pools = [p for p in (cast("java.lang.management.MemoryPoolMXBean", pools.get(i))
                                       for i in range(pools.size())) if p.getType().equals(heap)]

    def used_mb(self) -> float:
        """Heap in use now (live and not yet collected objects)."""
        return self._bean.getHeapMemoryUsage().getUsed() / MB

    def max_mb(self) -> float:
        """The heap's limit (``-Xmx``)."""
        return self._bean.getHeapMemoryUsage().getMax() / MB

    def committed_mb(self) -> float:
        return self._bean.getHeapMemoryUsage().getCommitted() / MB

    def gc_used_mb(self, rounds: int = 2) -> float:
        """Heap in use after ``System.gc()`` (``rounds`` times): what is still reachable."""
        for _ in range(rounds):
            self._bean.gc()
        return self.used_mb()

    def reset_peaks(self) -> None:
        for p in self._pools:
            p.resetPeakUsage()

    def pool_peaks_mb(self) -> dict[str, float]:
        """Peak use of each heap pool since :meth:`reset_peaks` (exact, but pools peak at different times)."""
        return {str(p.getName()): p.getPeakUsage().getUsed() / MB for p in self._pools}


def process_rss_mb() -> dict[str, float]:
    """This process's resident memory, Python and the JVM in it together, now and at its highest
    (``/proc/self/status``; ``getrusage`` elsewhere)."""
    out: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out["rss_mb" if key == "VmRSS" else "rss_peak_mb"] = int(value.split()[0]) / 1024
    except OSError:
        pass
    if "rss_peak_mb" not in out:
        import resource

        out["rss_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


@dataclass
class HeapSampler:
    """Samples the heap in use every ``interval`` seconds from a Python thread while the block runs; ``peak_mb`` is
    the highest sample (young-generation garbage included: the collector decides how much of it accumulates)."""

    memory: JvmMemory
    interval: float = setting(0.05, gt=0, unit="seconds", help="time between two heap samples")
    samples: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        validate(self)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _loop(self) -> None:
        try:
            while True:
                self.samples.append(self.memory.used_mb())
                if self._stop.wait(self.interval):
                    break
        except BaseException as e:  # reported by __exit__ in the caller's thread
            self._error = e
        finally:
            detach()

    def __enter__(self) -> HeapSampler:
        self._thread = threading.Thread(target=self._loop, name="lsr-heap-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.samples.append(self.memory.used_mb())
        if self._error is not None and exc[0] is None:
            raise JavaError(f"sampling the JVM heap: {self._error}") from self._error

    @property
    def peak_mb(self) -> float:
        return max(self.samples) if self.samples else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"peak_mb": round(self.peak_mb, 1), "samples": len(self.samples), "interval_s": self.interval}
