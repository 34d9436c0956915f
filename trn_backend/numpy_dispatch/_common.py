"""Helpers that several section modules of the NumPy tables share, one copy of each: the aliases of NeuronArray and
shapes; registration of a namespace function that has NumPy's own signature (``_direct``); NumPy's spellings of
shapes and axes; flattening and NumPy's at-least-N-d reshapes; NumPy's casting and promotion rules; max and min with
``initial`` (numpy.max and ``np.maximum.reduce``); the NaN handling of the nan-functions; lexsort's composed stable
sorts (lexsort, and pad's statistics of complex values); the correlation core of numpy.convolve and numpy.correlate;
warnings attributed to the user's line, as NumPy's are.

Every namespace function is looked up at call time (``xp.<name>``), so these modules import while the namespace is
still growing.
"""

from __future__ import annotations

import builtins
import inspect
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .. import _dtypes
from .._array import wrap
from .._helpers import NeuronArray, normalize_axes, normalize_axis
from ._registry import can_cast, implements, qualname, xp

A = NeuronArray
Shape = tuple[int, ...]


# ---------------------------------------------------------------- registering the standard's own functions


def _lookup(path: str) -> Callable[..., Any]:
    obj: Any = xp
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _direct(np_func: Callable[..., Any], path: str, arrays: str) -> None:
    """Register ``trn_backend.<path>`` for a NumPy function with the standard's own signature (NumPy's
    array-API-style additions): same parameter names and meaning, ``out=`` handled by the dispatcher. The
    positional parameters are declared positional-only, so the dispatcher passes them on by position: the
    namespace function may take them no other way."""
    signature = inspect.signature(np_func)

    def impl(*args: Any, **kwargs: Any) -> Any:
        return _lookup(path)(*args, **kwargs)

    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    impl.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[
            p.replace(kind=inspect.Parameter.POSITIONAL_ONLY) if p.kind is positional else p
            for p in signature.parameters.values()
            if p.name != "out"
        ]
    )
    impl.__name__ = np_func.__name__
    impl.__doc__ = f"{qualname(np_func)} as trn_backend.{path}: the same signature and semantics."
    implements(np_func, arrays=arrays)(impl)


# ---------------------------------------------------------------- shapes, axes and dtypes as NumPy takes them


def _shape(shape: int | Sequence[int]) -> Shape:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)


def _axis_arg(axis: Any) -> Any:
    """NumPy takes lists where the namespace takes tuples of axes."""
    return axis if axis is None or isinstance(axis, (int, np.integer)) else tuple(axis)


def _axis(axis: Any, ndim: int, func: str) -> int:
    """A normalized axis; out of range is NumPy's AxisError (both a ValueError and an IndexError)."""
    try:
        return normalize_axis(axis, ndim, func)
    except IndexError as e:
        raise np.exceptions.AxisError(str(e)) from None


def _flat(x: A) -> A:
    return xp.reshape(x, (-1,))


def _at_least(x: A, ndim: int) -> A:
    """NumPy's atleast_Nd: 0-d -> (1,..), 1-d (N,) -> (1, N[, 1]), 2-d (M, N) -> (M, N, 1)."""
    if x.ndim >= ndim:
        return x
    if ndim == 3:
        return xp.reshape(x, {0: (1, 1, 1), 1: (1, x.size, 1), 2: (*x.shape, 1)}[x.ndim])
    return xp.reshape(x, (1,) * (ndim - x.ndim) + x.shape)


def _to_end(a: A, axis1: int, axis2: int) -> A:
    """``a`` with ``axis1`` and ``axis2`` moved last, where the standard's matrix functions look."""
    return xp.moveaxis(a, (axis1, axis2), (-2, -1))


def _along(axis: int, key: Any) -> tuple[Any, ...]:
    """An index that applies ``key`` to ``axis`` and takes every other axis whole."""
    return (slice(None),) * axis + (key,)


def _cast(x: A, dtype: Any, casting: str, func: str) -> A:
    """``x`` as ``dtype`` if NumPy's ``casting`` rule allows it, else TypeError."""
    if not can_cast(x._t.dtype, dtype, casting):
        raise TypeError(
            f"{func}(): cannot cast {_dtypes.name(x.dtype)} to {_dtypes.name(dtype)} under casting={casting!r}"
        )
    return xp.astype(x, dtype, copy=False)


def _cast_all(arrays: Sequence[A], dtype: Any, casting: str, func: str) -> list[A]:
    return list(arrays) if dtype is None else [_cast(x, dtype, casting, func) for x in arrays]


def _floating(x: A) -> A:
    """Integer and boolean input of a floating-point function computes in the default float."""
    return x if x._t.dtype in _dtypes.FLOATING else xp.astype(x, _dtypes.default_float(x.device))


