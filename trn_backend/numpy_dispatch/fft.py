"""NumPy's "Discrete Fourier Transform (numpy.fft)" section on the namespace's fft: the 1-d, 2-d and n-d transforms
and the shifts. norm=None is 'backward'; real input of a complex-input transform promotes to the matching complex
dtype, as NumPy allows, and integer input transforms in the device's default float (float64 as in NumPy, float32 on
Neuron).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import _dtypes
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
    "fft": _complex, "ifft": _complex, "irfft": _complex, "hfft": _complex, "rfft": _floating,
    "ihfft": _floating, "fftn": _complex, "ifftn": _complex, "irfftn": _complex, "rfftn": _floating,
}


def _fft_1d(name: str) -> Callable[..., A]:
    def impl(a: A, n: int | None = None, axis: int = -1, norm: str | None = None) -> A:
        return getattr(xp.fft, name)(_FFT_INPUT[name](a), n=n, axis=axis, norm=_norm(norm))
    impl.__name__ = name
    impl.__doc__ = f"numpy.fft.{name} (norm=None is 'backward'; integers transform in the default float)."
    return impl


def _fft_nd(name: str, default_axes: tuple[int, ...] | None) -> Callable[..., A]:
    """An n-d transform; the 2-d ones are the same with axes (-2, -1) by default."""
    base = name.replace("2", "n")

    def impl(a: A, s: Sequence[int] | None = None, axes: Sequence[int] | None = default_axes,
             norm: str | None = None) -> A:
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
