"""Data type functions of the standard: casting, promotion queries and machine limits.

dtypes are torch's own objects, so these functions answer from ``_dtypes`` (the standard's promotion table
and the compute dtypes behind uint16/32/64), never from torch's promotion, which differs for 0-d tensors and
uints.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np
import torch

from .. import _device, _dtypes
from .._helpers import PY_SCALARS, NeuronArray, scalar_dtype, tensor, wrap

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]


@dataclasses.dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a real floating dtype, as Python numbers."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclasses.dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer dtype, as Python ints."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def _dtype_of(obj: object, func: str, arg: str) -> torch.dtype:
    """A dtype argument that may also be given as an array (its dtype)."""
    if isinstance(obj, NeuronArray):
        return obj._t.dtype
    return _dtypes.to_dtype(obj, f"{func}() {arg}")


def check_castable(src: torch.dtype, dst: torch.dtype, func: str) -> None:
    """Complex to real drops the imaginary part, which the standard asks implementations to refuse."""
    if src in _dtypes.COMPLEX_FLOAT and dst in _dtypes.NUMERIC and dst not in _dtypes.COMPLEX_FLOAT:
        raise TypeError(
            f"{func}(): casting {_dtypes.name(src)} to {_dtypes.name(dst)} would drop the "
            "imaginary part; cast real(x) or imag(x) instead"
        )


def convert(t: torch.Tensor, dtype: torch.dtype, device: torch.device, copy: bool | None, func: str) -> torch.Tensor:
    """``t`` in ``dtype`` on ``device`` with the standard's copy keyword: True always gives new memory, False
    refuses (ValueError) a dtype or device change, None copies only for such a change."""
    moves = not _device.same(t.device, device)
    if copy is False and (dtype is not t.dtype or moves):
        raise ValueError(
            f"{func}(copy=False): converting {_dtypes.name(t.dtype)} on {t.device} to "
            f"{_dtypes.name(dtype)} on {device} needs a copy; pass copy=None to allow it"
        )
    check_castable(t.dtype, dtype, func)
    out = _dtypes.cast(t.to(device) if moves else t, dtype)
    # a cast may return its input or a view of it (uint64 <-> int64 keep their bits)
    if copy and out.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() and not moves:
        out = out.clone()
    return out


def astype(
    x: NeuronArray, dtype: _dtypes.DType, /, *, copy: bool = True, device: torch.device | str | None = None
) -> NeuronArray:
    """Cast to ``dtype`` (and optionally move); ``copy=False`` returns ``x`` itself when nothing changes.

    Complex to real is a TypeError, as the standard asks: say which part to keep with ``real(x)`` or
    ``imag(x)``.
    """
    t = tensor(x, "astype")
    target = _dtypes.to_dtype(dtype, "astype() dtype")
    dev = t.device if device is None else _device.normalize(device, "astype() device")
    if not copy and target is t.dtype and _device.same(t.device, dev):
        return x
    # a change of dtype or device always gives a new array, whatever copy says
    return wrap(convert(t, target, dev, True, "astype"))


def can_cast(from_: _dtypes.DType | NeuronArray, to: _dtypes.DType, /) -> bool:
    """Within a kind, True iff the standard's promotion table promotes ``from_`` with ``to`` to ``to``. Across
    kinds, which the standard leaves to the library, NumPy's "safe" rule answers (bool to any dtype, integers to
    floating and complex, real floating to complex), as these dtypes are NumPy's."""
    src = _dtype_of(from_, "can_cast", "from_")
    dst = _dtypes.to_dtype(to, "can_cast() to")
    if _dtypes.kind_rank(src) != _dtypes.kind_rank(dst):
        return _dtypes.kind_rank(src) < _dtypes.kind_rank(dst) and _dtypes.safe_cast(src, dst)
    return _dtypes.PROMOTION_TABLE.get((src, dst)) is dst


