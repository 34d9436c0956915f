"""Small shared pieces of the namespace: unwrapping arguments, Python scalars, devices, axes.

Every namespace function takes NeuronArrays, works on their torch tensors and wraps the result; these helpers
are where argument errors are raised, with the function and argument named.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import array_api_compat
import numpy as np
import torch

from . import _device, _dtypes
from ._array import _READ_ONLY, NeuronArray, capsule_pointer, holdable, wrap
from ._scalars import PY_SCALARS, as_py_scalar, check_float_to_int, float_to_int, scalar_to_tensor

__all__ = [
    "NeuronArray",
    "holdable",
    "wrap",
    "tensor",
    "tensors",
    "binary_operands",
    "numpy_scalar",
    "scalar_to_tensor",
    "broadcast_shape",
    "check_broadcastable",
    "normalize_axis",
    "normalize_axes",
    "check_same_device",
    "PY_SCALARS",
    "as_py_scalar",
    "check_float_to_int",
    "float_to_int",
]


def tensor(x: object, func: str, arg: str = "x") -> torch.Tensor:
    """The tensor of a NeuronArray argument; anything else is a TypeError that names the argument."""
    if isinstance(x, NeuronArray):
        return x._t
    raise TypeError(
        f"{func}() expects {arg} to be a NeuronArray, got {type(x).__name__}"
        + (" (wrap it with trn_backend.asarray first)" if _is_array_like(x) else "")
    )


def tensors(xs: Sequence[object], func: str, arg: str = "arrays") -> list[torch.Tensor]:
    if isinstance(xs, NeuronArray) or not isinstance(xs, (list, tuple)):
        raise TypeError(f"{func}() expects {arg} to be a tuple or list of arrays, got {type(xs).__name__}")
    ts = [tensor(x, func, f"{arg}[{i}]") for i, x in enumerate(xs)]
    check_same_device(ts, func, arg)
    return ts


def _is_array_like(x: object) -> bool:
    """Another library's array (NumPy, torch, CuPy, JAX, ... as array-api-compat knows them) or a sequence."""
    return array_api_compat.is_array_api_obj(x) or isinstance(x, (list, tuple))


def check_same_device(ts: Sequence[torch.Tensor], func: str, what: str = "inputs") -> torch.device | None:
    """All tensors on one device, else ValueError naming both devices."""
    if not ts:
        return None
    first = ts[0].device
    for t in ts[1:]:
        if t.device != first and not _device.same(t.device, first):
            raise ValueError(
                f"{func}(): {what} are on different devices, {first} and {t.device}; move one with x.to_device(...)"
            )
    return first


def scalar_dtype(value: object, dtype: torch.dtype, func: str, device: torch.device | None = None) -> torch.dtype:
    """The dtype a Python scalar combines to with an array of ``dtype`` on ``device`` (the scalar is weak, as in
    NEP 50; a float with an integer array gives the device's default float, as NumPy's float64 on the CPU)."""
    if isinstance(value, bool):
        return dtype
    if isinstance(value, int):
        return _dtypes.default_int() if dtype is _dtypes.bool else dtype
    if isinstance(value, float):
        return dtype if dtype in _dtypes.FLOATING else _dtypes.default_float(device)
    if isinstance(value, complex):
        if dtype in _dtypes.COMPLEX_FLOAT:
            return dtype
        return _dtypes.complex_of(dtype) if dtype in _dtypes.REAL_FLOAT else _dtypes.default_complex(device)
    raise TypeError(f"{func}() got an operand of type {type(value).__name__}; expected an array or a Python scalar")


def numpy_scalar(value: np.generic, device: torch.device, func: str) -> NeuronArray:
    """A NumPy scalar operand as what NEP 50 makes it: a 0-d array of its own dtype (strong: ``np.float64(1)``
    with a float32 array promotes to float64, ``np.int64(300)`` with an int8 array to int64), on ``device``."""
    if value.dtype not in _dtypes.TORCH_OF_PUBLIC:
        raise TypeError(
            f"{func}(): a NumPy scalar of dtype {value.dtype} is not supported (supported: "
            f"{', '.join(_dtypes.NAMES.values())}); convert it to one of these first"
        )
    return wrap(_dtypes.host_scalar(value).to(device))


