"""NumPy's "Array creation routines": from shape or value (empty, zeros, ones, full, the *_like functions, eye,
identity), from existing data (array, asarray, asanyarray, ascontiguousarray, require, copy, astype, fromfunction,
and the host readers frombuffer, fromiter, fromfile, loadtxt and genfromtxt, which NumPy also lists under "Input and
output"), numerical ranges (arange, meshgrid) and building matrices (tri, tril, triu; diag and diagflat are in
``indexing``).

NumPy hands ``np.zeros(3, like=x)`` to x's __array_function__ without ``like``; NeuronArray puts ``like=x`` back
(for the functions in LIKE), so each implementation here knows the array whose device the result lands on. Dtypes
are NumPy's, inferred as NumPy does, except that NumPy's default float64 (no dtype given) is the device's default
float: float32 on a Neuron device, which has no float64. NeuronArrays are C-ordered: an order or a requirement that
C order cannot meet is a ValueError.
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from .. import _device, _dtypes
from .._array import wrap
from .._helpers import float_to_int
from .._scalars import PY_SCALARS, check_fill_int, convert_scalar
from ._common import A, _at_least, _shape
from ._registry import TABLE, Binder, implements, numpy_dtype, qualname, to_dtype, xp

LIKE: set[Callable[..., Any]] = set()


def _creation(*np_funcs: Callable[..., Any], dtypes: str = "dtype") -> Callable[[Callable[..., Any]], Any]:
    """Register a creation function reached through ``like=`` (and list it in LIKE)."""
    LIKE.update(np_funcs)
    return implements(*np_funcs, dtypes=dtypes)


def _target_device(like: A, device: Any, func: str) -> torch.device:
    """``device`` if given, else like's."""
    return like.device if device is None else _device.normalize(device, f"{func}() device")


def _default_dtype(numpy_default: torch.dtype, device: torch.device) -> torch.dtype:
    """The dtype a call without ``dtype=`` gets: NumPy's, its float64 and complex128 the device's defaults."""
    if numpy_default is _dtypes.float64:
        return _dtypes.default_float(device)
    if numpy_default is _dtypes.complex128:
        return _dtypes.default_complex(device)
    return numpy_default


def _from_host(a: np.ndarray, device: torch.device, dtype_given: bool, copy: bool | None = None) -> A:
    """The NumPy array ``a`` on ``device`` (its memory shared on the CPU where copy allows); NumPy's default
    floats become the device's where no dtype was given."""
    source = xp.asarray(a, device=device, copy=copy)
    target = source._t.dtype if dtype_given else _default_dtype(source._t.dtype, device)
    return source if target is source._t.dtype else xp.astype(source, target)


def _numpy_dtype(dtype: torch.dtype | None) -> np.dtype | None:
    return None if dtype is None else numpy_dtype(dtype)


def _asks_for_dtype(dtype: Any) -> bool:
    """Whether a dtype argument names a dtype: NumPy's Python-level creation functions pass on their default
    along with like= (None, or the type float for eye, tri, fromfunction and the text readers)."""
    return dtype is not None and dtype is not float


def _dtype_or_default(dtype: Any, device: torch.device, func: str) -> torch.dtype:
    """A dtype argument of a function whose NumPy default is float64: the device's default float unless it
    names a dtype."""
    return to_dtype(dtype, func) if _asks_for_dtype(dtype) else _default_dtype(_dtypes.float64, device)


def _check_order(order: str | None, func: str) -> None:
    if order not in (None, "K", "A", "C"):
        raise ValueError(f"{func}(): order={order!r} cannot be met: NeuronArrays are C-ordered (use 'C', 'K' or 'A')")


# ---------------------------------------------------------------- from shape or value


def _filled(fill: str, shape: Any, dtype: torch.dtype | None, like: A, device: Any) -> A:
    """The namespace's empty, zeros or ones, in NumPy's default float unless a dtype is given."""
    dev = _target_device(like, device, f"numpy.{fill}")
    dtype = _default_dtype(_dtypes.float64, dev) if dtype is None else dtype
    return getattr(xp, fill)(_shape(shape), dtype=dtype, device=dev)