def finfo(type: _dtypes.DType | NeuronArray, /) -> finfo_object:  # noqa: A002 - the standard's name
    """Limits of a floating dtype; a complex dtype describes its real component (and reports that dtype)."""
    dtype = _dtype_of(type, "finfo", "type")
    if dtype not in _dtypes.FLOATING:
        raise TypeError(f"finfo() needs a floating-point dtype, got {_dtypes.name(dtype)}; use iinfo for integers")
    return _finfo(_dtypes.real_of(dtype))


@functools.cache
def _finfo(dtype: torch.dtype) -> finfo_object:
    fi = torch.finfo(dtype)
    return finfo_object(
        bits=fi.bits,
        eps=float(fi.eps),
        max=float(fi.max),
        min=float(fi.min),
        smallest_normal=float(fi.smallest_normal),
        dtype=_dtypes.PUBLIC[dtype],
    )


def iinfo(type: _dtypes.DType | NeuronArray, /) -> iinfo_object:  # noqa: A002 - the standard's name
    """Limits of an integer dtype (computed here: torch.iinfo lacks uint16/32/64 in some versions)."""
    dtype = _dtype_of(type, "iinfo", "type")
    if dtype not in _dtypes.INTEGER:
        raise TypeError(f"iinfo() needs an integer dtype, got {_dtypes.name(dtype)}; use finfo for floating types")
    lo, hi = _dtypes.int_range(dtype)
    return iinfo_object(bits=dtype.itemsize * 8, max=hi, min=lo, dtype=_dtypes.PUBLIC[dtype])


def isdtype(dtype: _dtypes.DType, kind: _dtypes.DType | str | tuple[_dtypes.DType | str, ...]) -> bool:
    """Whether ``dtype`` is ``kind`` (a dtype), of ``kind`` (a kind name), or of any entry of a tuple."""
    dtype = _dtypes.to_dtype(dtype, "isdtype() dtype")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return any(_is_kind(dtype, k) for k in kinds)


def _is_kind(dtype: torch.dtype, kind: object) -> bool:
    if isinstance(kind, str):
        if kind not in _dtypes.KINDS:
            known = ", ".join(map(repr, _dtypes.KINDS))
            raise ValueError(f"isdtype(): unknown kind {kind!r}; kinds are {known}")
        return dtype in _dtypes.KINDS[kind]
    if isinstance(kind, (torch.dtype, np.dtype, type)):
        return dtype is _dtypes.to_dtype(kind, "isdtype() kind")
    raise TypeError(f"isdtype(): kind must be a dtype, a kind name or a tuple of these, got {type(kind).__name__}")


def result_type(*arrays_and_dtypes: NeuronArray | _dtypes.DType | bool | int | float | complex) -> np.dtype:
    """The dtype the standard's promotion gives its arguments; Python scalars are weak (follow the arrays), NumPy
    scalars strong (0-d arrays of their dtype, as in NEP 50)."""
    return _dtypes.PUBLIC[promoted(arrays_and_dtypes, "result_type")]


def promoted(items: Sequence[object], func: str) -> torch.dtype:
    """Promote arrays, dtypes, NumPy scalars (strong: their dtype) and Python scalars (weak); at least one array,
    dtype or NumPy scalar is required."""
    strong: list[torch.dtype] = []
    weak: list[object] = []
    device = None  # a float with only integer arrays gives the default float of their device
    for i, item in enumerate(items):
        if isinstance(item, NeuronArray):
            strong.append(item._t.dtype)
            device = device or item._t.device
        elif isinstance(item, np.generic):  # before PY_SCALARS: np.float64 is a float
            strong.append(_dtypes.to_dtype(item.dtype, f"{func}() argument {i}"))
        elif isinstance(item, PY_SCALARS):
            weak.append(item)
        else:
            strong.append(_dtypes.to_dtype(item, f"{func}() argument {i}"))
    if not strong:
        why = " (Python scalars alone have no dtype)" if weak else ""
        raise ValueError(f"{func}() needs at least one array or dtype{why}")
    dtype = functools.reduce(_dtypes.promote, strong)
    for value in weak:
        dtype = scalar_dtype(value, dtype, func, device)
    return dtype
