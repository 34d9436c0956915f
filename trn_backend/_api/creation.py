"""Creation functions of the standard.

New arrays go to ``device=`` (a torch.device or a string) or the default device. ``asarray`` and
``from_dlpack`` share memory with NumPy arrays and tensors where the standard's ``copy`` keyword allows it.
uint16/32/64 are built through their compute dtypes (``_dtypes``), so every value of the type round-trips.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
import torch

from .. import _device, _dtypes
from .._dtypes import via_compute
from .._helpers import (
    PY_SCALARS,
    NeuronArray,
    as_py_scalar,
    check_float_to_int,
    from_numpy,
    holdable,
    tensor,
    tensors,
    wrap,
)
from .._scalars import check_fill_int, convert_scalar, float_to_int, int_value
from .data_types import check_castable, convert, promoted

__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "from_torch",
    "full",
    "full_like",
    "linspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]

Device = torch.device | str | None
Shape = int | tuple[int, ...]
# NumPy dtypes asarray takes (either byte order: non-native ones are copied)
# ---------------------------------------------------------------- arguments


def _device_arg(device: Device, func: str) -> torch.device:
    return _device.default_device() if device is None else _device.normalize(device, f"{func}() device")


def _dtype_arg(dtype: object, func: str, default: torch.dtype) -> torch.dtype:
    return default if dtype is None else _dtypes.to_dtype(dtype, f"{func}() dtype")


def _zero_d(value: object) -> object:
    """A 0-d array's value as a Python scalar (NumPy takes a 0-d array wherever it takes a number); anything else
    as it is."""
    if isinstance(value, NeuronArray) and value.ndim == 0:
        return value._scalar("argument")
    return value


def int_arg(value: object, func: str, arg: str, *, minimum: int | None = None) -> int:
    """A Python int argument (NumPy integers and 0-d integer arrays accepted), optionally bounded below."""
    value = _zero_d(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{func}(): {arg} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{func}(): {arg} must be at least {minimum}, got {value}")
    return int(value)


def int_tuple(value: object, func: str, arg: str, *, minimum: int | None = None) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of Python ints (shapes, repetitions)."""
    value = _zero_d(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{func}(): {arg} must be an int or a tuple of ints, got {type(value).__name__}")
    return tuple(int_arg(v, func, f"{arg} {tuple(value)}", minimum=minimum) for v in value)


def _shape_arg(shape: object, func: str) -> tuple[int, ...]:
    return int_tuple(shape, func, "shape", minimum=0)


def _number(value: object, func: str, arg: str, kinds: tuple[type, ...]) -> bool | int | float | complex:
    """A Python (or NumPy) scalar argument, or a 0-d array, of one of ``kinds``; bool is not a number here."""
    value = as_py_scalar(_zero_d(value))
    if isinstance(value, bool) or not isinstance(value, kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise TypeError(f"{func}(): {arg} must be a Python {names}, got {type(value).__name__}")
    return cast("bool | int | float | complex", value)  # one of kinds, which are numbers (checked just above)


def _scalars_dtype(values: Sequence[object], device: torch.device) -> torch.dtype:
    """The default dtype on ``device`` for Python scalars: complex > float > int > bool; no values -> float."""
    kinds = {type(v) for v in values}
    if complex in kinds:
        return _dtypes.default_complex(device)
    if float in kinds or not values:
        return _dtypes.default_float(device)
    if int in kinds:
        return _dtypes.default_int()
    return _dtypes.bool


# ---------------------------------------------------------------- asarray and from_dlpack


def from_torch(tensor: torch.Tensor, /) -> NeuronArray:
    """A NeuronArray holding ``tensor`` itself (beyond the standard): no copy, on the tensor's device, and
    writes through either are seen by the other. ``x.to_torch()`` goes the other way."""
    return wrap(holdable(tensor, "from_torch()"))


def asarray(
    obj: object, /, *, dtype: _dtypes.DType | None = None, device: Device = None, copy: bool | None = None
) -> NeuronArray:
    """Convert arrays, tensors, NumPy data, DLPack or buffer objects, Python scalars and nested sequences.

    Arrays and tensors stay on their device; other data goes to ``device`` or the default device. Memory is
    shared where no dtype or device change is needed, unless ``copy=True``.
    """
    target = None if dtype is None else _dtypes.to_dtype(dtype, "asarray() dtype")
    dev = None if device is None else _device.normalize(device, "asarray() device")
    source = _source_tensor(obj, copy)
    if source is None:
        if copy is False:
            raise ValueError(
                "asarray(copy=False): Python scalars and sequences have no buffer to share; "
                "a new array is always made (pass copy=None)"
            )
        return wrap(_from_python(obj, target, dev))
    t, home, fresh = source
    if target in _dtypes.INTEGER and t.dtype in _dtypes.REAL_FLOAT:
        check_float_to_int(t, target, "asarray()")
    return wrap(convert(t, target or t.dtype, dev or home, None if fresh else copy, "asarray"))


def _source_tensor(obj: object, copy: bool | None) -> tuple[torch.Tensor, torch.device, bool] | None:
    """A tensor over ``obj``'s memory, the device it belongs on, and whether it is already a private copy;
    None for Python scalars and sequences."""
    if isinstance(obj, NeuronArray):
        return obj._t, obj._t.device, False
    if isinstance(obj, torch.Tensor):
        return _supported(obj, "asarray"), obj.device, False
    if isinstance(obj, (np.ndarray, np.generic)):  # before PY_SCALARS: np.float64 is a float
        return from_numpy(np.asarray(obj), copy)
    if isinstance(obj, (PY_SCALARS, list, tuple)):
        return None
    if hasattr(obj, "__dlpack__"):
        t = _supported(torch.from_dlpack(obj), "asarray")
        return t, t.device, False
    try:  # before other sequences: bytes, bytearray and memoryview are sequences too
        view = memoryview(obj)  # type: ignore[arg-type]  # any object: what is no buffer raises TypeError
    except TypeError:
        if isinstance(obj, Sequence) and not isinstance(obj, str):
            return None
        raise TypeError(
            f"asarray(): cannot convert {type(obj).__name__}; expected an array, a Python "
            "scalar, a nested sequence, or an object with __dlpack__ or the buffer "
            "protocol"
        ) from None
    return from_numpy(np.asarray(view), copy)


def _supported(t: torch.Tensor, func: str) -> torch.Tensor:
    if t.dtype not in _dtypes.ALL:
        raise TypeError(
            f"{func}(): dtype {t.dtype} is not a dtype of this namespace; "
            f"supported: {', '.join(_dtypes.NAMES.values())}"
        )
    return t


def _nested(obj: object) -> tuple[list[object], tuple[int, ...]]:
    """Leaves (Python scalars and arrays) of a nested sequence in row-major order, and its shape."""
    if isinstance(obj, (np.ndarray, torch.Tensor)):
        obj = asarray(obj)
    if isinstance(obj, NeuronArray):
        return [obj], obj.shape
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        if all(type(item) in PY_SCALARS for item in obj):  # the innermost level, without recursion
            return list(obj), (len(obj),)
        parts = [_nested(item) for item in obj]
        shapes = {shape for _, shape in parts}
        if len(shapes) > 1:
            raise ValueError(f"asarray(): nested sequence is ragged: its items have shapes {sorted(shapes)}")
        inner = shapes.pop() if shapes else ()
        return [leaf for leaves, _ in parts for leaf in leaves], (len(parts),) + inner
    value = as_py_scalar(obj)
    if not isinstance(value, PY_SCALARS):
        raise TypeError(f"asarray(): sequences may hold Python scalars or arrays, got {type(obj).__name__}")
    return [value], ()


def _from_python(obj: object, dtype: torch.dtype | None, device: torch.device | None) -> torch.Tensor:
    leaves, shape = _nested(obj)
    arrays = [leaf._t for leaf in leaves if isinstance(leaf, NeuronArray)]
    if arrays:
        dtype = dtype or promoted(leaves, "asarray")
        device = device or arrays[0].device
        parts = [
            convert(leaf._t, dtype, device, None, "asarray")
            if isinstance(leaf, NeuronArray)
            else convert_scalar(leaf, dtype, device, "asarray")
            for leaf in leaves
        ]
        return torch.stack(parts).reshape(shape)
    device = device or _device.default_device()
    dtype = dtype or _scalars_dtype(leaves, device)
    return _scalars_tensor(leaves, dtype, device).reshape(shape)


def _scalars_tensor(values: list, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A 1-D tensor of Python scalars; integers are range-checked and built exactly (uint64 beyond 2**63)."""
    kinds = {type(v) for v in values}
    if int in kinds and dtype in _dtypes.FLOATING:
        # torch builds them through doubles, which round ints beyond 2**53 first: those are rounded here instead
        ints = values if kinds <= {bool, int} else [v for v in values if type(v) is int]
        if not -_dtypes.EXACT_INT_IN_DOUBLE <= min(ints) <= max(ints) <= _dtypes.EXACT_INT_IN_DOUBLE:
            values = [_dtypes.round_int(v, dtype, "asarray") if type(v) is int else v for v in values]
    if complex in kinds:
        check_castable(_dtypes.complex128, dtype, "asarray")
    if dtype in _dtypes.INTEGER and float in kinds and complex not in kinds:
        # each float truncated and each int range-checked on its own, as NumPy converts each element (a float64
        # array in between would round the ints beyond 2**53)
        values = [int_value(v, dtype, "asarray") for v in values]
        kinds = {int}
    if dtype in _dtypes.INTEGER and kinds <= {bool, int}:
        lo, hi = _dtypes.int_range(dtype)
        if values and not (lo <= min(values) and max(values) <= hi):
            bad = min(values) if min(values) < lo else max(values)
            raise OverflowError(f"asarray(): Python int {bad} is out of range for {_dtypes.name(dtype)}")
        if dtype is _dtypes.uint64:
            values = [v - 2**64 if v >= 2**63 else v for v in values]  # the int64 with the same bits
        return _dtypes.restore(torch.tensor(values, dtype=torch.int64, device=device), dtype)
    if dtype in _dtypes.EXTENSION_FLOAT:
        # into float16/bfloat16: exactly in float64, then one rounding (torch.tensor rounds through float32: twice)
        return _dtypes.cast(torch.tensor(values, dtype=torch.float64, device=device), dtype)
    return torch.tensor(values, dtype=dtype, device=device)


def from_dlpack(x: object, /, *, device: Device = None, copy: bool | None = None) -> NeuronArray:
    """An array over the memory of any DLPack exporter (NumPy, torch, other array libraries), without a copy
    where possible; ``device=`` moves it, which ``copy=False`` refuses. As NumPy's from_dlpack: read-only memory
    (DLPack 1.0's flag, which is asked for; a read-only NeuronArray) gives a read-only array unless a copy is
    made; memory with negative strides, which torch cannot hold, is copied by its exporter (``copy=True``),
    which ``copy=False`` refuses (BufferError)."""
    from .._array import _ReversedView
    from .._helpers import dlpack_facts
    from .._indexing import readonly

    if isinstance(x, NeuronArray):
        if (
            type(x) is _ReversedView
            and not copy
            and (device is None or _device.same(_device.normalize(device, "from_dlpack() device"), x.device))
        ):
            return x[...]  # the same view with negative steps, over the same memory
        t = x._t
    elif hasattr(x, "__dlpack__"):
        try:
            capsule = x.__dlpack__(max_version=(1, 0))  # DLPack 1.0 capsules can say read-only
        except TypeError:  # an exporter of an older DLPack
            capsule = x.__dlpack__()
        read_only, negative = dlpack_facts(capsule)
        if negative:
            if copy is False:
                raise BufferError(
                    f"from_dlpack(copy=False): the {type(x).__name__} has negative strides, which "
                    "torch cannot hold; pass copy=None or True to copy it"
                )
            try:
                capsule = x.__dlpack__(max_version=(1, 0), copy=True)
            except TypeError:
                raise BufferError(
                    f"from_dlpack(): the {type(x).__name__} has negative strides, which torch "
                    "cannot hold, and its exporter cannot copy (DLPack 1.0's copy=True); pass a "
                    "copy with non-negative strides"
                ) from None
            read_only, negative = dlpack_facts(capsule)
            if negative:
                raise BufferError(
                    f"from_dlpack(): the {type(x).__name__}'s copy still has negative strides, "
                    "which torch cannot hold; pass a C-contiguous copy"
                )
        t = _supported(torch.from_dlpack(capsule), "from_dlpack")
        if read_only:
            t = readonly(t)  # torch ignores the flag: NumPy's from_dlpack gives a read-only view here
    else:
        raise AttributeError(f"from_dlpack(): {type(x).__name__} has no __dlpack__ method; use asarray instead")
    dev = t.device if device is None else _device.normalize(device, "from_dlpack() device")
    return wrap(convert(t, t.dtype, dev, copy, "from_dlpack"))


# ---------------------------------------------------------------- filled arrays


def _fill_tensor(value: object, dtype: torch.dtype, device: torch.device, func: str) -> torch.Tensor:
    """A 0-d tensor of ``dtype`` holding a Python scalar or the value of a 0-d array (cast as ``astype`` does,
    as NumPy and torch fill from an array). A Python scalar converts as NumPy 2 converts it (``convert_scalar``:
    a float into an integer dtype is truncated, NaN and values beyond the dtype refused; the standard leaves
    that case unspecified); a complex into a real dtype is a TypeError rather than a silent loss of the
    imaginary part."""
    if isinstance(value, NeuronArray):
        if value.ndim != 0:
            raise ValueError(f"{func}(): fill value must be a scalar or a 0-d array, got shape {value.shape}")
        return convert(value._t, dtype, device, None, func)
    value = as_py_scalar(value)
    if not isinstance(value, PY_SCALARS):
        raise TypeError(f"{func}(): fill value must be a Python scalar, got {type(value).__name__}")
    if isinstance(value, complex) and dtype not in _dtypes.COMPLEX_FLOAT:
        raise TypeError(f"{func}(): cannot fill a {_dtypes.name(dtype)} array with the complex {value}")
    check_fill_int(value, dtype, func)
    return convert_scalar(value, dtype, device, func)


def _full(
    shape: tuple[int, ...], fill_value: object, dtype: torch.dtype, device: torch.device, func: str
) -> NeuronArray:
    return wrap(_fill_tensor(fill_value, dtype, device, func).expand(shape).contiguous())


def _filled(fill: Callable[..., torch.Tensor], shape: Shape, dtype: object, device: Device, func: str) -> NeuronArray:
    dev = _device_arg(device, func)
    return wrap(fill(_shape_arg(shape, func), dtype=_dtype_arg(dtype, func, _dtypes.default_float(dev)), device=dev))


def empty(shape: Shape, *, dtype: _dtypes.DType | None = None, device: Device = None) -> NeuronArray:
    """An uninitialized array (default dtype: the device's default float)."""
    return _filled(torch.empty, shape, dtype, device, "empty")


def zeros(shape: Shape, *, dtype: _dtypes.DType | None = None, device: Device = None) -> NeuronArray:
    """An array of zeros (default dtype: the device's default float)."""
    return _filled(torch.zeros, shape, dtype, device, "zeros")


def ones(shape: Shape, *, dtype: _dtypes.DType | None = None, device: Device = None) -> NeuronArray:
    """An array of ones (default dtype: the device's default float)."""
    return _filled(torch.ones, shape, dtype, device, "ones")


def full(
    shape: Shape,
    fill_value: bool | int | float | complex | NeuronArray,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device = None,
) -> NeuronArray:
    """An array filled with ``fill_value`` (a Python scalar, or a 0-d array as in NumPy and torch); without
    ``dtype``, the default dtype of a scalar's kind, or a 0-d array's dtype."""
    dev = _device_arg(device, "full")
    if isinstance(fill_value, NeuronArray):
        default = fill_value._t.dtype
    else:
        fill_value = as_py_scalar(fill_value)  # type: ignore[assignment]  # no scalar: _fill_tensor refuses it
        default = _scalars_dtype([fill_value], dev)
    return _full(_shape_arg(shape, "full"), fill_value, _dtype_arg(dtype, "full", default), dev, "full")


def _like(
    x: NeuronArray, dtype: object, device: Device, func: str
) -> tuple[tuple[int, ...], torch.dtype, torch.device]:
    """Shape of ``x``, and its dtype and device unless overridden."""
    t = tensor(x, func)
    dev = t.device if device is None else _device.normalize(device, f"{func}() device")
    return tuple(t.shape), _dtype_arg(dtype, func, t.dtype), dev


def empty_like(x: NeuronArray, /, *, dtype: _dtypes.DType | None = None, device: Device = None) -> NeuronArray:
    """An uninitialized array with ``x``'s shape (and dtype and device unless given)."""
    shape, dtype, dev = _like(x, dtype, device, "empty_like")
    return wrap(torch.empty(shape, dtype=dtype, device=dev))


def zeros_like(x: NeuronArray, /, *, dtype: _dtypes.DType | None = None, device: Device = None) -> NeuronArray:
    """Zeros with ``x``'s shape (and dtype and device unless given)."""
    shape, dtype, dev = _like(x, dtype, device, "zeros_like")
    return wrap(torch.zeros(shape, dtype=dtype, device=dev))


def ones_like(x: NeuronArray, /, *, dtype: _dtypes.DType | None = None, device: Device = None) -> NeuronArray:
    """Ones with ``x``'s shape (and dtype and device unless given)."""
    shape, dtype, dev = _like(x, dtype, device, "ones_like")
    return wrap(torch.ones(shape, dtype=dtype, device=dev))


def full_like(
    x: NeuronArray,
    /,
    fill_value: bool | int | float | complex,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device = None,
) -> NeuronArray:
    """``fill_value`` with ``x``'s shape (and dtype and device unless given)."""
    shape, dtype, dev = _like(x, dtype, device, "full_like")
    return _full(shape, fill_value, dtype, dev, "full_like")


# ---------------------------------------------------------------- ranges and grids


def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device = None,
) -> NeuronArray:
    """Values ``start + i*step`` in ``[start, stop)``, ``ceil((stop-start)/step)`` of them (none if the signs
    differ). Integer ranges are computed exactly in int64 (uint64 in its bit pattern), and rounded once from
    there to a floating dtype."""
    # each an int or a float (_number of (int, float)); only stop may be None
    start, stop, step = (  # type: ignore[assignment]
        None if v is None else _number(v, "arange", a, (int, float))
        for v, a in ((start, "start"), (stop, "stop"), (step, "step"))
    )
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange(): step must not be 0")
    all_int = all(isinstance(v, int) for v in (start, stop, step))
    dev = _device_arg(device, "arange")
    target = _dtype_arg(dtype, "arange", _dtypes.default_int() if all_int else _dtypes.default_float(dev))
    if target is _dtypes.bool:
        raise TypeError("arange(): dtype must be numeric, got bool")
    if target in _dtypes.INTEGER:
        if not all_int:  # the standard leaves this unspecified: NumPy's answer
            return wrap(_integer_range_of_floats(start, stop, step, target, dev))
        return wrap(_integer_range(start, stop, step, target, dev))  # type: ignore[arg-type]  # all_int: ints
    span = (stop - start) / step
    if not math.isfinite(span):
        raise ValueError(f"arange(): the range from {start} to {stop} in steps of {step} is not finite")
    n = max(0, -((start - stop) // step) if all_int else math.ceil(span))
    if all_int:  # the exact integers, each rounded once to the floating dtype (float64 arithmetic rounds first)
        ends = (start, start + max(n - 1, 0) * step)
        for exact in (_dtypes.int64, _dtypes.uint64):
            lo, hi = _dtypes.int_range(exact)
            if lo <= min(ends) and max(ends) <= hi:
                return wrap(
                    _dtypes.cast(
                        _integer_range(
                            start,  # type: ignore[arg-type]  # all_int: ints
                            stop,  # type: ignore[arg-type]
                            step,  # type: ignore[arg-type]
                            exact,
                            dev,
                        ),
                        target,
                    )
                )
    real = torch.arange(n, dtype=torch.float64, device=dev) * float(step) + float(start)
    return wrap(_dtypes.cast(real, target))


def _integer_range_of_floats(
    start: float, stop: float, step: float, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """An integer dtype's range from a float start, stop or step, as NumPy computes it: ceil((stop - start) /
    step) values; the first two, start and start + step, are truncated to integers, and their difference is
    the step of the rest (so arange(-0.5, 3, 0.7, dtype=int8) is five zeros)."""
    span = (stop - start) / step
    if not math.isfinite(span):
        raise ValueError(f"arange(): the range from {start} to {stop} in steps of {step} is not finite")
    n = max(0, math.ceil(span))
    where = "arange()"
    first = float_to_int(float(start), _dtypes.int64, where) if isinstance(start, float) else start
    second = start + step
    second = float_to_int(float(second), _dtypes.int64, where) if isinstance(second, float) else second
    delta = second - first
    lo, hi = _dtypes.int_range(dtype)
    if n and not (lo <= first <= hi and lo <= first + (n - 1) * delta <= hi):
        raise OverflowError(
            f"arange(): values from {first} to {first + (n - 1) * delta} do not fit {_dtypes.name(dtype)}"
        )
    values = torch.arange(n, dtype=torch.int64, device=device) * delta + first
    return _dtypes.restore(values, dtype)


def _integer_range(start: int, stop: int, step: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    n = max(0, -((start - stop) // step))  # ceil((stop - start) / step) in exact integer arithmetic
    lo, hi = _dtypes.int_range(dtype)
    if n and not (lo <= start <= hi and lo <= start + (n - 1) * step <= hi):
        raise OverflowError(
            f"arange(): values from {start} to {start + (n - 1) * step} do not fit {_dtypes.name(dtype)}"
        )
    wrap64 = lambda v: (v + 2**63) % 2**64 - 2**63  # noqa: E731 - the int64 with v's low 64 bits
    # int64 arithmetic is modular, so the low 64 bits (and so every in-range value) come out exact
    values = torch.arange(n, dtype=torch.int64, device=device) * wrap64(step) + wrap64(start)
    return _dtypes.restore(values, dtype)


def eye(
    n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: _dtypes.DType | None = None, device: Device = None
) -> NeuronArray:
    """Ones on the ``k``-th diagonal, zeros elsewhere (any dtype: built as a mask and cast)."""
    rows = int_arg(n_rows, "eye", "n_rows", minimum=0)
    cols = rows if n_cols is None else int_arg(n_cols, "eye", "n_cols", minimum=0)
    # diagonals beyond the matrix are all zero: clamp k so that it fits the offsets' int64
    k = max(-rows, min(cols, int_arg(k, "eye", "k")))
    dev = _device_arg(device, "eye")
    target = _dtype_arg(dtype, "eye", _dtypes.default_float(dev))
    offsets = torch.arange(cols, device=dev)[None, :] - torch.arange(rows, device=dev)[:, None]
    return wrap(_dtypes.cast(offsets == k, target))


def linspace(
    start: int | float | complex,
    stop: int | float | complex,
    /,
    num: int,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device = None,
    endpoint: bool = True,
) -> NeuronArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (excluded when ``endpoint=False``), computed in
    double precision and rounded once to ``dtype``; an integer dtype takes their floor, bool their nonzero-ness, as
    in NumPy."""
    start, stop = (_number(v, "linspace", a, (int, float, complex)) for v, a in ((start, "start"), (stop, "stop")))
    num = int_arg(num, "linspace", "num", minimum=0)
    if not isinstance(endpoint, bool):
        raise TypeError(f"linspace(): endpoint must be a bool, got {type(endpoint).__name__}")
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    dev = _device_arg(device, "linspace")
    default = _dtypes.default_complex(dev) if is_complex else _dtypes.default_float(dev)
    target = _dtype_arg(dtype, "linspace", default)
    if is_complex:
        check_castable(_dtypes.complex128, target, "linspace")
    if target in _dtypes.FLOATING:  # an int endpoint rounds once to the dtype, not through float64 first
        start, stop = (_dtypes.round_int(v, target, "linspace") if type(v) is int else v for v in (start, stop))
    wide = _dtypes.complex128 if target in _dtypes.COMPLEX_FLOAT else _dtypes.float64
    kind = complex if wide is _dtypes.complex128 else float
    values = torch.linspace(
        kind(start),  # type: ignore[arg-type]  # float: no complex (check_castable)
        kind(stop),  # type: ignore[arg-type]
        num + (not endpoint),
        dtype=wide,
        device=dev,
    )[:num]
    if target in _dtypes.INTEGER:
        values = values.floor()
    return wrap(_dtypes.cast(values, target))


def meshgrid(*arrays: NeuronArray, indexing: str = "xy") -> tuple[NeuronArray, ...]:
    """Coordinate matrices of 1-D arrays on one device; 'xy' swaps the first two output axes. Each output
    keeps its array's dtype, as NumPy's (the standard asks for one dtype and leaves mixed ones unspecified).
    The outputs are new arrays (not broadcast views), as NumPy's, so they can be written to."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid(): indexing must be 'xy' or 'ij', got {indexing!r}")
    ts = tensors(arrays, "meshgrid")
    for i, t in enumerate(ts):
        if t.dim() != 1:
            raise ValueError(f"meshgrid(): arrays[{i}] must be 1-dimensional, got shape {tuple(t.shape)}")
    if not ts:
        return ()
    shape = [t.shape[0] for t in ts]
    if indexing == "xy" and len(ts) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    grids = []
    for i, t in enumerate(ts):
        # each array along its own output axis (the first two swapped for 'xy'), broadcast to the grid
        axis = {0: 1, 1: 0}.get(i, i) if indexing == "xy" and len(ts) > 1 else i
        view = [1] * len(ts)
        view[axis] = t.shape[0]
        grids.append(wrap(t.reshape(view).expand(shape).contiguous()))
    return tuple(grids)


def tril(x: NeuronArray, /, *, k: int = 0) -> NeuronArray:
    """The lower triangle (on and below diagonal ``k``) of each matrix in a stack, the rest zeroed."""
    return _triangle(x, k, torch.tril, "tril")


def triu(x: NeuronArray, /, *, k: int = 0) -> NeuronArray:
    """The upper triangle (on and above diagonal ``k``) of each matrix in a stack, the rest zeroed."""
    return _triangle(x, k, torch.triu, "triu")


def _triangle(x: NeuronArray, k: int, op: Callable[..., torch.Tensor], func: str) -> NeuronArray:
    t = tensor(x, func)
    if t.dim() < 2:
        raise ValueError(f"{func}() needs an array of at least 2 dimensions, got shape {tuple(t.shape)}")
    # diagonals beyond the matrix act like the outermost ones: clamp so that torch gets a small int
    k = max(-t.shape[-2], min(t.shape[-1], int_arg(k, func, "k")))
    return wrap(via_compute(lambda c: op(c, k), t))