def _float_for(device: torch.device) -> torch.dtype:
    """NumPy's float64, or the default float where the device has no float64."""
    return _dtypes.default_float(device)


def _numpy_dtype(x: A) -> np.dtype:
    return _dtypes.public(x._t.dtype)


def _promoted(*operands: Any) -> torch.dtype:
    """NumPy's result dtype of NeuronArrays and Python scalars (which promote weakly, as in NumPy 2)."""
    described = [_numpy_dtype(o) if isinstance(o, A) else o for o in operands]
    return _dtypes.to_dtype(np.result_type(*described), "numpy result dtype")


def _as(x: A, dtype: torch.dtype | np.dtype) -> A:
    return xp.astype(x, dtype, copy=False)


# ---------------------------------------------------------------- max and min with initial


def _reduced_shape(a: A, axis: Any, keepdims: bool, func: str) -> Shape:
    axes = normalize_axes(axis, a.ndim, func)
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(a.shape))
    return tuple(d for i, d in enumerate(a.shape) if i not in axes)


def _extreme(which: str, a: A, axis: Any, keepdims: bool, initial: Any) -> A:
    """max/min with NumPy's ``initial``: combined with the result, and the value of an empty reduction."""
    func = f"numpy.{which}"
    if _is_complex(a._t):
        if initial is None:
            return _complex_extreme(which, a, axis, keepdims, func)
        shape = _reduced_shape(a, axis, keepdims, func)
        if a.size == 0:
            return xp.full(shape, initial, dtype=a.dtype, device=a.device)
        return _complex_compare(f"{which}imum", _complex_extreme(which, a, axis, keepdims, func), initial)
    if initial is None:
        return getattr(xp, which)(a, axis=axis, keepdims=keepdims)
    shape = _reduced_shape(a, axis, keepdims, func)
    if a._t.dtype is _dtypes.bool:  # NumPy casts initial to bool; max is any, min is all
        initial = builtins.bool(initial)
    if a.size == 0:
        return xp.full(shape, initial, dtype=a.dtype, device=a.device)
    if a._t.dtype is _dtypes.bool:
        combine = xp.logical_or if which == "max" else xp.logical_and
        return combine(getattr(xp, which)(a, axis=axis, keepdims=keepdims), initial)
    combine = xp.maximum if which == "max" else xp.minimum
    return combine(getattr(xp, which)(a, axis=axis, keepdims=keepdims), initial)


# ---------------------------------------------------------------- NaN and complex input of the nan-functions


def _name(dtype: torch.dtype) -> str:
    return _dtypes.name(dtype)


def _is_floating(t: torch.Tensor) -> bool:
    return t.dtype in _dtypes.FLOATING


def _is_complex(t: torch.Tensor) -> bool:
    return t.dtype in _dtypes.COMPLEX_FLOAT


_LEXICOGRAPHIC = "NumPy orders complex numbers lexicographically, torch does not"


def _refuse_complex(a: A, func: str, why: str = _LEXICOGRAPHIC) -> None:
    if _is_complex(a._t):
        raise TypeError(f"{func}(): {_name(a._t.dtype)} input is not supported on NeuronArray ({why})")


def _nan_mask(t: torch.Tensor) -> torch.Tensor | None:
    """Where ``t`` is NaN (either part of a complex number), or None for dtypes that hold no NaN."""
    return torch.isnan(t) if _is_floating(t) else None


def _fill_nan(t: torch.Tensor, mask: torch.Tensor, value: float) -> torch.Tensor:
    return torch.where(mask, torch.tensor(value, dtype=t.dtype, device=t.device), t)


def _without_nan(a: A, value: float) -> tuple[A, torch.Tensor | None]:
    """``a`` with NaNs replaced by ``value`` (a itself for dtypes without NaN), and the NaN mask."""
    mask = _nan_mask(a._t)
    if mask is None:
        return a, None
    return wrap(_fill_nan(a._t, mask, value)), mask


def _check_reducible(a: A, axis: Any, func: str, what: str) -> None:
    """NumPy's error for a reduction without identity over zero elements."""
    axes = normalize_axes(_axis_arg(axis), a.ndim, func)
    if math.prod(a.shape[i] for i in axes) == 0:
        raise ValueError(f"{func}(): {what} of an empty slice (a has shape {a.shape}); there is no identity")


# ---------------------------------------------------------------- lexsort's composed stable sorts


def _lexsort(keys: list[A], axis: int) -> A:
    order = None
    for key in _real_keys(keys):
        if order is None:
            order = xp.argsort(key, axis=axis, stable=True)
        else:
            ranked = xp.argsort(xp.take_along_axis(key, order, axis=axis), axis=axis, stable=True)
            order = xp.take_along_axis(order, ranked, axis=axis)
    assert order is not None  # keys is never empty (lexsort refuses no keys)
    return order


