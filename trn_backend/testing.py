"""Support for testing code that uses trn_backend: ``reset_caches()``.

trn_backend caches what depends only on its arguments: the planner's plans and paths, parsed subscripts, the
precision registry's resolved modes and rankings, the mode-cost tables, and the fast path of compiled programs.
Results never depend on these caches, only speed does; a test that counts what a call computes (plans made,
kernel routes chosen), or that plants a cost table or changes the environment a cached answer was read from,
empties them first.
"""

from __future__ import annotations

import sys

from .contraction import COMPILED

__all__ = ["reset_caches"]


def reset_caches() -> None:
    """Empty every cache of trn_backend: each functools cache of its loaded modules (their public
    ``cache_clear``) and the fast path of compiled programs (``COMPILED.clear()``). The next calls compute
    their answers again (the same answers)."""
    for name, module in list(sys.modules.items()):
        if name != "trn_backend" and not name.startswith("trn_backend."):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name:
                value.cache_clear()
    COMPILED.clear()
