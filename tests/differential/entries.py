"""The entry points under test, enumerated from trn_backend's own registries (so one added later is covered, or
test_coverage fails until it has a recipe or an exclusion):

- ``numpy``: every NumPy function in the dispatch TABLE, called on NeuronArrays;
- ``fallback``: every NumPy function that has a namespace counterpart (``np.<name>``, ``np.linalg.<name>``,
  ``np.fft.<name>``) but is not in the TABLE, plus EXTRA_NUMPY: NumPy's host fallback must still hand back
  NeuronArrays... or it is a finding;
- ``namespace``: every public function of trn_backend, trn_backend.linalg and trn_backend.fft, against NumPy's
  function of the same name;
- ``ufunc``: every ufunc of numpy_dispatch.ufuncs.UFUNCS, called on NeuronArrays.

Operators are enumerated in test_operators.py from NeuronArray's own dunder methods.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import numpy as np

import trn_backend as xp
from trn_backend.numpy_dispatch._registry import TABLE
from trn_backend.numpy_dispatch.ufuncs import UFUNCS

from .recipes import ALIASES, RECIPES, Recipe


@dataclass(frozen=True)
class Entry:
    id: str  # "numpy:linalg.svd", "namespace:sum", "ufunc:arccos", "fallback:linalg.eigvals"
    name: str  # the recipe's (and differences table's) name: "linalg.svd", "sum", "acos"
    np_fn: Any  # NumPy's function, called on the ndarrays
    xp_fn: Any  # what is called on the NeuronArrays

    def __repr__(self) -> str:
        return self.id


def short_name(fn: Any) -> str:
    """``linalg.svd`` for numpy.linalg.svd, ``fft.rfft`` for numpy.fft.rfft, else the function's name."""
    module = getattr(fn, "__module__", "") or ""
    for sub in ("linalg", "fft"):
        if module.startswith(f"numpy.{sub}"):
            return f"{sub}.{fn.__name__}"
    return fn.__name__


def canonical(name: str) -> str:
    """NumPy's spelling -> the namespace's, the name recipes and differences are keyed by."""
    head, _, tail = name.rpartition(".")
    return f"{head}.{ALIASES.get(tail, tail)}" if head else ALIASES.get(name, name)


def namespace_functions() -> dict[str, Any]:
    """``name`` -> public function of trn_backend, trn_backend.linalg and trn_backend.fft (not classes, modules
    or dtypes)."""
    found = {}
    for prefix, module in (("", xp), ("linalg.", xp.linalg), ("fft.", xp.fft)):
        names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for n in names:
            value = getattr(module, n)
            if (
                callable(value)
                and not isinstance(value, type | types.ModuleType)
                and n not in ("annotations", "public")
            ):
                found[prefix + n] = value
    return found


def numpy_function(name: str) -> Any:
    head, _, tail = name.rpartition(".")
    module = getattr(np, head) if head else np
    for spelling in (tail, *[k for k, v in ALIASES.items() if v == tail]):
        fn = getattr(module, spelling, None)
        if callable(fn):
            return fn
    return None


# NumPy functions outside the table probed anyway: their host fallback must hand back NeuronArrays
EXTRA_NUMPY = (np.asfortranarray, np.linalg.eigvals, np.linalg.eig, np.linalg.matrix_rank)


def all_entries() -> list[Entry]:
    entries: dict[str, Entry] = {}
    table = set(TABLE)
    for fn in TABLE:
        name = short_name(fn)
        entries[f"numpy:{name}"] = Entry(f"numpy:{name}", canonical(name), fn, fn)
    for name, fn in namespace_functions().items():
        ref = numpy_function(name)
        entries[f"namespace:{name}"] = Entry(f"namespace:{name}", canonical(name), ref, fn)
        if (
            ref is not None
            and ref not in table
            and not isinstance(ref, np.ufunc)
            and f"namespace:{name}" not in EXCLUDED
        ):
            entries[f"fallback:{short_name(ref)}"] = Entry(f"fallback:{short_name(ref)}", canonical(name), ref, ref)
    for fn in EXTRA_NUMPY:
        if fn not in table:
            name = short_name(fn)
            entries[f"fallback:{name}"] = Entry(f"fallback:{name}", canonical(name), fn, fn)
    for ufunc, name in UFUNCS.items():
        entries[f"ufunc:{ufunc.__name__}"] = Entry(f"ufunc:{ufunc.__name__}", name, ufunc, ufunc)
    return sorted(entries.values(), key=lambda e: e.id)


# Entry points the harness does not draw, each with its reason. Everything else needs a recipe.
EXCLUDED: dict[str, str] = {
    **{
        f"numpy:{n}": "file I/O: reads or writes files, not a computation to compare (tests/numpy_dispatch)"
        for n in ("save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile")
    },
    **{
        f"namespace:{n}": "trn_backend-only API with no NumPy counterpart (precision, contraction engine, torch)"
        for n in (
            "contract",
            "contract_expression",
            "error_bound",
            "explain",
            "last_precision_report",
            "multi_einsum",
            "precision",
            "select_precision",
            "from_torch",
        )
    },
    "namespace:from_dlpack": "can abort the interpreter (negative strides): test_dlpack.py runs it in a subprocess",
    **{
        f"namespace:{n}": "takes dtypes, not arrays; returns dtype/info objects checked by tests/namespace"
        for n in ("can_cast", "result_type", "isdtype", "finfo", "iinfo", "broadcast_shapes")
    },
    "namespace:fft.fftfreq": "takes no array (n, d): tests/namespace/test_fft compares it",
    "namespace:fft.rfftfreq": "takes no array (n, d): tests/namespace/test_fft compares it",
    "namespace:linspace": "takes no array; tests/namespace compares it",
}


def recipe_for(entry: Entry) -> Recipe | None:
    """The namespace's creation functions take ``device=`` where NumPy's take ``like=``: they have their own
    recipes (``namespace.<name>``); everything else shares the recipe of its name."""
    kind = entry.id.split(":", 1)[0]
    return RECIPES.get(f"{kind}.{entry.name}") or RECIPES.get(entry.name)