def _real_keys(keys: list[A]) -> list[A]:
    """Complex keys as the real keys of NumPy's complex order (``_complex_keys``)."""
    out = []
    for key in keys:
        out += _complex_keys(key._t) if key._t.dtype in _dtypes.COMPLEX_FLOAT else [key]
    return out


# ---------------------------------------------------------------- NumPy's order of complex numbers
# NumPy orders complex numbers lexicographically: by real part, then by imaginary part; its sorts put NaN last
# (numpy.sort's documented extended order R+Rj < R+nanj < nan+Rj < nan+nanj), its comparisons are false with a
# NaN part, and maximum/minimum (so max, min, argmax, argmin, ptp) propagate the first NaN. Torch has no order on
# complex numbers, so every NumPy entry point that orders them goes through these helpers.


def _complex_keys(t: torch.Tensor) -> list[A]:
    """Real sort keys giving numpy.sort's order of the complex tensor ``t``, least significant first (lexsort's
    order): imaginary part, real part, whether the imaginary part is NaN, whether the real part is NaN. The
    NaN placement is the most significant (numpy.sort's groups R+Rj, R+nanj, nan+Rj, nan+nanj); within a group
    NaN parts compare as 0, so the elements order by their other part."""
    re, im = t.real, t.imag
    re_nan, im_nan = torch.isnan(re), torch.isnan(im)
    zero = torch.zeros((), dtype=re.dtype, device=t.device)
    return [
        wrap(torch.where(im_nan, zero, im)),
        wrap(torch.where(re_nan, zero, re)),
        wrap(im_nan.to(torch.uint8)),
        wrap(re_nan.to(torch.uint8)),
    ]


def _complex_argsort(a: A, axis: int) -> A:
    """The stable argsort of complex ``a`` along ``axis`` in numpy.sort's order."""
    return _lexsort(_complex_keys(a._t), axis)


def _complex_sort(a: A, axis: int) -> A:
    return xp.take_along_axis(a, _complex_argsort(a, axis), axis=axis)


def _complex_arg_extreme(which: str, t: torch.Tensor, dim: int, skip_nan: bool = False) -> torch.Tensor:
    """NumPy's argmax/argmin of complex ``t`` along ``dim`` (kept, length 1): the first element with a NaN
    part if there is one, else the first lexicographic maximum (minimum). With ``skip_nan`` (fmax/fmin's
    reduction, so nanmax/nanmin) elements with a NaN part are passed over, and an all-NaN slice gives its
    first element."""
    re, im = t.real, t.imag
    nan = torch.isnan(re) | torch.isnan(im)
    worst = torch.tensor(-math.inf if which == "max" else math.inf, dtype=re.dtype, device=t.device)
    best = torch.amax if which == "max" else torch.amin
    re = torch.where(nan, worst, re)
    candidate = (re == best(re, dim=dim, keepdim=True)) & ~nan
    im = torch.where(candidate, im, worst)
    hit = candidate & (im == best(im, dim=dim, keepdim=True))
    first_nan = torch.argmax(nan.to(torch.uint8), dim=dim, keepdim=True)
    first_hit = torch.argmax(hit.to(torch.uint8), dim=dim, keepdim=True)
    if skip_nan:
        return first_hit
    return torch.where(torch.any(nan, dim=dim, keepdim=True), first_nan, first_hit)


def _complex_extreme(
    which: str, a: A, axis: Any, keepdims: bool, func: str, *, arg: bool = False, skip_nan: bool = False
) -> A:
    """numpy.max/min (or, with ``arg``, argmax/argmin: one axis or None) of complex ``a`` in NumPy's order."""
    axes = normalize_axes(_axis_arg(axis), a.ndim, func)
    if math.prod(a.shape[i] for i in axes) == 0:
        what = f"arg{which}" if arg else f"{which}imum"
        raise ValueError(f"{func}(): the {what} of an empty slice (a has shape {a.shape}); there is no identity")
    kept = [i for i in range(a.ndim) if i not in axes]
    t = a._t.permute(tuple(kept) + tuple(axes)).reshape(*(a.shape[i] for i in kept), -1)
    index = _complex_arg_extreme(which, t, -1, skip_nan)
    r = index if arg else torch.take_along_dim(t, index, dim=-1)
    shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keepdims else r.shape[:-1]
    return wrap(r.reshape(shape))