def binary_operands(
    x1: object, x2: object, func: str, *, broadcast: bool = False, floating: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.dtype]:
    """Both operands as tensors of their promoted dtype on one device; at least one must be an array. A NumPy
    scalar beside an array is a strong 0-d array, a Python scalar is weak (NEP 50). With ``broadcast``
    (element-wise functions) their shapes must broadcast: a ValueError naming ``func`` and both shapes, not
    torch's RuntimeError. (searchsorted and isin only promote.) With ``floating`` (true division and the other
    functions whose integer input computes in the default float) a Python scalar converts to the float an
    integer array computes in, as NumPy 2 converts it to the loop's dtype: ``int8_array / 1000`` is no
    overflow."""
    a1, a2 = isinstance(x1, NeuronArray), isinstance(x2, NeuronArray)
    if a1 is not a2:  # the array beside a scalar; a NumPy one joins its device as a 0-d array
        if isinstance(x1, np.generic):
            x1, a1 = numpy_scalar(x1, x2._t.device, func), True  # type: ignore[attr-defined]  # a2: x2 is an array
        elif isinstance(x2, np.generic):
            x2, a2 = numpy_scalar(x2, x1._t.device, func), True  # type: ignore[attr-defined]  # a1: x1 is an array
    if a1 and a2:
        t1, t2 = x1._t, x2._t  # type: ignore[attr-defined]  # a1 and a2: both are arrays
        if t1.device != t2.device:
            check_same_device((t1, t2), func, "x1 and x2")
        s1, s2 = t1.shape, t2.shape
        if broadcast and s1 != s2:  # equal shapes, the common case, cost one tuple comparison
            check_broadcastable(s1, s2, func)
        dtype = _dtypes.promote(t1.dtype, t2.dtype)
    elif a1 and isinstance(x2, PY_SCALARS):
        t1 = x1._t  # type: ignore[attr-defined]  # a1: an array
        dtype = scalar_dtype(x2, _floating(t1) if floating else t1.dtype, func, t1.device)
        t2 = scalar_to_tensor(x2, dtype, t1.device, func)
    elif a2 and isinstance(x1, PY_SCALARS):
        t2 = x2._t  # type: ignore[attr-defined]  # a2: an array
        dtype = scalar_dtype(x1, _floating(t2) if floating else t2.dtype, func, t2.device)
        t1 = scalar_to_tensor(x1, dtype, t2.device, func)
    else:
        bad, arg = (x1, "x1") if not a1 else (x2, "x2")
        if a1 or a2:
            raise TypeError(f"{func}() expects {arg} to be a NeuronArray or a Python scalar, got {type(bad).__name__}")
        raise TypeError(
            f"{func}() needs at least one NeuronArray operand, got {type(x1).__name__} and {type(x2).__name__}"
        )
    return _dtypes.cast(t1, dtype), _dtypes.cast(t2, dtype), dtype


def _floating(t: torch.Tensor) -> torch.dtype:
    """The dtype ``t`` computes in where integer input computes in the default float."""
    return t.dtype if t.dtype in _dtypes.FLOATING else _dtypes.default_float(t.device)


def check_broadcastable(s1: Sequence[int], s2: Sequence[int], func: str) -> None:
    """ValueError unless two shapes broadcast (aligned from the right, each axis pair equal or one of them 1);
    cheap enough for every call of a binary function, and torch's RuntimeError never reaches the user."""
    for d1, d2 in zip(reversed(s1), reversed(s2), strict=False):  # the extra leading axes of one broadcast
        if d1 != d2 and d1 != 1 and d2 != 1:
            broadcast_shape((s1, s2), func)  # raises the ValueError that names the clashing axis


