"""lsr_eval.fusion.ranx_runs.import_ranx: what ranx and we call on numba's typed dicts and lists from Python
compiles once per cache folder and CPU, not once per process."""

from __future__ import annotations

from lsr_eval.fusion.ranx_runs import UNCACHED_HELPERS, import_ranx


def test_numba_typed_container_helpers_are_compiled_into_the_disk_cache():
    """A list of an item type no other test makes is found in numba's cache right after it is made."""
    from numba import types
    from numba.typed import List, typedlist

    import_ranx()
    helpers = (typedlist._make_list, typedlist._append)
    before = [set(h.signatures) for h in helpers]
    List.empty_list(types.Tuple((types.int16, types.float32, types.boolean))).append((1, 0.5, True))
    compiled = [(h, sig) for h, old in zip(helpers, before) for sig in h.signatures if sig not in old]
    assert len(compiled) == 2, compiled
    for helper, sig in compiled:
        assert helper._cache.load_overload(sig, helper.targetctx) is not None, helper.py_func.__qualname__


def test_ranx_kernels_and_every_typed_container_helper_but_sort_save_under_the_lock():
    import sys

    from numba.core.caching import NullCache
    from numba.typed import typeddict, typedlist

    from lsr_eval.fusion.numba_cache import module_functions

    import_ranx()
    helpers = module_functions([typeddict, typedlist])
    assert len(helpers) > 30
    for helper in helpers:
        skipped = helper.py_func.__name__ in UNCACHED_HELPERS
        assert isinstance(helper._cache, NullCache) == skipped, helper.py_func.__qualname__
        assert skipped or helper._cache._cache_file.save.locked
    assert sys.modules["ranx.fusion.rrf"]._rrf_score._cache._cache_file.save.locked
