"""Python and NumPy scalars as tensors: the conversions the array object and the namespace share.

Below the array object (no NeuronArray here): ``x[...] = value`` converts its value with them, as the namespace
functions do their scalar arguments (``trn_backend._helpers`` re-exports them).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from . import _dtypes

__all__ = [
    "PY_SCALARS",
    "as_py_scalar",
    "scalar_to_tensor",
    "convert_scalar",
    "int_value",
    "check_float_to_int",
    "float_to_int",
]

PY_SCALARS = (bool, int, float, complex)


def as_py_scalar(value: object) -> object:
    """A NumPy scalar as the Python scalar it holds, where only the value counts (fill values, bounds); an
    operand of an operation is strong instead (``numpy_scalar``)."""
    if isinstance(value, np.generic) and value.ndim == 0:
        return value.item()
    return value


def scalar_to_tensor(value: object, dtype: torch.dtype, device: torch.device, func: str) -> torch.Tensor:
    """A 0-d tensor of ``dtype`` holding a Python scalar; an integer that does not fit is an OverflowError."""
    if dtype in _dtypes.INTEGER and isinstance(value, int) and not isinstance(value, bool):
        lo, hi = _dtypes.int_range(dtype)
        if not lo <= value <= hi:
            raise OverflowError(f"{func}(): Python int {value} is out of range for {_dtypes.name(dtype)} [{lo}, {hi}]")
        if dtype in _dtypes.COMPUTE:
            return _dtypes.restore(
                torch.tensor(_wrap_unsigned(value, dtype), dtype=_dtypes.COMPUTE[dtype], device=device), dtype
            )
    if dtype in _dtypes.COMPUTE:
        return _dtypes.cast(torch.tensor(value, device=device), dtype)
    if type(value) is int and dtype in _dtypes.FLOATING:
        value = _dtypes.round_int(value, dtype, func)
    if dtype in _dtypes.EXTENSION_FLOAT:  # torch.tensor rounds a Python float to them through float32: twice
        return _dtypes.cast(torch.tensor(value, dtype=torch.float64, device=device), dtype)
    return torch.tensor(value, dtype=dtype, device=device)


def convert_scalar(value: object, dtype: torch.dtype, device: torch.device, func: str) -> torch.Tensor:
    """A Python scalar (bool, int, float, complex; a NumPy scalar by its value) as a 0-d tensor of ``dtype``,
    converted as NumPy 2 stores a Python scalar into an array of that dtype (``x[...] = value``, ``x.fill``,
    ``full``, the elements of a nested list): into bool, its truth; into an integer dtype, an int range-checked
    and a float truncated toward zero (NaN a ValueError; infinities and values beyond the dtype OverflowErrors,
    ``float_to_int``), a complex a TypeError; into a real float, an int rounded once to the dtype (ints of any
    size: NumPy rounds through float64 first, twice for float32 and smaller; beyond float64's range an
    OverflowError, as in NumPy), a complex a TypeError; into a complex dtype, any number. The one conversion of
    the functions that store a scalar; ``func`` names the caller in errors."""
    value = as_py_scalar(value)
    if not isinstance(value, PY_SCALARS):
        raise TypeError(
            f"{func}(): the value must be a Python scalar (bool, int, float or complex), got {type(value).__name__}"
        )
    if dtype is _dtypes.bool:
        return torch.tensor(bool(value), device=device)
    if isinstance(value, complex) and dtype not in _dtypes.COMPLEX_FLOAT:
        raise TypeError(
            f"{func}(): cannot store the complex value {value} in a {_dtypes.name(dtype)} array; "
            "store its .real or .imag"
        )
    if dtype in _dtypes.INTEGER:
        value = int_value(value, dtype, func)  # type: ignore[arg-type]  # not complex: refused above for this dtype
    return scalar_to_tensor(value, dtype, device, func)


def check_fill_int(value: object, dtype: torch.dtype, func: str) -> None:
    """NumPy's full and full_like convert a Python int fill value to their default integer (int64) before
    casting it to bool, so an int beyond int64 is an OverflowError there (``x[...] = value`` takes any int)."""
    if dtype is _dtypes.bool and isinstance(value, int) and not isinstance(value, bool):
        lo, hi = _dtypes.int_range(_dtypes.int64)
        if not lo <= value <= hi:
            raise OverflowError(
                f"{func}(): the fill value {value} is beyond int64, which NumPy converts a Python "
                "int to before casting it to bool"
            )


def int_value(value: bool | int | float, dtype: torch.dtype, func: str) -> int:
    """A bool, int or float as the Python int that the integer ``dtype`` stores, as ``convert_scalar`` converts
    it (without a tensor: nested lists convert each element)."""
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError(
                f"{func}(): cannot convert float NaN to {_dtypes.name(dtype)}; replace the NaNs "
                "first, e.g. xp.where(xp.isnan(x), 0, x)"
            )
        if math.isinf(value):
            raise OverflowError(f"{func}(): cannot convert float {value} to {_dtypes.name(dtype)}")
        whole = int(value)  # truncation toward zero, exact
        lo, hi = _dtypes.int_range(dtype)
        if not lo <= whole <= hi:
            raise OverflowError(
                f"{func}(): {whole} is out of range for {_dtypes.name(dtype)} [{lo}, {hi}] (the "
                f"integer part of {value!r})"
            )
        return whole
    value = int(value)
    lo, hi = _dtypes.int_range(dtype)
    if not lo <= value <= hi:
        raise OverflowError(f"{func}(): Python int {value} is out of range for {_dtypes.name(dtype)} [{lo}, {hi}]")
    return value


def check_float_to_int(t: torch.Tensor, dtype: torch.dtype, where: str) -> None:
    """Refuse floating data whose cast to the integer ``dtype`` NumPy does not define: NaN (ValueError), and
    infinities or values whose integer part is beyond the dtype's range (OverflowError). NumPy raises so for Python
    floats and stores platform-dependent garbage (with a RuntimeWarning) for arrays; here both raise, naming
    ``where`` (the operation). Truncation toward zero of the values that fit is the caller's cast."""
    lo, hi = _dtypes.int_range(dtype)
    name = _dtypes.name(dtype)
    if bool(torch.isnan(t).any()):
        raise ValueError(
            f"{where}: cannot convert float NaN to {name}; replace the NaNs first, e.g. xp.where(xp.isnan(x), 0, x)"
        )
    whole = torch.trunc(t)
    # lo and hi + 1 are 0 or powers of two: exact in every float dtype (or beyond its range, which is then right)
    bad = (whole < float(lo)) | (whole >= float(hi) + 1)
    if bool(bad.any()):
        value = float(t[bad].reshape(-1)[0])
        if math.isinf(value):
            raise OverflowError(f"{where}: cannot convert float {value} to {name}")
        raise OverflowError(
            f"{where}: {int(value)} is out of range for {name} [{lo}, {hi}] (the integer part of {value!r})"
        )


def float_to_int(value: float, dtype: torch.dtype, where: str) -> int:
    """A Python float into an integer dtype as NumPy converts it: truncated toward zero, refused as by
    ``check_float_to_int``."""
    check_float_to_int(torch.tensor(value, dtype=torch.float64), dtype, where)
    return int(value)


def _wrap_unsigned(value: int, dtype: torch.dtype) -> int:
    # uint64 values above 2**63 are stored as the int64 with the same bits
    return value - 2**64 if dtype is _dtypes.uint64 and value >= 2**63 else value