@_creation(np.empty)
def empty(shape: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.empty(..., like=x): on x's device."""
    return _filled("empty", shape, dtype, like, device)


@_creation(np.zeros)
def zeros(shape: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.zeros(..., like=x): on x's device."""
    return _filled("zeros", shape, dtype, like, device)


@_creation(np.ones)
def ones(shape: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.ones(..., like=x): on x's device."""
    return _filled("ones", shape, dtype, like, device)


@_creation(np.full)
def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.full(..., like=x): the dtype is fill_value's unless given (NumPy's rule); fill_value may be an
    array, broadcast to shape."""
    dev = _target_device(like, device, "numpy.full")
    if isinstance(fill_value, A):
        fill = xp.asarray(fill_value, dtype=dtype, device=dev)
    elif type(fill_value) in PY_SCALARS and dtype is not None:
        # a Python scalar converts once to the dtype, as NumPy stores it (range-checked; NumPy's own conversion
        # rounds large ints through float64, and ml_dtypes' bfloat16 refuses ints beyond int64)
        check_fill_int(fill_value, to_dtype(dtype, "numpy.full"), "numpy.full")
        fill = wrap(convert_scalar(fill_value, dtype, dev, "numpy.full"))
    else:
        fill = _from_host(np.asarray(fill_value, dtype=_numpy_dtype(dtype)), dev, dtype is not None)
    return xp.asarray(xp.broadcast_to(fill, _shape(shape)), copy=True)


def _like(fill: str, a: A, dtype: Any, shape: Any, device: Any, *fill_value: Any, order: str = "K") -> A:
    """``fill`` (zeros, ones, empty, full) shaped like ``a``: the namespace's ``<fill>_like``, unless ``shape``
    is given. NeuronArrays are C-ordered, which orders K, A and C all give."""
    _check_order(order, f"numpy.{fill}_like")
    if shape is None:
        return getattr(xp, f"{fill}_like")(a, *fill_value, dtype=dtype, device=device)
    dtype = a.dtype if dtype is None else dtype
    device = a.device if device is None else device
    return getattr(xp, fill)(_shape(shape), *fill_value, dtype=dtype, device=device)


@implements(np.zeros_like, arrays="a")
def zeros_like(a: A, dtype: Any = None, order: str = "K", shape: Any = None, device: Any = None) -> A:
    """numpy.zeros_like (on a's device unless device= says otherwise)."""
    return _like("zeros", a, dtype, shape, device, order=order)


@implements(np.ones_like, arrays="a")
def ones_like(a: A, dtype: Any = None, order: str = "K", shape: Any = None, device: Any = None) -> A:
    """numpy.ones_like."""
    return _like("ones", a, dtype, shape, device, order=order)


@implements(np.empty_like, arrays="prototype")
def empty_like(prototype: A, dtype: Any = None, order: str = "K", shape: Any = None, device: Any = None) -> A:
    """numpy.empty_like."""
    return _like("empty", prototype, dtype, shape, device, order=order)


@implements(np.full_like, arrays="a")
def full_like(a: A, fill_value: Any, dtype: Any = None, order: str = "K", shape: Any = None, device: Any = None) -> A:
    """numpy.full_like: the value is cast to the result's dtype as NumPy casts it (1.9 fills an int array with 1).
    A Python int must fit the dtype (OverflowError, as in NumPy); a float into an integer dtype is truncated, and
    NaN or a float beyond the dtype is refused (NumPy stores an undefined value there)."""
    target = a._t.dtype if dtype is None else to_dtype(dtype, "numpy.full_like")
    if isinstance(fill_value, (float, np.floating)) and target in _dtypes.INTEGER:
        fill_value = float_to_int(float(fill_value), target, "numpy.full_like()")
    # a Python int (or bool) goes as it is: the namespace range-checks it against the dtype
    if not isinstance(fill_value, (A, builtins.bool, int)):
        # a 0-d array on the result's device: cast to the result's dtype, not refused
        fill_value = xp.asarray(np.asarray(fill_value), device=a.device if device is None else device)
    return _like("full", a, dtype, shape, device, fill_value, order=order)


@_creation(np.eye, dtypes="")
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None, like: A) -> A:
    """numpy.eye(..., like=x)."""
    dev = _target_device(like, device, "numpy.eye")
    return xp.eye(N, M, k=k, dtype=_dtype_or_default(dtype, dev, "numpy.eye"), device=dev)


@_creation(np.identity)
def identity(n: int, dtype: Any = None, *, like: A) -> A:
    """numpy.identity(..., like=x)."""
    return eye(n, dtype=dtype, like=like)


# ---------------------------------------------------------------- from existing data


def _converted(a: Any, dtype: torch.dtype | None, device: torch.device, copy: bool | None) -> A:
    """``a`` as a NeuronArray on ``device``: a NeuronArray is converted on the devices; other data goes
    through NumPy, so its dtype is inferred as NumPy does ([1.0] is float64, [1] int64)."""
    if isinstance(a, A):
        if dtype is not None and copy is not False:  # (copy=False refuses any dtype change: the namespace's error)
            a = real_part_if_narrowing(a, dtype)  # NumPy's unsafe cast: complex to real keeps the real part
        return xp.asarray(a, dtype=dtype, device=device, copy=copy)
    # copy=False refuses data NumPy must convert (lists, other dtypes) with NumPy's own ValueError
    host = np.asarray(a, dtype=_numpy_dtype(dtype), copy=False if copy is False else None)
    fresh = host is not a and host.base is None  # made here (not a's memory): no second copy is needed
    return _from_host(host, device, dtype is not None, copy=None if fresh else copy)


@_creation(np.array)
def array(
    object: Any, dtype: Any = None, *, copy: bool | None = True, order: str | None = "K", ndmin: int = 0, like: A
) -> A:
    """numpy.array(..., like=x): a copy unless copy=False or None allows sharing, at least ndmin dimensions."""
    _check_order(order, "numpy.array")
    result = _converted(object, dtype, like.device, copy)
    return result if result.ndim >= ndmin else xp.reshape(result, (1,) * (ndmin - result.ndim) + result.shape)


@_creation(np.asarray, np.asanyarray)
def asarray(
    a: Any, dtype: Any = None, order: str | None = None, *, device: Any = None, copy: bool | None = None, like: A
) -> A:
    """numpy.asarray / numpy.asanyarray(..., like=x): on x's device, memory shared where possible."""
    _check_order(order, "numpy.asarray")
    return _converted(a, dtype, _target_device(like, device, "numpy.asarray"), copy)


@_creation(np.ascontiguousarray)
def ascontiguousarray(a: Any, dtype: Any = None, *, like: A) -> A:
    """numpy.ascontiguousarray(..., like=x): a NeuronArray made here is C-contiguous, at least 1-d."""
    result = _converted(a, dtype, like.device, None)
    if not result._t.is_contiguous():
        result = A(result._t.contiguous())
    return _at_least(result, 1)


@_creation(np.asfortranarray)
def asfortranarray(a: Any, dtype: Any = None, *, like: A) -> A:
    """numpy.asfortranarray(..., like=x): on x's device, at least 1-d, its memory in Fortran order (the first
    axis varying fastest; a copy where it was not). Without like=, NumPy converts a NeuronArray to an ndarray
    itself: this function is not one that NumPy dispatches on its argument."""
    result = _at_least(_converted(a, dtype, like.device, None), 1)
    t = result._t
    reverse = tuple(range(t.dim() - 1, -1, -1))
    if t.permute(reverse).is_contiguous():
        return result
    return A(t.permute(reverse).contiguous().permute(reverse))


_REQUIREMENTS = {
    "C": "C",
    "C_CONTIGUOUS": "C",
    "CONTIGUOUS": "C",
    "F": "F",
    "F_CONTIGUOUS": "F",
    "FORTRAN": "F",
    "A": "A",
    "ALIGNED": "A",
    "W": "W",
    "WRITEABLE": "W",
    "O": "O",
    "OWNDATA": "O",
    "E": "E",
    "ENSUREARRAY": "E",
}


@_creation(np.require)
def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: A) -> A:
    """numpy.require(..., like=x): every NeuronArray made here is aligned, writeable and an array; 'C' makes it
    contiguous, 'O' a copy (memory no other array or buffer uses); 'F' is met only by arrays of fewer than 2
    dimensions."""
    if isinstance(requirements, str):
        requirements = [requirements]
    flags = set()
    for r in requirements or ():
        flag = _REQUIREMENTS.get(str(r).upper())
        if flag is None:
            raise KeyError(f"numpy.require(): unknown requirement {r!r}; use C, F, A, W, O or E")
        flags.add(flag)
    result = _converted(a, dtype, like.device, True if "O" in flags else None)
    if "F" in flags and result.ndim > 1:
        raise ValueError(
            f"numpy.require(): requirement 'F' cannot be met: NeuronArrays are C-ordered (shape {result.shape})"
        )
    if "C" in flags and not result._t.is_contiguous():
        return A(result._t.contiguous())
    return result


@implements(np.copy, arrays="a")
def copy(a: A) -> A:
    """numpy.copy: a new array on the same device."""
    return xp.asarray(a, copy=True)


@implements(np.astype, arrays="x")
def astype(x: A, dtype: Any, /, *, copy: bool = True, device: Any = None) -> A:
    """numpy.astype: NumPy's unsafe cast, so complex to real keeps the real part with a ComplexWarning (the
    namespace's astype refuses that, as the standard asks)."""
    return xp.astype(real_part_if_narrowing(x, dtype), dtype, copy=copy, device=device)


def real_part_if_narrowing(x: A, dtype: Any) -> A:
    """x, or its real part with NumPy's ComplexWarning where ``dtype`` is real numeric and x complex (into bool
    a complex number casts by its truth, both parts, without a warning in NumPy and in the namespace)."""
    target = _dtypes.to_dtype(dtype)
    if x._t.dtype in _dtypes.COMPLEX_FLOAT and target not in _dtypes.COMPLEX_FLOAT and target is not _dtypes.bool:
        warnings.warn(
            "Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning, stacklevel=4
        )
        return xp.real(x)
    return x


@_creation(np.fromfunction, dtypes="")
def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = None, like: A) -> Any:
    """numpy.fromfunction(..., like=x): ``function`` called with one index array per axis, NeuronArrays on
    x's device (broadcast views, as dense as NumPy's to the function). Keyword arguments for ``function``
    are not supported."""
    dtype = _dtype_or_default(dtype, like.device, "numpy.fromfunction")
    shape = _shape(shape)
    grids = []
    for axis, n in enumerate(shape):
        index = xp.arange(n, dtype=dtype, device=like.device)
        index = xp.reshape(index, tuple(n if i == axis else 1 for i in range(len(shape))))
        grids.append(xp.broadcast_to(index, shape))
    return function(*grids)


