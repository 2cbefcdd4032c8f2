"""What a step costs: wall and CPU seconds, the process's resident memory and the in-process JVM's heap, sampled
from a thread; and interleaved (ABBA) timing of competing paths, so that machine load falls on each alike."""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

log = logging.getLogger(__name__)

MB = 1024 * 1024


def cpu_seconds() -> float:
    """CPU time of this process, every thread (Python's, the JVM's, native libraries') together."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_mb() -> float:
    """This process's resident memory now, MiB (its peak where the kernel does not say the current figure)."""
    from lsr_eval.anserini.search_collection import process_rss_mb

    now = process_rss_mb()
    return now.get("rss_mb", now["rss_peak_mb"])


def reset_peak_rss() -> bool:
    """Reset the kernel's peak RSS of this process (``VmHWM``) to its current RSS; False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Monitor:
    """One sampling thread for the whole process: resident memory and (once ``memory``, a
    :class:`~lsr_eval.anserini.search_collection.JvmMemory`, is attached) the JVM heap, every ``interval`` seconds,
    the maxima kept per stage (:meth:`stage`)."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.memory = None
        self._lock = threading.Lock()
        self._peak: dict[str, float] = {}
        self._samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lsr-memory-monitor", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        values = {"rss": rss_mb()}
        memory = self.memory
        if memory is not None:
            try:
                values["heap"], values["heap_committed"] = memory.used_mb(), memory.committed_mb()
            except Exception:  # noqa: BLE001 - sampling must never stop the measured work
                pass
        with self._lock:
            self._samples += 1
            for k, v in values.items():
                if v > self._peak.get(k, -1.0):
                    self._peak[k] = v

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self) -> None:
        self._stop.set()

    @contextlib.contextmanager
    def stage(self, record: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Time the block and fill ``record`` with seconds and memory peaks (also when the block raises)."""
        from lsr_eval.anserini.search_collection import process_rss_mb

        if self.memory is not None:
            self.memory.gc_used_mb(rounds=1)  # the stage's heap starts from live objects only (not timed)
        hwm_reset = reset_peak_rss()
        with self._lock:
            self._peak = {}
            self._samples = 0
        self._sample()
        record["rss_start_mb"] = round(rss_mb(), 1)
        if self.memory is not None:
            record["heap_start_mb"] = round(self.memory.used_mb(), 1)
        record["load_1min"] = round(os.getloadavg()[0], 2)
        t0 = time.perf_counter()
        cpu0 = cpu_seconds()
        try:
            yield record
        finally:
            record["seconds"] = round(time.perf_counter() - t0, 3)
            record["cpu_seconds"] = round(cpu_seconds() - cpu0, 3)
            self._sample()
            with self._lock:
                peak = dict(self._peak)
                samples = self._samples
            hwm = process_rss_mb()["rss_peak_mb"] if hwm_reset else None
            record["rss_peak_mb"] = round(max(peak.get("rss", 0.0), hwm or 0.0), 1)
            record["rss_peak_source"] = "VmHWM (reset at stage start) and samples" if hwm_reset else "samples"
            record["memory_samples"] = samples
            if "heap" in peak:
                record["heap_peak_mb"] = round(peak["heap"], 1)
                record["heap_committed_peak_mb"] = round(peak["heap_committed"], 1)
                record["heap_max_mb"] = round(self.memory.max_mb(), 1) if self.memory else None


@dataclass
class Measured:
    """One timed run of a path: its result and what it cost."""

    result: Any
    seconds: float
    cpu_seconds: float
    heap: dict[str, Any]
    load_1min: float
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                "load_1min_before": round(self.load_1min, 2), "heap": self.heap, **self.extra}


def measure(fn: Callable[[], Any], memory, interval: float) -> Measured:
    """Run ``fn`` timed (wall and CPU), with the JVM (``memory``, a
    :class:`~lsr_eval.anserini.search_collection.JvmMemory`) collected before, its heap sampled during, and the heap
    left after ``System.gc()`` (``fn``'s result still held) recorded."""
    from lsr_eval.anserini.search_collection import HeapSampler

    before = memory.gc_used_mb()
    memory.reset_peaks()
    load = os.getloadavg()[0]
    cpu0 = cpu_seconds()
    with HeapSampler(memory, interval) as sampler:
        t0 = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    peaks = memory.pool_peaks_mb()
    heap = {"before_mb": round(before, 1), "peak_sampled_mb": round(sampler.peak_mb, 1),
            "pool_peaks_mb": {k: round(v, 1) for k, v in peaks.items()},
            "after_gc_mb": round(memory.gc_used_mb(), 1)}
    return Measured(result, seconds, cpu, heap, load)


def abba(names: list[str], repeats: int) -> Iterator[tuple[int, str]]:
    """``(round, name)`` for every name ``repeats`` times, each round in the reverse order of the last (ABBA)."""
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            yield r, name


def alternate(paths: Mapping[str, Callable[[], Any]], repeats: int, memory, interval: float,
              on_result: Callable[[str, Any], None] | None = None) -> dict[str, list[Measured]]:
    """Every path ``repeats`` times through :func:`measure`, in ABBA order; ``on_result(name, result)`` sees each
    result as it comes, so that only one result per path need be kept."""
    names = list(paths)
    out: dict[str, list[Measured]] = {n: [] for n in names}
    for r, name in abba(names, repeats):
        m = measure(paths[name], memory, interval)
        log.info("%s run %d: %.2fs (cpu %.2fs), heap peak %.0f MB, after gc %.0f MB", name, r + 1, m.seconds,
                 m.cpu_seconds, m.heap["peak_sampled_mb"], m.heap["after_gc_mb"])
        if on_result is not None:
            on_result(name, m.result)
        m.result = None
        out[name].append(m)
    return out


def rotation(names: list[str], i: int) -> list[str]:
    """``names`` rotated by ``i``: the order of item ``i`` when every item runs every path, the order rotating at each
    item, so that machine load drifts evenly over the paths."""
    r = i % len(names)
    return names[r:] + names[:r]


def run_interleaved(items, paths: Mapping[str, Callable[[Any], Any]]) -> dict[str, list[Any]]:
    """Every path on every item (e.g. query), the order rotating at each item (:func:`rotation`); each path's results
    in item order."""
    names = list(paths)
    out: dict[str, list[Any]] = {n: [] for n in names}
    for i, item in enumerate(items):
        for name in rotation(names, i):
            out[name].append(paths[name](item))
    return out
