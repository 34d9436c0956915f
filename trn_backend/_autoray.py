"""autoray registration of trn_backend (used by cotengra, quimb and other autoray-based code).

autoray finds the functions for a NeuronArray by name in the ``trn_backend`` namespace (``autoray.do("einsum", ...)``
is ``trn_backend.einsum``, contractions included: they go through the planner). autoray's convention is NumPy's
signatures, so where the namespace lacks a name or takes different arguments (the array API's keyword-only
``axis=``, ``permute_dims`` for ``transpose``), the name is registered here: mostly as the NumPy function itself,
which runs on trn_backend through the NEP 18 table (``trn_backend.numpy_dispatch``), so NumPy's semantics hold and
results stay NeuronArrays on the array's device. Nothing here runs unless autoray is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from . import _namespace as xp
from ._array import NeuronArray

BACKEND = "trn_backend"

# Names whose NumPy function autoray should call: the namespace lacks them, or its version takes other arguments
# (``do("sum", x, 0)`` passes the axis by position). Each NumPy function is in the dispatch table, so the call runs
# on trn_backend (tests/ecosystem/test_autoray.py checks the table has every one).
NUMPY_NAMES = (
    "all",
    "allclose",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "array_split",
    "clip",
    "concatenate",
    "copy",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "diag",
    "diagonal",
    "dot",
    "expand_dims",
    "flip",
    "inner",
    "isclose",
    "kron",
    "max",
    "mean",
    "min",
    "moveaxis",
    "nonzero",
    "outer",
    "power",
    "prod",
    "ravel",
    "real",
    "imag",
    "repeat",
    "roll",
    "round",
    "sort",
    "split",
    "squeeze",
    "stack",
    "std",
    "sum",
    "swapaxes",
    "take",
    "tile",
    "trace",
    "var",
    "vdot",
    "where",
)
NUMPY_LINALG_NAMES = ("norm", "lstsq")


def transpose(a: NeuronArray, axes: Sequence[int] | None = None) -> NeuronArray:
    """NumPy's transpose (reversed axes by default, negative axes allowed) as one permute_dims: contractions call
    it on every step, so it skips the NumPy dispatch."""
    if axes is None:
        return xp.permute_dims(a, tuple(range(a.ndim - 1, -1, -1)))
    return xp.permute_dims(a, tuple(int(i) + a.ndim if int(i) < 0 else int(i) for i in axes))


def reshape(a: NeuronArray, newshape: int | Sequence[int]) -> NeuronArray:
    """NumPy's reshape (an int or a sequence) as the namespace's, for the same reason as transpose."""
    return xp.reshape(a, (int(newshape),) if isinstance(newshape, int) else tuple(int(d) for d in newshape))


def astype(x: NeuronArray, dtype: Any, copy: bool = True) -> NeuronArray:
    """autoray's astype: ``dtype`` in any spelling NumPy reads (``"float32"``, ``np.float32``)."""
    return xp.astype(x, dtype, copy=copy)


def complex_from_parts(re: NeuronArray, im: NeuronArray) -> NeuronArray:
    """autoray's complex(re, im): float64 parts give complex128, float32 parts complex64."""
    return xp.add(re, xp.multiply(im, 1j))


def svd(x: NeuronArray, full_matrices: bool = False) -> Any:
    """autoray's linalg.svd: the reduced decomposition by default, as autoray registers NumPy's."""
    return xp.linalg.svd(x, full_matrices=full_matrices)


def _filled(name: str) -> Any:
    """zeros, ones or empty with NumPy's positional dtype; autoray injects like's dtype and device."""

    def create(shape: Any, dtype: Any = None, *, device: Any = None) -> NeuronArray:
        return getattr(xp, name)(shape, dtype=dtype, device=device)

    create.__name__ = name
    create.__doc__ = f"numpy.{name}(shape, dtype) on trn_backend (device= where given)."
    return create


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> NeuronArray:
    """numpy.full(shape, fill_value, dtype) on trn_backend."""
    return xp.full(shape, fill_value, dtype=dtype, device=device)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None) -> NeuronArray:
    """numpy.eye(N, M, k, dtype) on trn_backend."""
    return xp.eye(N, M, k=k, dtype=dtype, device=device)


def identity(n: int, dtype: Any = None, *, device: Any = None) -> NeuronArray:
    """numpy.identity(n, dtype) on trn_backend."""
    return xp.eye(n, dtype=dtype, device=device)


def array(obj: Any, dtype: Any = None, *, device: Any = None) -> NeuronArray:
    """numpy.array on trn_backend: always a new array."""
    return xp.asarray(obj, dtype=dtype, device=device, copy=True)


def asarray(obj: Any, dtype: Any = None, *, device: Any = None) -> NeuronArray:
    """numpy.asarray on trn_backend: memory shared where possible."""
    return xp.asarray(obj, dtype=dtype, device=device)


# creation routines: autoray passes ``like``'s device (and dtype, except to array/asarray) when given an array
CREATION = {
    "zeros": _filled("zeros"),
    "ones": _filled("ones"),
    "empty": _filled("empty"),
    "full": full,
    "eye": eye,
    "identity": identity,
    "array": array,
    "asarray": asarray,
}
DIRECT = {"transpose": transpose, "reshape": reshape, "complex": complex_from_parts, "linalg.svd": svd}


def register() -> None:
    """Register trn_backend with autoray (called at import when autoray is installed)."""
    import autoray

    autoray.register_backend(NeuronArray, BACKEND)
    for name in NUMPY_NAMES:
        autoray.register_function(BACKEND, name, module="numpy")
    for name in NUMPY_LINALG_NAMES:
        autoray.register_function(BACKEND, f"linalg.{name}", module="numpy.linalg")
    for name, fn in DIRECT.items():
        autoray.register_function(BACKEND, name, fn)
    for name, fn in CREATION.items():
        autoray.register_function(BACKEND, name, fn)
        autoray.register_function(BACKEND, name, inject_dtype=name not in ("array", "asarray"), inject_device=True)
    autoray.astype.register(BACKEND, astype)


if importlib.util.find_spec("autoray") is not None:
    register()
