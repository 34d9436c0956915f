"""fft cases where NumPy 2's answer is the oracle on the same data: which error an empty transform of the wrong
dtype raises, float16 input on NumPy's entry points (NumPy's dtype and normalization rules), shifts of 0-d
arrays."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.support import assert_same, from_numpy
from trn_backend import fft

ONE_DIM = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
NORMS = (None, "backward", "ortho", "forward")


def _error_type(call) -> type[BaseException]:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the type is the oracle
        return type(e)
    raise AssertionError("NumPy answered where an error was expected")


@pytest.mark.parametrize("name", ["rfft", "ihfft", "rfftn", "fft", "irfft"])
@pytest.mark.parametrize("dtype", ["float64", "complex64", "complex128"])
def test_an_empty_transform_axis_is_the_error_numpy_raises_whatever_the_dtype(name, dtype):
    # NumPy checks the number of points before the dtype: complex input of rfft with an empty axis is the
    # ValueError of the empty transform, not the TypeError of the dtype
    a = np.zeros((3, 0), dtype)
    kwargs = {"axes": (-2, -1)} if name.endswith("n") else {}
    want = _error_type(lambda: getattr(np.fft, name)(a, **kwargs))
    for call in (
        lambda: getattr(fft, name)(from_numpy(a), **kwargs),
        lambda: getattr(np.fft, name)(from_numpy(a), **kwargs),
    ):
        with pytest.raises(want):
            call()


def test_real_transforms_of_complex_input_still_raise_a_type_error():
    a = np.ones(4, np.complex64)
    for name in ("rfft", "ihfft"):
        with pytest.raises(TypeError):
            getattr(np.fft, name)(a)
        with pytest.raises(TypeError, match=rf"{name}\(\) needs x of a real numeric dtype"):
            getattr(fft, name)(from_numpy(a))


@pytest.mark.parametrize("name", ONE_DIM)
def test_float16_input_on_numpys_entry_points_follows_numpys_dtype_and_factor(name):
    # NumPy computes float16 input in float32 but takes the normalization factor in float16 and gives irfft's
    # and hfft's real result in float16; values to a few float32 (or float16) units
    rng = np.random.default_rng(3)
    for norm, n, shape in itertools.product(NORMS, (None, 1, 5, 8), ((2,), (3, 5))):
        a = (rng.standard_normal(shape) * 100).astype(np.float16)
        want = getattr(np.fft, name)(a, n=n, norm=norm)
        got = getattr(np.fft, name)(from_numpy(a), n=n, norm=norm)
        single = want.dtype != np.float16
        assert_same(got, want, dtype=str(want.dtype), rtol=0.0, atol=(2e-5 if single else 2e-3) * 8, scaled=True)


def test_float16_extremes_through_ifft_match_numpy():
    a = np.array([-65504, 65504], np.float16)
    assert_same(np.fft.ifft(from_numpy(a), n=5), np.fft.ifft(a, n=5), dtype="complex64", rtol=1e-6)


@pytest.mark.parametrize("shift", ["fftshift", "ifftshift"])
def test_shifts_of_0d_arrays_raise_on_both_routes(shift):
    a = np.array(2.5)
    want = _error_type(lambda: getattr(np.fft, shift)(a))
    with pytest.raises(want):
        getattr(fft, shift)(from_numpy(a))
    with pytest.raises(want):
        getattr(np.fft, shift)(from_numpy(a))
