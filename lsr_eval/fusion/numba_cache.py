"""numba's on-disk cache of compiled functions, safe for processes that share it (pytest workers, a SLURM array).

numba adds a signature to a function's cache without a lock: two processes adding one at once can take the same
data file, and a later process then loads machine code compiled for other types (numba issue 10128)."""

from __future__ import annotations

import itertools
from types import ModuleType
from typing import Any, Callable, Iterable

try:
    import fcntl
except ImportError:  # Windows: numba's own saving
    fcntl = None


def locked_save(cache_file: Any) -> Callable[[Any, Any], None]:
    """A ``save(key, data)`` for numba's ``IndexDataCacheFile`` ``cache_file``: under the lock, with the data file
    written before the index refers to it."""

    def save(key: Any, data: Any) -> None:
        with open(f"{cache_file._index_path}.lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            overloads = cache_file._load_index()
            name = overloads.get(key)
            if name is None:
                taken = set(overloads.values())
                name = next(n for n in map(cache_file._data_name, itertools.count(1)) if n not in taken)
            cache_file._save_data(name, data)
            if overloads.get(key) != name:
                overloads[key] = name
                cache_file._save_index(overloads)

    return save


def module_functions(modules: Iterable[ModuleType]) -> list[Any]:
    """Everything the ``modules`` define at their top level (numba functions among them)."""
    return [value for module in modules for value in list(vars(module).values())]


def cache_on_disk(functions: Iterable[Any], enable: bool = False) -> int:
    """Lock the disk-cache saves (:func:`locked_save`) of the numba functions among ``functions``; ``enable``: first
    give one compiled without a cache a cache. Returns how many of them save to disk. Without ``fcntl``, or where
    numba finds no writable cache folder, a function keeps numba's own behaviour."""
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
        if fcntl is not None and not getattr(cache_file.save, "locked", False):
            cache_file.save = locked_save(cache_file)
            cache_file.save.locked = True
        saving.add(id(function))
    return len(saving)