def _host_reader(np_func: Callable[..., Any]) -> None:
    """Register a NumPy function that builds an array from host data (files, buffers, iterators): NumPy reads
    it, with every argument NumPy takes, and the result moves to like's device."""
    signature = inspect.signature(np_func)
    name = qualname(np_func)

    def impl(**given: Any) -> A:
        like = given.pop("like")
        host = np_func(**given)
        if not isinstance(host, np.ndarray) or host.dtype.names is not None:
            raise TypeError(
                f"{name}(..., like=NeuronArray) read {type(host).__name__} of dtype "
                f"{getattr(host, 'dtype', None)}; a NeuronArray holds plain numeric arrays only"
            )
        return _from_host(host, like.device, _asks_for_dtype(given.get("dtype")))

    impl.__signature__ = signature  # type: ignore[attr-defined]
    impl.__name__ = np_func.__name__
    impl.__doc__ = f"{name}(..., like=x): read by NumPy on the host, the result on x's device."
    _creation(np_func, dtypes="")(impl)


for _reader in (np.frombuffer, np.fromiter, np.fromfile, np.loadtxt, np.genfromtxt):
    _host_reader(_reader)


# ---------------------------------------------------------------- numerical ranges


def _arange_dtype(values: Sequence[Any]) -> torch.dtype:
    """NumPy's arange dtype: at least the default integer, promoted with each given value's dtype."""
    found = np.dtype(np.intp)
    for v in values:
        found = np.promote_types(found, np.asarray(v).dtype)
    return to_dtype(found, "numpy.arange")