def _complex_compare(name: str, x1: Any, x2: Any) -> A:
    """NumPy's ufuncs less, less_equal, greater, greater_equal, maximum and minimum where an operand is
    complex: lexicographic (real part, then imaginary part); a comparison with a NaN part is false, and
    maximum/minimum return the first operand with a NaN part."""
    dtype = xp.result_type(*(x for x in (x1, x2)))
    device = next(x.device for x in (x1, x2) if isinstance(x, A))
    a, b = (xp.astype(x, dtype) if isinstance(x, A) else xp.asarray(x, dtype=dtype, device=device) for x in (x1, x2))
    a, b = xp.broadcast_arrays(a, b)
    ar, ai, br, bi = a._t.real, a._t.imag, b._t.real, b._t.imag
    # NumPy's CLT/CLE/CGT/CGE: the real parts decide only where neither imaginary part is NaN
    decided = ~(torch.isnan(ai) | torch.isnan(bi))
    if name in ("less", "less_equal"):
        tie = ai < bi if name == "less" else ai <= bi
        return wrap(((ar < br) & decided) | ((ar == br) & tie))
    if name in ("greater", "greater_equal"):
        tie = ai > bi if name == "greater" else ai >= bi
        return wrap(((ar > br) & decided) | ((ar == br) & tie))
    if name not in ("maximum", "minimum"):
        raise ValueError(f"{name}() is not an ordering of complex numbers")
    if name == "maximum":
        first = ((ar > br) & decided) | ((ar == br) & (ai >= bi))
    else:
        first = ((ar < br) & decided) | ((ar == br) & (ai <= bi))
    first = first | torch.isnan(ar) | torch.isnan(ai)
    return wrap(torch.where(first, a._t, b._t))


# ---------------------------------------------------------------- the correlation core of convolve and correlate

_MODES = {"valid": "valid", "same": "same", "full": "full", 0: "valid", 1: "same", 2: "full"}
_EXACT_CHUNK = 1 << 22  # products held at once by the integer correlation


def _mode(mode: Any, func: str) -> str:
    try:
        return _MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"{func}(): mode must be one of 'valid', 'same', or 'full' (got {mode!r})") from None


def _check_sequences(a: A, v: A, func: str) -> None:
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{func}(): a and v must be 1-d, got shapes {a.shape} and {v.shape}")
    for name, s in (("a", a), ("v", v)):
        if s.shape[0] == 0:
            raise ValueError(f"{func}(): {name} cannot be empty")


def _correlate(a: A, v: A, mode: str) -> A:
    """sum_n a[n + k] * v[n] (no conjugation) over the lags of ``mode``. NumPy computes with the longer sequence
    first and reverses the result when it swapped them, which moves the 'same' window by one for an even
    shorter length: the window below follows that."""
    dtype = _promoted(a, v)
    return _lags(_full_correlation(_as(a, dtype)._t, _as(v, dtype)._t, dtype), a, v, mode)


def _lags(full: torch.Tensor, a: A, v: A, mode: str) -> A:
    """The lags of ``mode`` out of the full correlation of a and v."""
    long, short = builtins.max(a.shape[0], v.shape[0]), builtins.min(a.shape[0], v.shape[0])
    if mode == "full":
        return wrap(full)
    if mode == "valid":
        return wrap(full[short - 1 : long])
    start = short - 1 - short // 2 if a.shape[0] >= v.shape[0] else short // 2
    return wrap(full[start : start + long])


def _full_correlation(a: torch.Tensor, v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Every lag of sum_n a[n + k] * v[n], k from -(len(v) - 1) to len(a) - 1."""
    if dtype in _dtypes.FLOATING:
        pad = v.shape[0] - 1
        return F.conv1d(a[None, None], v[None, None], padding=pad)[0, 0]
    # integers and booleans: exact sums of products in int64, wrapped back into the dtype (modular arithmetic
    # commutes with the wrap); torch's convolutions have no integer kernels
    a64, v64 = (_dtypes.compute(t).to(torch.int64) for t in (a, v))
    windows = F.pad(a64, (v64.shape[0] - 1, v64.shape[0] - 1)).unfold(0, v64.shape[0], 1)
    rows = builtins.max(1, _EXACT_CHUNK // v64.shape[0])
    sums = torch.cat([(windows[i : i + rows] * v64).sum(-1) for i in range(0, windows.shape[0], rows)])
    return sums != 0 if dtype is _dtypes.bool else _dtypes.restore(sums, dtype)


# ---------------------------------------------------------------- warnings attributed to the user's line

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _warn(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """``warnings.warn`` (a RuntimeWarning unless ``category`` says otherwise) attributed to the first frame
    outside trn_backend (the user's NumPy call), as NumPy's own warnings are: DeprecationWarning is shown by
    default only where it names the caller's code."""
    frame: FrameType | None
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
