"""numba's on-disk cache of compiled functions, safe for processes that share it (pytest workers, a SLURM array).

numba adds a signature to a function's cache by reading its index, taking the first free data file, writing the
index, then the data, without a lock: two processes adding signatures at once can take one data file, and a later
process then loads machine code compiled for other types."""

from __future__ import annotations

import itertools
import os
from types import ModuleType
from typing import Any, Callable, Iterable

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows: numba's own saving
    fcntl = None


def _open_lock(path: str) -> int | None:
    """A descriptor of the lock file ``path`` (created if missing), read-write where allowed (NFS locks need it),
    else read-only (a file another user made); None where neither opens."""
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        try:
            return os.open(path, flags, 0o666)
        except OSError:
            continue
    return None


def locked_save(cache_file: Any) -> Callable[[Any, Any], None]:
    """A ``save(key, data)`` for numba's ``IndexDataCacheFile`` ``cache_file``: under an exclusive ``flock`` on
    ``<index>.lock``, with the data file written before the index names it. Where the lock cannot be opened or
    taken (a filesystem without locks), numba's own save. The lock serialises the processes of one node, and of
    several only where the filesystem's ``flock`` spans nodes (NFSv4; not Lustre's ``localflock``): elsewhere give
    each node its own ``NUMBA_CACHE_DIR``."""
    numba_save = cache_file.save
    if fcntl is None:
        return numba_save

    def save(key: Any, data: Any) -> None:
        fd = _open_lock(f"{cache_file._index_path}.lock")
        if fd is None:
            return numba_save(key, data)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # ENOLCK, ENOSYS: no locks here
                return numba_save(key, data)
            overloads = cache_file._load_index()
            name = overloads.get(key)
            if name is None:
                taken = set(overloads.values())
                name = next(n for n in map(cache_file._data_name, itertools.count(1)) if n not in taken)
            cache_file._save_data(name, data)
            if overloads.get(key) != name:
                overloads[key] = name
                cache_file._save_index(overloads)
        finally:
            os.close(fd)  # releases the lock

    save.locked = True
    return save


def module_functions(modules: Iterable[ModuleType], skip: Iterable[str] = ()) -> list[Any]:
    """The numba functions that ``modules`` define at their top level (not those they import), but ``skip``."""
    from numba.core.registry import CPUDispatcher

    skip = set(skip)
    return [value for module in modules for name, value in list(vars(module).items())
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__
            and name not in skip]


def cache_on_disk(functions: Iterable[Any], enable: bool = False) -> int:
    """Lock the disk-cache saves (:func:`locked_save`) of the numba functions among ``functions``; ``enable``: first
    give one compiled without a cache a cache. Returns how many of them save to disk. Where numba finds no writable
    cache folder, a function keeps numba's own behaviour."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    saving: set[int] = set()
    for function in functions:
        if not isinstance(function, CPUDispatcher) or id(function) in saving:
            continue
        if isinstance(function._cache, NullCache) and enable:
            try:
                function.enable_caching()
            except RuntimeError:  # numba: no cache folder for this install (read-only, no home)
                continue
        cache_file = getattr(function._cache, "_cache_file", None)
        if cache_file is None:
            continue
        if not getattr(cache_file.save, "locked", False):
            cache_file.save = locked_save(cache_file)
        saving.add(id(function))
    return len(saving)
