"""NumPy dispatch for NeuronArray: NumPy functions (NEP 18) and ufuncs (NEP 13) run on trn_backend.

``numpy.einsum(a, b)`` with NeuronArrays runs on the contraction engine under the active precision context and
returns a NeuronArray. A NumPy function or ufunc without an entry here runs NumPy on the zero-copy host views
of arrays on the host (a function's result is NumPy's, a ufunc's comes back as NeuronArrays), and is a TypeError
naming the device for arrays elsewhere, rather than a silent copy of device data to the host.
``handled_functions()`` and ``handled_ufuncs()`` list what is handled; ``python -m trn_backend.numpy_dispatch``
prints that list as the Markdown in docs/numpy.md.

The table's entries live in one module per section of NumPy's reference (numpy.org/doc/stable/reference/routines):
``creation``, ``shape`` and ``joins`` (array manipulation), ``indexing``, ``sorting`` (sorting, searching and
counting), ``sets``, ``reductions``, ``statistics``, ``mathematical``, ``logic``, ``linalg``, ``einsum``, ``fft``,
``polynomials``, ``memory`` and ``io``; each module's docstring names its section and its rules. ``ufuncs`` holds
the NEP 13 table, ``_registry`` the NEP 18 table's machinery, ``_common`` the helpers several sections share.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .. import _array
from .._array import NeuronArray
from . import (  # noqa: F401  (register the table's entries)
    creation,
    einsum,
    fft,
    indexing,
    io,
    joins,
    linalg,
    logic,
    mathematical,
    memory,
    polynomials,
    reductions,
    sets,
    shape,
    sorting,
    statistics,
)
from ._registry import TABLE, dispatch, method, qualname
from .ufuncs import UFUNCS, array_ufunc, methods

__all__ = [
    "array_function",
    "array_ufunc",
    "handled_functions",
    "handled_ufuncs",
    "markdown",
    "register_dask",
    "BEGIN",
    "END",
]

# The generated section of docs/numpy.md lies between these lines.
BEGIN = "<!-- BEGIN GENERATED: python -m trn_backend.numpy_dispatch -->\n"
END = "<!-- END GENERATED -->"


def array_function(func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    """``NeuronArray.__array_function__``: the table's implementation of ``func``, or NotImplemented."""
    return dispatch(func, types, args, kwargs)


def register_dask() -> None:
    """Register NeuronArray in dask's per-chunk dispatch: ``dask.array.percentile`` looks its chunk function
    up by the chunk's type (only ndarray is registered); dask's own one calls np.percentile on the chunk, which
    the table runs here. dask's tables live in dask.array, whose import costs 0.4 s, so this runs where dask
    first hashes a NeuronArray (``NeuronArray.__dask_tokenize__``; percentile hashes its ``q`` as one), not at
    import."""
    from dask.array.dispatch import percentile_lookup
    from dask.array.percentile import _percentile

    percentile_lookup.register(NeuronArray, _percentile)  # a dict entry: registering again changes nothing


def handled_functions() -> list[str]:
    """Qualified names of the NumPy functions in the table (``numpy.sum``, ``numpy.linalg.norm``, ...)."""
    return sorted({qualname(f) for f in TABLE})


def handled_ufuncs() -> dict[str, tuple[str, ...]]:
    """Handled ufuncs by name, each with its handled methods (``__call__``, ``reduce``, ...)."""
    return {f"numpy.{u.__name__}": methods(u) for u in sorted(UFUNCS, key=lambda u: u.__name__)}


def _aliases(obj: Any, module: str) -> list[str]:
    """Other public names of ``obj`` in ``module`` (``numpy.concat`` for ``numpy.concatenate``)."""
    mod = importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(
            f"{module}.{n}"
            for n in dir(mod)
            if not n.startswith("_") and n != obj.__name__ and getattr(mod, n, None) is obj
        )


def _entry(name: str, obj: Any, module: str) -> str:
    aliases = _aliases(obj, module)
    return f"- `{name}`" + (f" (also {', '.join(f'`{a}`' for a in aliases)})" if aliases else "")


def markdown() -> str:
    """The generated section of docs/numpy.md: every handled function and ufunc, with NumPy's aliases."""
    functions_ = sorted(TABLE, key=qualname)
    ufuncs = sorted(UFUNCS, key=lambda u: u.__name__)
    lines = [f"### Functions ({len(functions_)})", ""]
    lines += [_entry(qualname(f), f, f.__module__) for f in functions_]
    lines += ["", f"### Ufuncs ({len(ufuncs)})", ""]
    lines += [
        _entry(f"numpy.{u.__name__}", u, "numpy") + ": " + ", ".join(f"`{m}`" for m in methods(u)) for u in ufuncs
    ]
    return "\n".join(lines) + "\n"


# The array object's NumPy protocols (it imports nothing above it; see _array.PROTOCOLS). ``array_function`` is
# ``dispatch`` itself: NumPy calls it for every function, and a forwarding call would cost a frame each time.
_array.PROTOCOLS.update(
    array_function=dispatch, array_ufunc=array_ufunc, register_dask=register_dask, like=creation.LIKE, method=method
)
