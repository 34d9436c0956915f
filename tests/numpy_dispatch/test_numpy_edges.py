"""Edge cases of NumPy compatibility, each against NumPy's answer."""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import ml_dtypes
import numpy as np
import pytest
import torch

import trn_backend as xp

COMPLEX = np.array([[1 + 2j, 3 - 1j], [0.5j, 2.0]])


def test_ndarray_astype_and_np_astype_cast_complex_to_real_as_numpy() -> None:
    z = xp.asarray(COMPLEX)
    for cast in (lambda a: a.astype(np.float32), lambda a: np.astype(a, np.float32)):
        with pytest.warns(np.exceptions.ComplexWarning):
            ours = cast(z)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            theirs = cast(COMPLEX)
        np.testing.assert_array_equal(np.asarray(ours), theirs)
        assert ours.dtype == theirs.dtype
    with pytest.raises(TypeError, match="imaginary"):  # the standard's astype still refuses
        xp.astype(z, xp.float32)


def test_dask_reductions_of_complex_chunks() -> None:
    d = da.from_array(xp.asarray(COMPLEX), chunks=1)
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.testing.assert_allclose(np.asarray(d.var().compute()), np.var(COMPLEX))
        np.testing.assert_allclose(np.asarray(d.std().compute()), np.std(COMPLEX))
        np.testing.assert_array_equal(np.asarray(da.tril(d).compute()), np.tril(COMPLEX))


def _nearest(value: float, dtype) -> float:
    """The value of ``dtype`` (16 bits) nearest to ``value``, ties to even, found exactly with fractions among the
    neighbours of a nearby value."""
    from fractions import Fraction

    bits = int(np.array([value], dtype=np.float32).astype(dtype).view(np.uint16)[0])
    candidates = [float(np.array([bits + step], dtype=np.uint16).view(dtype)[0]) for step in range(-2, 3)]
    return min(candidates, key=lambda c: (abs(Fraction(c) - Fraction(value)),
                                          int(np.array([c], dtype=dtype).view(np.uint16)[0]) & 1))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_python_floats_into_half_dtypes_round_once(dtype) -> None:
    # just above ties of float16 and bfloat16: float32 would round them onto the tie first
    values = [1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40, -(1 + 2**-11 + 2**-40)]
    expected = np.array([_nearest(v, dtype) for v in values]).astype(dtype)
    np.testing.assert_array_equal(np.asarray(xp.asarray(values, dtype=dtype)), expected)
    np.testing.assert_array_equal(np.asarray(xp.full(3, values[0], dtype=dtype)), np.full(3, expected[0]))
    np.testing.assert_array_equal(np.asarray(xp.zeros(1, dtype=dtype) + values[0]), expected[:1])
    z = xp.zeros(1, dtype=dtype)
    z[0] = values[0]
    np.testing.assert_array_equal(np.asarray(z), expected[:1])


def test_numpy_long_long_arrays_convert() -> None:
    a = np.array([2**63], dtype="Q")  # 'Q' equals uint64 but torch.from_numpy refuses it
    np.testing.assert_array_equal(np.asarray(xp.asarray(a)), a)
    np.testing.assert_array_equal(np.asarray(xp.asarray(np.array([-5], dtype="q"))), [-5])


def test_device_types_this_build_lacks_are_value_errors() -> None:
    for name in ("xpu", "mps", "hpu"):
        with pytest.raises(ValueError, match=f"'{name}' is a {name} device"):
            xp.zeros(2, device=name)


def test_clip_with_a_0d_float_bound_rounds_inward_on_integers() -> None:
    a = np.arange(5, dtype=np.int16)
    x = xp.asarray(a)
    np.testing.assert_array_equal(np.asarray(xp.clip(x, xp.asarray(np.array(2.7)))), np.asarray(xp.clip(x, 2.7)))
    np.testing.assert_array_equal(np.asarray(xp.clip(x, max=xp.asarray(np.array(2.7)))), [0, 1, 2, 2, 2])


def test_0d_integer_arrays_as_axes_counts_and_shifts() -> None:
    a = np.arange(6.0).reshape(2, 3)
    x, i1 = xp.asarray(a), xp.asarray(1)
    np.testing.assert_array_equal(np.asarray(xp.sum(x, axis=i1)), a.sum(axis=1))
    assert xp.expand_dims(x, axis=i1).shape == (2, 1, 3)
    np.testing.assert_array_equal(np.asarray(xp.repeat(x, xp.asarray(2), axis=1)), np.repeat(a, 2, axis=1))
    np.testing.assert_array_equal(np.asarray(xp.roll(x, i1)), np.roll(a, 1))
    np.testing.assert_array_equal(np.asarray(xp.fft.fftfreq(4, d=xp.asarray(0.5))), np.fft.fftfreq(4, d=0.5))


def test_numpy_functions_on_bool_and_vector_edges() -> None:
    v, b = np.array([1.0, 2.0, 3.0]), np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(np.asarray(np.tril(xp.asarray(v))), np.tril(v))
    np.testing.assert_array_equal(np.asarray(np.triu(xp.asarray(v), 1)), np.triu(v, 1))
    assert int(np.trace(xp.asarray(b))) == np.trace(b) and np.trace(xp.asarray(b)).dtype == np.int64
    for call in (lambda m: np.min(m, initial=True), lambda m: np.max(m, axis=0, initial=False),
                 lambda m: np.max(m[:0], axis=0, initial=True)):
        ours, theirs = call(xp.asarray(b)), call(b)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(np.asarray(ours), theirs)
    ints = np.arange(3, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(np.full_like(xp.asarray(ints), 2.7)), np.full_like(ints, 2.7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(float(np.nanquantile(xp.asarray(np.zeros(0, np.int64)), 0.5)))


def test_numpy_scalars_assign_as_strong_values() -> None:
    ours, theirs = xp.zeros(2, dtype=xp.uint8), np.zeros(2, dtype=np.uint8)
    ours[0] = theirs[0] = np.int64(-3)  # a NumPy scalar is cast like an array, not range-checked like an int
    np.testing.assert_array_equal(np.asarray(ours), theirs)
    f = xp.zeros(1, dtype=xp.float32)
    with pytest.warns(np.exceptions.ComplexWarning):
        f[0] = np.complex128(2 + 3j)
    assert float(f[0]) == 2.0
    b = xp.zeros(1, dtype=xp.bfloat16)
    b[0] = np.float32(1.5)
    assert float(b[0]) == 1.5


def test_dask_tokens_of_device_arrays_do_not_copy_to_the_host() -> None:
    x = xp.NeuronArray(torch.empty(4, device="meta"))  # a device with no host copy at all
    token = x.__dask_tokenize__()
    assert token == x.__dask_tokenize__()
    x._t.add_(1)  # an in-place write bumps torch's version counter, and so the token
    assert token != x.__dask_tokenize__()
