"""lsr_eval.fusion.numba_cache: two processes adding signatures to one function's numba cache at once keep both."""

from __future__ import annotations

import errno
import os
import threading
import time

from numba import config as numba_config
from numba import njit
from numba.core import caching as numba_caching

from lsr_eval.fusion import numba_cache
from lsr_eval.fusion.numba_cache import cache_on_disk, locked_save


def _racing_saves(folder, locked: bool) -> numba_caching.IndexDataCacheFile:
    """Two writers (threads with their own cache objects, as two processes have) save signatures "a" and "b" of one
    function at once; returns a third cache object over the same files. numba's own save: each reads the index
    before the other writes it (a barrier). Locked: the second waits for the lock, however long the first holds it,
    and the index never names a data file not yet written."""
    both_read = threading.Barrier(2, timeout=10)
    errors: list[BaseException] = []

    def writer(key: str) -> None:
        cache = numba_caching.IndexDataCacheFile(cache_path=str(folder), filename_base="f", source_stamp="s")
        read, write_index = cache._load_index, cache._save_index

        def slow_read():
            index = read()
            if locked:
                time.sleep(0.3)
            else:
                both_read.wait()
            return index

        def checked_write_index(overloads):
            missing = [n for n in overloads.values() if not os.path.exists(os.path.join(str(folder), n))]
            if missing:
                raise AssertionError(f"the index names {missing} before they are written")
            write_index(overloads)

        cache._load_index = slow_read
        if locked:
            cache._save_index = checked_write_index
            cache.save = locked_save(cache)
        try:
            cache.save(key, (key.upper(),))
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(key,)) for key in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return numba_caching.IndexDataCacheFile(cache_path=str(folder), filename_base="f", source_stamp="s")


def test_numbas_own_save_loses_a_signature_that_the_locked_save_keeps(tmp_path):
    (tmp_path / "numba").mkdir()
    (tmp_path / "locked").mkdir()
    lost = _racing_saves(tmp_path / "numba", locked=False)
    assert len(lost._load_index()) == 1  # both writers took f.1.nbc: the later index dropped the other's key
    kept = _racing_saves(tmp_path / "locked", locked=True)
    assert {key: kept.load(key) for key in ("a", "b")} == {"a": ("A",), "b": ("B",)}
    assert sorted(kept._load_index().values()) == ["f.1.nbc", "f.2.nbc"]


def _add(x):  # pragma: no cover - compiled
    return x + 1


def test_cache_on_disk_enables_and_locks_numba_functions_only(tmp_path, monkeypatch):
    monkeypatch.setattr(numba_config, "CACHE_DIR", str(tmp_path))  # read when a cache is made
    compiled = njit(_add)
    assert isinstance(compiled._cache, numba_caching.NullCache)
    assert cache_on_disk([compiled, _add, "not a function"]) == 0  # no cache, not enabled: numba's own behaviour
    assert cache_on_disk([compiled, compiled], enable=True) == 1
    assert compiled._cache._cache_file.save.locked and compiled(1) == 2  # compiled, then saved under the lock
    assert list(tmp_path.rglob("*_add*.nbi.lock")) and compiled._cache._cache_file._load_index()


def test_a_filesystem_without_locks_saves_as_numba_does(tmp_path, monkeypatch):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(numba_cache.fcntl, "flock", no_locks)
    cache = numba_caching.IndexDataCacheFile(cache_path=str(tmp_path), filename_base="f", source_stamp="s")
    cache.save = locked_save(cache)
    cache.save("a", ("A",))
    assert cache.load("a") == ("A",)
