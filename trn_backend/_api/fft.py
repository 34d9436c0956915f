"""The implementations behind ``trn_backend.fft`` (see there); the namespace exports them as its public
functions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch

from .. import _device, _dtypes
from .._helpers import NeuronArray, normalize_axes, normalize_axis, tensor, wrap

__all__ = [
    "fft",
    "ifft",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

Tensor = torch.Tensor
_NORMS = ("backward", "ortho", "forward")


# the generated functions' signatures, the standard's (the checker holds each generated f to its protocol)
class OneDimTransform(Protocol):
    def __call__(
        self, x: NeuronArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward"
    ) -> NeuronArray: ...


class NDimTransform(Protocol):
    def __call__(
        self,
        x: NeuronArray,
        /,
        *,
        s: Sequence[int] | None = None,
        axes: Sequence[int] | None = None,
        norm: str = "backward",
    ) -> NeuronArray: ...


class Shift(Protocol):
    def __call__(self, x: NeuronArray, /, *, axes: int | Sequence[int] | None = None) -> NeuronArray: ...


# ---------------------------------------------------------------- argument checks


def _complex_input(x: object, func: str) -> Tensor:
    """Input of a transform that takes complex data: real data is read as complex of the same precision."""
    t = tensor(x, func)
    _dtypes.check(t.dtype, "numeric", func)
    if t.dtype in _dtypes.COMPLEX_FLOAT:
        return t
    target = _dtypes.complex_of(t.dtype) if t.dtype in _dtypes.REAL_FLOAT else _dtypes.default_complex(t.device)
    return _dtypes.cast(t, target)


def _real_input(x: object, func: str) -> Tensor:
    """Input of a transform of real data (rfft, rfftn, ihfft): complex input is a TypeError."""
    t = tensor(x, func)
    _dtypes.check(t.dtype, "real numeric", func)
    if t.dtype is _dtypes.float32 or t.dtype is _dtypes.float64:
        return t
    # float16/bfloat16 transform in float32 (torch has no half-precision FFT on the CPU; NumPy's results are
    # complex64 too), integers in the default float
    return _dtypes.cast(t, _dtypes.float32 if t.dtype in _dtypes.EXTENSION_FLOAT else _dtypes.default_float(t.device))


def _norm(norm: object, func: str) -> str:
    if norm not in _NORMS:
        raise ValueError(f"{func}(): norm must be one of 'backward', 'ortho', 'forward'; got {norm!r}")
    return norm


def _length(n: object, func: str, arg: str = "n", *, allow_default: bool = False) -> int:
    """A transform length: a positive int (or -1, 'use the default', inside s)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{func}(): {arg} must be an int, got {type(n).__name__}")
    if n < 1 and not (allow_default and n == -1):
        raise ValueError(f"{func}(): {arg} must be a positive number of points, got {n}")
    return n


def _points(t: Tensor, dim: int, n: int | None, halved: bool, func: str) -> int:
    """The output length along ``dim``; the default for the inverse real transforms (halved input) is 2*(M-1),
    which must leave at least one point."""
    if n is not None and n != -1:
        return n
    size = t.shape[dim]
    points = 2 * (size - 1) if halved else size
    if points < 1:
        raise ValueError(
            f"{func}(): an input of length {size} along axis {dim} gives {points} output "
            "points; pass the output length explicitly (n= or s=)"
        )
    return points


def _sizes_and_axes(
    t: Tensor, s: Sequence[int] | None, axes: Sequence[int] | None, halved: bool, func: str
) -> tuple[list[int], tuple[int, ...]]:
    """Resolve s and axes of an n-dimensional transform: axes default to all, s to the input's sizes."""
    if s is not None and axes is None:
        raise ValueError(
            f"{func}(): s needs axes (the standard leaves the axes of s unspecified); "
            f"pass axes=tuple(range(-{len(s)}, 0)) for the last {len(s)} axes"
        )
    dims = normalize_axes(axes, t.dim(), func)
    if s is None:
        s = [-1] * len(dims)
    s = [_length(n, func, "s[i]", allow_default=True) for n in s]
    if len(s) != len(dims):
        raise ValueError(f"{func}(): s has {len(s)} entries but axes has {len(dims)}")
    pairs = enumerate(zip(dims, s, strict=True))
    return [_points(t, d, n, halved and i == len(dims) - 1, func) for i, (d, n) in pairs], dims


