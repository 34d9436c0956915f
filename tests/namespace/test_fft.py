"""The fft extension against numpy.fft: values, output dtypes by input precision, n/s/axes/norm, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import assert_same, from_numpy
from trn_backend import fft

NORMS = ("backward", "ortho", "forward")
COMPLEX_OF = {"float32": "complex64", "float64": "complex128", "complex64": "complex64", "complex128": "complex128"}
REAL_OF = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
# (transform, input kind, output kind): "c" complex of the input's precision, "r" real of it
ONE_DIM = {"fft": "c", "ifft": "c", "rfft": "c", "irfft": "r", "hfft": "r", "ihfft": "c"}
N_DIM = {"fftn": "c", "ifftn": "c", "rfftn": "c", "irfftn": "r"}
REAL_INPUT = ("rfft", "ihfft", "rfftn")
HALVED = ("irfft", "hfft", "irfftn")  # default output length 2*(M-1) along the (last) axis


def _signal(shape, dtype_name: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-4, 4, shape)
    if dtype_name.startswith("complex"):
        a = a + 1j * rng.uniform(-4, 4, shape)
    return a.astype(dtype_name)


def _check(got: xp.NeuronArray, expected: np.ndarray, in_dtype: str, kind: str) -> None:
    """Dtype by the input's precision; values to a tolerance relative to the signal's scale."""
    want = COMPLEX_OF[in_dtype] if kind == "c" else REAL_OF[in_dtype]
    single = want in ("float32", "complex64")
    assert_same(got, expected, dtype=want, rtol=0.0, atol=(2e-5 if single else 1e-12) * 8, scaled=True)


def _input_dtypes(name: str) -> list[str]:
    return ["float32", "float64"] if name in REAL_INPUT else ["complex64", "complex128"]


@settings(max_examples=60)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(ONE_DIM)),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
    norm=st.sampled_from(NORMS),
)
def test_one_dimensional_transforms(data, name, shape, norm):
    dtype = data.draw(st.sampled_from(_input_dtypes(name)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.none() | st.integers(1, 9))
    if n is None and name in HALVED and shape[axis] < 2:
        n = 2
    a = _signal(shape, dtype, seed=len(shape))
    got = getattr(fft, name)(from_numpy(a), n=n, axis=axis, norm=norm)
    _check(
        got,
        getattr(np.fft, name)(
            a.astype(COMPLEX_OF[dtype]) if name not in REAL_INPUT else a.astype(np.float64), n=n, axis=axis, norm=norm
        ),
        dtype,
        ONE_DIM[name],
    )


def _explicit_sizes(shape, s, axes, halved: bool) -> list[int]:
    """s with each -1 replaced by the default length (NumPy has no -1): the input's size, or 2*(M-1) on the
    last axis of irfftn."""
    sizes = [shape[ax] if n == -1 else n for ax, n in zip(axes, s, strict=True)]
    if halved and s[-1] == -1:
        sizes[-1] = 2 * (shape[axes[-1]] - 1)
    return sizes


@settings(max_examples=60)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(N_DIM)),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
    norm=st.sampled_from(NORMS),
)
def test_n_dimensional_transforms(data, name, shape, norm):
    dtype = data.draw(st.sampled_from(_input_dtypes(name)))
    axes = data.draw(
        st.none()
        | st.lists(
            st.integers(-len(shape), len(shape) - 1),
            min_size=1,
            max_size=len(shape),
            unique_by=lambda a: a % len(shape),
        )
    )
    s = None
    if axes is not None and data.draw(st.booleans()):
        s = [data.draw(st.integers(1, 7) | st.just(-1)) for _ in axes]
    last = len(shape) - 1 if axes is None else axes[-1]
    if name in HALVED and shape[last] < 2 and (s is None or s[-1] == -1):
        return  # the default output length 2*(M-1) would be 0 (tested among the errors)
    a = _signal(shape, dtype, seed=len(shape))
    got = getattr(fft, name)(from_numpy(a), s=s, axes=axes, norm=norm)
    np_s = None if s is None else _explicit_sizes(shape, s, axes, name in HALVED)
    ref = a.astype(COMPLEX_OF[dtype]) if name not in REAL_INPUT else a.astype(np.float64)
    _check(got, getattr(np.fft, name)(ref, s=np_s, axes=axes, norm=norm), dtype, N_DIM[name])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("norm", NORMS)
def test_round_trips(dtype, norm):
    a = _signal((3, 4), dtype, seed=1)
    x = from_numpy(a)
    _check(fft.ifft(fft.fft(x, norm=norm), norm=norm), a.astype(COMPLEX_OF[dtype]), dtype, "c")
    _check(fft.ifftn(fft.fftn(x, norm=norm), norm=norm), a.astype(COMPLEX_OF[dtype]), dtype, "c")
    if dtype.startswith("float"):
        _check(fft.irfft(fft.rfft(x, norm=norm), n=4, norm=norm), a, dtype, "r")
        _check(fft.irfftn(fft.rfftn(x, norm=norm), s=(3, 4), axes=(0, 1), norm=norm), a, dtype, "r")
        _check(fft.hfft(fft.ihfft(x, norm=norm), n=4, norm=norm), a, dtype, "r")


def test_real_input_to_complex_transforms_keeps_its_precision():
    a = _signal((5,), "float32", seed=2)
    _check(fft.fft(from_numpy(a)), np.fft.fft(a.astype(np.float64)), "float32", "c")
    _check(fft.irfft(from_numpy(a)), np.fft.irfft(a.astype(np.float64)), "float32", "r")
    _check(fft.ifftn(from_numpy(a.astype(np.float64))), np.fft.ifftn(a.astype(np.float64)), "float64", "c")


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_integer_input_promotes_to_the_default_dtypes(dtype):
    a = np.arange(6, dtype=dtype)
    ref = a.astype(np.float64)  # the CPU's default float, as NumPy's fft of integers
    _check(fft.fft(from_numpy(a)), np.fft.fft(a), "complex128", "c")
    _check(fft.rfft(from_numpy(a)), np.fft.rfft(a), "float64", "c")
    _check(fft.rfftn(from_numpy(a)), np.fft.rfftn(ref), "float64", "c")
    _check(fft.hfft(from_numpy(a)), np.fft.hfft(ref), "complex128", "r")


def test_fftn_over_no_axes_is_a_copy():
    x = from_numpy(np.arange(4.0))
    out = fft.fftn(x, axes=())
    assert_same(out, np.arange(4.0).astype(np.complex128))
    assert out._t.data_ptr() != x._t.data_ptr()
    with pytest.raises(ValueError, match="at least one axis"):
        fft.rfftn(x, axes=())


# ---------------------------------------------------------------- frequencies and shifts


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.25, 3])
def test_fftfreq_and_rfftfreq(n, d):
    assert_same(fft.fftfreq(n, d=d, dtype=xp.float32), np.fft.fftfreq(n, d).astype(np.float32), rtol=1e-6)
    assert_same(fft.rfftfreq(n, d=d, dtype="float32"), np.fft.rfftfreq(n, d).astype(np.float32), rtol=1e-6)
    assert_same(fft.fftfreq(n, d=d), np.fft.fftfreq(n, d), rtol=1e-15)  # float64, the CPU's default float
    assert_same(fft.rfftfreq(n, d=d), np.fft.rfftfreq(n, d), rtol=1e-15)
    assert_same(fft.fftfreq(n, d=d, dtype=xp.float64), np.fft.fftfreq(n, d), rtol=1e-15)
    out = fft.rfftfreq(n, d=d, dtype=xp.float64, device="cpu")
    assert_same(out, np.fft.rfftfreq(n, d), rtol=1e-15)
    assert out.device == xp.__array_namespace_info__().default_device()


@settings(max_examples=40)
@given(
    data=st.data(),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5),
    dtype=st.sampled_from(["bool", "int8", "uint16", "uint32", "uint64", "float32", "complex128"]),
)
def test_fftshift_and_ifftshift(data, shape, dtype):
    ndim = len(shape)
    axes = data.draw(
        st.none()
        | st.integers(-ndim, ndim - 1)
        | st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple)
    )
    a = (np.arange(math.prod(shape)).reshape(shape) * 7 % 11).astype(dtype)
    assert_same(fft.fftshift(from_numpy(a), axes=axes), np.fft.fftshift(a, axes=axes))
    assert_same(fft.ifftshift(from_numpy(a), axes=axes), np.fft.ifftshift(a, axes=axes))


def test_shifting_a_0d_array_raises_like_numpy():
    x = from_numpy(np.array(3.0))
    for shift, np_shift in ((fft.fftshift, np.fft.fftshift), (fft.ifftshift, np.fft.ifftshift)):
        for axes in (None, ()):
            with pytest.raises(ValueError):
                np_shift(np.array(3.0), axes=axes)
            with pytest.raises(ValueError, match=r"shift\(\) needs an array of at least one dimension"):
                shift(x, axes=axes)


# ---------------------------------------------------------------- errors


def test_transform_argument_errors():
    x = from_numpy(np.ones(4, np.complex64))
    with pytest.raises(ValueError, match=r"fft\(\): norm must be one of"):
        fft.fft(x, norm="none")
    with pytest.raises(ValueError, match=r"ifft\(\): n must be a positive number of points, got 0"):
        fft.ifft(x, n=0)
    with pytest.raises(TypeError, match="n must be an int"):
        fft.fft(x, n=2.0)
    with pytest.raises(IndexError, match="axis 1 is out of bounds"):
        fft.fft(x, axis=1)
    with pytest.raises(IndexError, match="out of bounds"):
        fft.fft(from_numpy(np.array(1.0)))
    with pytest.raises(TypeError, match=r"rfft\(\) needs x of a real numeric dtype, got complex64"):
        fft.rfft(x)
    with pytest.raises(TypeError, match=r"ihfft\(\) needs x of a real numeric dtype"):
        fft.ihfft(x)
    with pytest.raises(TypeError, match=r"fft\(\) needs x of a numeric dtype, got bool"):
        fft.fft(from_numpy(np.ones(2, bool)))
    with pytest.raises(TypeError, match="expects x to be a NeuronArray"):
        fft.fft(np.ones(4))
    with pytest.raises(ValueError, match=r"irfft\(\): an input of length 1 .* 0 output points"):
        fft.irfft(from_numpy(np.ones(1, np.complex64)))
    with pytest.raises(ValueError, match=r"fft\(\): an input of length 0"):
        fft.fft(from_numpy(np.ones(0, np.complex64)))


def test_n_dimensional_argument_errors():
    x = from_numpy(np.ones((2, 3), np.complex128))
    with pytest.raises(ValueError, match="s needs axes"):
        fft.fftn(x, s=(2, 3))
    with pytest.raises(ValueError, match="s has 1 entries but axes has 2"):
        fft.ifftn(x, s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="repeated axis"):
        fft.fftn(x, axes=(0, -2))
    with pytest.raises(ValueError, match=r"s\[i\] must be a positive number of points, got 0"):
        fft.fftn(x, s=(0,), axes=(0,))
    with pytest.raises(ValueError, match=r"irfftn\(\): an input of length 1"):
        fft.irfftn(from_numpy(np.ones((2, 1), np.complex128)))


def test_frequency_argument_errors():
    with pytest.raises(TypeError, match=r"fftfreq\(\) needs dtype of a real floating-point dtype, got comp"):
        fft.fftfreq(4, dtype=xp.complex64)
    with pytest.raises(TypeError, match=r"rfftfreq\(\) needs dtype of a real floating-point dtype, got int"):
        fft.rfftfreq(4, dtype=xp.int64)
    with pytest.raises(TypeError, match="'float12' is not a dtype"):
        fft.fftfreq(4, dtype="float12")
    with pytest.raises(ValueError, match="n must be a positive number of points, got 0"):
        fft.fftfreq(0)
    with pytest.raises(TypeError, match="d must be a real number"):
        fft.rfftfreq(4, d="1")
    with pytest.raises(TypeError, match="expected a device"):
        fft.fftfreq(4, device=0.5)
