"""NumPy's "Discrete Fourier Transform (numpy.fft)" section on the namespace's fft: the 1-d, 2-d and n-d transforms
and the shifts. norm=None is 'backward'; real input of a complex-input transform promotes to the matching complex
dtype, as NumPy allows, and integer input transforms in the device's default float (float64 as in NumPy, float32 on
Neuron). float16 input of the 1-d transforms follows NumPy's rule: computed in float32 with the normalization
factor rounded to float16, irfft's and hfft's real result in float16.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence

import numpy as np

from .. import _dtypes
from .._helpers import normalize_axis
from ._common import A, _floating
from ._registry import implements, xp


def _norm(norm: str | None) -> str:
    return "backward" if norm is None else norm


def _complex(x: A) -> A:
    """Real input of a complex-input transform promotes to the matching complex dtype, as NumPy allows."""
    if x._t.dtype in _dtypes.COMPLEX_FLOAT:
        return x
    x = _floating(x)
    return xp.astype(x, _dtypes.complex_of(x._t.dtype))


# the input each transform takes: complex (real input promotes, as NumPy allows) or real
_FFT_INPUT: dict[str, Callable[[A], A]] = {
    "fft": _complex,
    "ifft": _complex,
    "irfft": _complex,
    "hfft": _complex,
    "rfft": _floating,
    "ihfft": _floating,
    "fftn": _complex,
    "ifftn": _complex,
    "irfftn": _complex,
    "rfftn": _floating,
}


# the 1-d transforms NumPy counts as inverse (1/n with norm='backward'), and those with a real result
_INVERSE = frozenset({"ifft", "irfft", "ihfft"})
_REAL_OUT = frozenset({"irfft", "hfft"})


def _float16_1d(name: str, a: A, n: int | None, axis: int, norm: str) -> A:
    """A 1-d transform of float16 input by NumPy's rule: computed in float32, but the normalization factor
    rounded to float16 (NumPy takes it in ``result_type(float16, 1.0)``, float16), and irfft's and hfft's real
    result in float16 (complex results are complex64: there is no complex32)."""
    axis = normalize_axis(axis, a.ndim, f"numpy.fft.{name}")
    points = n if n is not None else (2 * (a.shape[axis] - 1) if name in _REAL_OUT else a.shape[axis])
    # the transform without scaling, then NumPy's factor
    plain = "forward" if name in _INVERSE else "backward"
    out = getattr(xp.fft, name)(_FFT_INPUT[name](a), n=n, axis=axis, norm=plain)
    if norm == "ortho":
        factor = np.reciprocal(np.sqrt(points, dtype=np.float16))
    elif norm == ("backward" if name in _INVERSE else "forward"):
        factor = np.reciprocal(points, dtype=np.float16)
    else:
        factor = None
    if factor is not None:
        out = xp.multiply(out, builtins.float(factor))
    return xp.astype(out, _dtypes.float16) if name in _REAL_OUT else out


def _fft_1d(name: str) -> Callable[..., A]:
    def impl(a: A, n: int | None = None, axis: int = -1, norm: str | None = None) -> A:
        if a._t.dtype is _dtypes.float16 and (n is None or n >= 1):
            return _float16_1d(name, a, n, axis, _norm(norm))
        return getattr(xp.fft, name)(_FFT_INPUT[name](a), n=n, axis=axis, norm=_norm(norm))

    impl.__name__ = name
    impl.__doc__ = f"numpy.fft.{name} (norm=None is 'backward'; integers transform in the default float)."
    return impl


def _fft_nd(name: str, default_axes: tuple[int, ...] | None) -> Callable[..., A]:
    """An n-d transform; the 2-d ones are the same with axes (-2, -1) by default."""
    base = name.replace("2", "n")

    def impl(
        a: A, s: Sequence[int] | None = None, axes: Sequence[int] | None = default_axes, norm: str | None = None
    ) -> A:
        return getattr(xp.fft, base)(_FFT_INPUT[base](a), s=s, axes=axes, norm=_norm(norm))

    impl.__name__ = name
    impl.__doc__ = f"numpy.fft.{name} (norm=None is 'backward'; integers transform in the default float)."
    return impl


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    implements(getattr(np.fft, _name), arrays="a")(_fft_1d(_name))
for _name in ("fftn", "ifftn", "rfftn", "irfftn"):
    implements(getattr(np.fft, _name), arrays="a")(_fft_nd(_name, None))
    implements(getattr(np.fft, _name.replace("n", "2")), arrays="a")(_fft_nd(_name.replace("n", "2"), (-2, -1)))


@implements(np.fft.fftshift, arrays="x")
def fftshift(x: A, axes: int | Sequence[int] | None = None) -> A:
    """numpy.fft.fftshift."""
    return xp.fft.fftshift(x, axes=axes)


@implements(np.fft.ifftshift, arrays="x")
def ifftshift(x: A, axes: int | Sequence[int] | None = None) -> A:
    """numpy.fft.ifftshift."""
    return xp.fft.ifftshift(x, axes=axes)
