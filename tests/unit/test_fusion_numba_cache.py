"""lsr_eval.fusion.numba_cache: two processes adding signatures to one function's numba cache at once keep both."""

from __future__ import annotations

import threading
import time

from numba.core import caching as numba_caching

from lsr_eval.fusion.numba_cache import cache_on_disk, locked_save


def _racing_saves(tmp_path, locked: bool) -> dict:
    """Two writers (threads with their own cache objects, as two processes have) save signatures "a" and "b" of one
    function at once; what a third reader then loads. numba's own save: each reads the index before the other writes
    it (a barrier). Locked: the second waits for the lock, however long the first holds it."""
    both_read = threading.Barrier(2, timeout=10)

    def writer():
        cache = numba_caching.IndexDataCacheFile(cache_path=str(tmp_path), filename_base="f", source_stamp="s")
        read = cache._load_index

        def slow_read():
            index = read()
            if locked:
                time.sleep(0.3)
            else:
                both_read.wait()
            return index

        cache._load_index = slow_read
        if locked:
            cache.save = locked_save(cache)
        return cache

    threads = [threading.Thread(target=writer().save, args=(key, (key.upper(),))) for key in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reader = numba_caching.IndexDataCacheFile(cache_path=str(tmp_path), filename_base="f", source_stamp="s")
    return {key: reader.load(key) for key in ("a", "b")}


def test_numbas_own_save_loses_a_signature_that_the_locked_save_keeps(tmp_path):
    (tmp_path / "numba").mkdir()
    (tmp_path / "locked").mkdir()
    assert _racing_saves(tmp_path / "numba", locked=False) != {"a": ("A",), "b": ("B",)}
    assert _racing_saves(tmp_path / "locked", locked=True) == {"a": ("A",), "b": ("B",)}


def test_cache_on_disk_enables_and_locks_numba_functions_only():
    from numba import njit

    def add(x):  # pragma: no cover - compiled
        return x + 1

    compiled = njit(add)
    assert isinstance(compiled._cache, numba_caching.NullCache)
    assert cache_on_disk([compiled, add, "not a function"]) == 0  # no cache, not enabled: numba's own behaviour
    assert cache_on_disk([compiled, compiled], enable=True) == 1
    assert compiled._cache._cache_file.save.locked and compiled(1) == 2