# ---------------------------------------------------------------- transforms


def _transform(op: Callable[..., Tensor], t: Tensor, dims: Sequence[int], **kwargs: object) -> Tensor:
    """``op(t, **kwargs)``, transforming ``dims``. An empty axis among the others (the batch) gives an empty
    result, as in NumPy: torch's CPU FFT (MKL) refuses an empty batch, so the transform runs on one signal,
    which fixes the output's dtype and transformed lengths, and the result is an empty array of that shape."""
    batch = [d for d in range(t.dim()) if d not in dims]
    if not any(t.shape[d] == 0 for d in batch):
        return op(t, **kwargs)
    one = [1 if d in batch else size for d, size in enumerate(t.shape)]
    probe = op(torch.zeros(one, dtype=t.dtype, device=t.device), **kwargs)
    shape = [t.shape[d] if d in batch else probe.shape[d] for d in range(t.dim())]
    return torch.empty(shape, dtype=probe.dtype, device=t.device)


def _one_dim(
    name: str, op: Callable[..., Tensor], prepare: Callable[[object, str], Tensor], halved: bool, doc: str
) -> OneDimTransform:
    """A 1-D transform with the standard's signature (x, /, *, n=None, axis=-1, norm='backward')."""

    def f(x: NeuronArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> NeuronArray:
        # the number of points is checked before the dtype, as in NumPy: complex input of rfft with an empty
        # axis is the ValueError of the empty transform, not the TypeError of the dtype
        t = tensor(x, name)
        dim = normalize_axis(axis, t.dim(), name)
        points = _points(t, dim, None if n is None else _length(n, name), halved, name)
        t = prepare(x, name)
        return wrap(_transform(op, t, (dim,), n=points, dim=dim, norm=_norm(norm, name)))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


def _n_dim(
    name: str,
    op: Callable[..., Tensor],
    prepare: Callable[[object, str], Tensor],
    halved: bool,
    doc: str,
    *,
    real: bool = False,
) -> NDimTransform:
    """An n-D transform with the standard's signature (x, /, *, s=None, axes=None, norm='backward'); the
    real-data transforms (real=True) need an axis to halve."""

    def f(
        x: NeuronArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str = "backward"
    ) -> NeuronArray:
        # the sizes before the dtype, as in NumPy (see _one_dim)
        sizes, dims = _sizes_and_axes(tensor(x, name), s, axes, halved, name)
        t = prepare(x, name)
        norm = _norm(norm, name)
        if not dims:
            if real:
                raise ValueError(f"{name}() needs at least one axis to transform")
            return wrap(t.clone())
        return wrap(_transform(op, t, dims, s=sizes, dim=dims, norm=norm))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


fft = _one_dim(
    "fft",
    torch.fft.fft,
    _complex_input,
    False,
    "1-D discrete Fourier transform along axis (n pads or trims), complex of x's precision.",
)
ifft = _one_dim(
    "ifft",
    torch.fft.ifft,
    _complex_input,
    False,
    "1-D inverse discrete Fourier transform along axis, complex of x's precision.",
)
rfft = _one_dim(
    "rfft",
    torch.fft.rfft,
    _real_input,
    False,
    "1-D transform of real input; n//2 + 1 complex outputs of x's precision.",
)
irfft = _one_dim(
    "irfft",
    torch.fft.irfft,
    _complex_input,
    True,
    "Inverse of rfft: n real outputs (default 2*(M-1)) of x's precision.",
)
hfft = _one_dim(
    "hfft",
    torch.fft.hfft,
    _complex_input,
    True,
    "Transform of a Hermitian-symmetric signal given by its first half: n real outputs (default 2*(M-1)).",
)
ihfft = _one_dim(
    "ihfft",
    torch.fft.ihfft,
    _real_input,
    False,
    "Inverse of hfft for real input: n//2 + 1 complex outputs of x's precision.",
)
fftn = _n_dim(
    "fftn",
    torch.fft.fftn,
    _complex_input,
    False,
    "n-D discrete Fourier transform over axes (s pads or trims each), complex of x's precision.",
)
ifftn = _n_dim(
    "ifftn",
    torch.fft.ifftn,
    _complex_input,
    False,
    "n-D inverse discrete Fourier transform over axes, complex of x's precision.",
)
rfftn = _n_dim(
    "rfftn",
    torch.fft.rfftn,
    _real_input,
    False,
    "n-D transform of real input; the last axis keeps s[-1]//2 + 1 complex outputs.",
    real=True,
)
irfftn = _n_dim(
    "irfftn",
    torch.fft.irfftn,
    _complex_input,
    True,
    "Inverse of rfftn: real output of shape s (last axis default 2*(M-1)) and x's precision.",
    real=True,
)


# ---------------------------------------------------------------- frequencies and shifts


def _freq_args(
    n: object, d: object, dtype: _dtypes.DType | None, device: object, func: str
) -> tuple[int, float, torch.dtype, torch.device]:
    n = _length(n, func)
    if isinstance(d, NeuronArray) and d.ndim == 0 and d._t.dtype in _dtypes.REAL_FLOAT + _dtypes.INTEGER:
        d = d._scalar("fftfreq d")  # a 0-d real array is a number, as in NumPy
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise TypeError(f"{func}(): d must be a real number, got {type(d).__name__}")
    device = _device.default_device() if device is None else _device.normalize(device, func)
    dtype = _dtypes.default_float(device) if dtype is None else _dtypes.to_dtype(dtype, func)
    _dtypes.check(dtype, "real floating-point", func, "dtype")
    return n, float(d), dtype, device


def fftfreq(
    n: int, /, *, d: float = 1.0, dtype: _dtypes.DType | None = None, device: torch.device | None = None
) -> NeuronArray:
    """Sample frequencies of an n-point transform with sample spacing d: [0, 1, ..., -1] / (d*n)."""
    n, d, dtype, device = _freq_args(n, d, dtype, device, "fftfreq")
    return wrap(torch.fft.fftfreq(n, d, dtype=dtype, device=device))


def rfftfreq(
    n: int, /, *, d: float = 1.0, dtype: _dtypes.DType | None = None, device: torch.device | None = None
) -> NeuronArray:
    """Sample frequencies of rfft's n//2 + 1 outputs (the Nyquist frequency counted positive)."""
    n, d, dtype, device = _freq_args(n, d, dtype, device, "rfftfreq")
    return wrap(torch.fft.rfftfreq(n, d, dtype=dtype, device=device))


def _shift(name: str, op: Callable[..., Tensor], doc: str) -> Shift:
    def f(x: NeuronArray, /, *, axes: int | Sequence[int] | None = None) -> NeuronArray:
        t = tensor(x, name)
        if t.dim() == 0:
            # a 0-d array has no axis to shift; NumPy raises a ValueError too (with axes=() as well)
            raise ValueError(f"{name}() needs an array of at least one dimension, got a 0-d array")
        dims = normalize_axes(axes, t.dim(), name)
        return wrap(op(t, dim=dims) if dims else t.clone())

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


fftshift = _shift(
    "fftshift", torch.fft.fftshift, "Move the zero-frequency term to the centre of each of axes (all when None)."
)
ifftshift = _shift(
    "ifftshift", torch.fft.ifftshift, "Inverse of fftshift (they differ by one place on odd-length axes)."
)