def _python_number(value: Any) -> Any:
    """A NumPy scalar or 0-d array as the Python number the namespace's arange takes."""
    return np.asarray(value).item() if isinstance(value, (np.generic, A)) else value


@_creation(np.arange)
def arange(
    start: Any = None, stop: Any = None, step: Any = None, dtype: Any = None, *, device: Any = None, like: A
) -> A:
    """numpy.arange(..., like=x): NumPy's dtype (int64 for integers, float64 for floats); one bound is the
    stop, by position or by name."""
    if start is None and stop is None:
        raise TypeError("numpy.arange() needs a stop value")
    dev = _target_device(like, device, "numpy.arange")
    given = [v for v in (start, stop, step) if v is not None]
    dtype = _default_dtype(_arange_dtype(given), dev) if dtype is None else dtype
    if stop is None or start is None:  # one bound: the stop
        start, stop = 0, start if stop is None else stop
    start, stop, step = (_python_number(v) for v in (start, stop, 1 if step is None else step))
    return xp.arange(start, stop, step, dtype=dtype, device=dev)


# NumPy's text signature for arange, (start_or_stop, /, stop=None, step=1, *, dtype=None, ...), is not what its
# parser takes: start, stop, step and dtype bind by position or by name (dask passes dtype fourth). The table
# binds calls with the implementation's signature, which is the parser's.
TABLE[np.arange] = dataclasses.replace(TABLE[np.arange], binder=Binder(inspect.signature(arange)))


