"""The fft extension of the array API standard (2025.12), on torch.fft.

Output dtypes follow the input's precision: complex64 in, complex64 out; float32 in rfft, complex64 out;
complex64 in irfft/hfft, float32 out. Real floating input of the complex transforms is read as complex of the
same precision and integer input promotes to the default floating (or complex) dtype, as in NumPy; float16 and
bfloat16 input transforms in float32 (complex64 and float32 results; NumPy's are complex64 too); bool input is a
TypeError.
"""

from __future__ import annotations

from ._api import fft as _impl
from ._overrides import public

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

fft = public(_impl.fft, "fft.fft")
ifft = public(_impl.ifft, "fft.ifft")
fftn = public(_impl.fftn, "fft.fftn")
ifftn = public(_impl.ifftn, "fft.ifftn")
rfft = public(_impl.rfft, "fft.rfft")
irfft = public(_impl.irfft, "fft.irfft")
rfftn = public(_impl.rfftn, "fft.rfftn")
irfftn = public(_impl.irfftn, "fft.irfftn")
hfft = public(_impl.hfft, "fft.hfft")
ihfft = public(_impl.ihfft, "fft.ihfft")
fftfreq = public(_impl.fftfreq, "fft.fftfreq")
rfftfreq = public(_impl.rfftfreq, "fft.rfftfreq")
fftshift = public(_impl.fftshift, "fft.fftshift")
ifftshift = public(_impl.ifftshift, "fft.ifftshift")