def broadcast_shape(shapes: Sequence[Sequence[int]], func: str) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to; incompatible shapes are a ValueError naming ``func``, the two shapes
    that clash and the axis."""
    ndim = max(map(len, shapes), default=0)
    result = [1] * ndim
    owner: list[tuple[int, ...]] = [()] * ndim
    for shape in shapes:
        for i, d in enumerate(shape, start=ndim - len(shape)):
            if d == 1 or d == result[i]:
                continue
            if result[i] != 1:
                raise ValueError(
                    f"{func}(): shapes {owner[i]} and {tuple(shape)} cannot be broadcast together "
                    f"(axis {i - ndim}: {result[i]} against {d})"
                )
            result[i], owner[i] = d, tuple(shape)
    return tuple(result)


def normalize_axis(axis: int, ndim: int, func: str) -> int:
    if isinstance(axis, NeuronArray) and axis.ndim == 0 and axis._t.dtype in _dtypes.INTEGER:
        axis = operator.index(axis)  # a 0-d integer array is an int axis, as in NumPy
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{func}(): axis must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise IndexError(f"{func}(): axis {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % ndim


def normalize_axes(axis: int | Sequence[int] | None, ndim: int, func: str) -> tuple[int, ...]:
    """None means every axis; repeated axes are a ValueError."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(a, ndim, func) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{func}(): repeated axis in {axis}")
    return out


# NumPy dtypes a NeuronArray can hold, in either byte order
_FROM_NUMPY = frozenset(_dtypes.PUBLIC.values()) | frozenset(d.newbyteorder() for d in _dtypes.PUBLIC.values())


def from_numpy(a: np.ndarray, copy: bool | None) -> tuple[torch.Tensor, torch.device, bool]:
    """Share a NumPy array's memory when torch can (native byte order, non-negative strides, writeable: torch
    has no read-only tensors); otherwise copy, which ``copy=False`` refuses."""
    if a.dtype not in _FROM_NUMPY:
        raise TypeError(
            f"asarray(): NumPy dtype {a.dtype} is not a dtype of this namespace; "
            f"supported: {', '.join(_dtypes.NAMES.values())}"
        )
    aligned = all(s >= 0 and s % a.itemsize == 0 for s in a.strides)
    shareable = a.flags.writeable and a.dtype.isnative and aligned
    if not shareable:
        if copy is False:
            raise ValueError(
                "asarray(copy=False): this NumPy array cannot be shared (read-only, non-native "
                "byte order or negative strides); pass copy=None to copy it"
            )
        a = np.array(a, dtype=a.dtype.newbyteorder("="), order="C")
    target = _dtypes.to_dtype(a.dtype)
    if a.dtype.char != _dtypes.PUBLIC[target].char:  # 'Q'/'q' (long long) equal uint64/int64, which torch lacks
        a = a.view(_dtypes.PUBLIC[target])
    if target is _dtypes.bfloat16:  # torch.from_numpy does not know ml_dtypes' bfloat16: share its bits
        return torch.from_numpy(a.view(np.uint16)).view(target), _device.default_device(), not shareable
    return torch.from_numpy(a), _device.default_device(), not shareable


def dlpack_facts(capsule: object) -> tuple[bool, bool]:
    """Whether the array a DLPack capsule describes is read-only (DLPack 1.0's flag; a capsule of an older
    version cannot say, and counts as writeable) and whether it has a negative stride, which torch cannot hold
    (torch.from_dlpack ends the process on one). Read before torch sees the capsule: DLManagedTensorVersioned
    has its flags at byte 24 and its DLTensor at byte 32; DLManagedTensor has the DLTensor first. In DLTensor,
    ndim is the int32 at byte 16 and the strides pointer (NULL for a C-contiguous array) is at byte 32."""
    import ctypes  # only from_dlpack needs it

    name, address = capsule_pointer(capsule)
    read_only = False
    if name == "dltensor_versioned":
        read_only = bool(ctypes.c_uint64.from_address(address + 24).value & _READ_ONLY)
        address += 32
    ndim = ctypes.c_int32.from_address(address + 16).value
    strides = ctypes.c_void_p.from_address(address + 32).value or 0  # NULL reads as None
    negative = bool(strides) and any(s < 0 for s in (ctypes.c_int64 * ndim).from_address(strides))
    return read_only, negative