@implements(np.meshgrid, arrays="xi")
def meshgrid(*xi: A, copy: bool = True, indexing: str = "xy") -> tuple[A, ...]:
    """numpy.meshgrid (dense; copy=False gives broadcast views)."""
    grids = xp.meshgrid(*xi, indexing=indexing)
    return tuple(xp.asarray(g, copy=True) for g in grids) if copy else tuple(grids)


# ---------------------------------------------------------------- building matrices


@_creation(np.tri, dtypes="")
def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, like: A) -> A:
    """numpy.tri(..., like=x): ones at and below the k-th diagonal."""
    dtype = _dtype_or_default(dtype, like.device, "numpy.tri")
    return xp.tril(xp.ones((N, N if M is None else M), dtype=dtype, device=like.device), k=k)


@implements(np.tril, arrays="m")
def tril(m: A, k: int = 0) -> A:
    """numpy.tril (a 1-d m is read as the square matrix of its rows, as in NumPy)."""
    return xp.tril(_square_if_vector(m), k=k)


@implements(np.triu, arrays="m")
def triu(m: A, k: int = 0) -> A:
    """numpy.triu (a 1-d m is read as the square matrix of its rows, as in NumPy)."""
    return xp.triu(_square_if_vector(m), k=k)


def _square_if_vector(m: A) -> A:
    return xp.broadcast_to(m, (m.shape[0], m.shape[0])) if m.ndim == 1 else m
