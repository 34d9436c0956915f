"""Namespace functions where the array API standard leaves the answer unspecified, and their NumPy entry points,
against NumPy 2 on the same data: creation from float bounds and fill values, mixed-dtype grids, Python ints
beside bool arrays, element-wise kernels torch lacks or rounds differently."""

from __future__ import annotations

import numpy as np
import pytest

import trn_backend as xp


def _same(got, want):
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bounds", [(2.5,), (0.5, 3), (-0.5, 3, 0.7), (3.2, -1, -0.9), (1, 7.5, 2)])
@pytest.mark.parametrize("dtype", ["int8", "int64", "uint32"])
def test_arange_of_floats_into_an_integer_dtype(bounds, dtype):
    if dtype == "uint32" and bounds == (3.2, -1, -0.9):
        pytest.skip("NumPy wraps the negative value into uint32")
    like = xp.asarray([1])
    _same(xp.arange(*bounds, dtype=getattr(xp, dtype)), np.arange(*bounds, dtype=dtype))
    _same(np.arange(*bounds, dtype=dtype, like=like), np.arange(*bounds, dtype=dtype))


@pytest.mark.parametrize(("dtype", "fill"), [("int16", 2.5), ("uint64", 1e-310), ("int8", -3.9), ("bool", 0.5),
                                             ("bool", 2**63 - 1), ("float32", 2**63)])
def test_full_like_converts_as_numpy(dtype, fill):
    x = np.zeros(3, dtype=dtype)
    _same(xp.full_like(xp.asarray(x), fill), np.full_like(x, fill))
    _same(np.full_like(xp.asarray(x), fill), np.full_like(x, fill))


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64 - 1])
def test_an_int_beyond_int64_beside_a_bool_array_overflows(value):
    """NumPy converts a Python int beside a bool array to int64 first (full, full_like, comparisons)."""
    x = np.array([True, False])
    for call in (lambda a: np.full_like(a, value), lambda a: np.equal(a, value), lambda a: np.less(value, a),
                 lambda a: np.full(2, value, dtype=bool, like=a)):
        with pytest.raises(OverflowError):
            call(x)
        with pytest.raises(OverflowError):
            call(xp.asarray(x))
    with pytest.raises(OverflowError):
        xp.full_like(xp.asarray(x), value)


def test_an_int_beyond_an_integer_dtype_still_compares_exactly():
    x = np.array([1, -2], dtype=np.int8)
    _same(np.equal(xp.asarray(x), 2**64 - 1), np.equal(x, 2**64 - 1))
    _same(np.less(xp.asarray(x), 2**63), np.less(x, 2**63))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("dtypes", [("float16", "uint8"), ("uint16", "complex128"), ("int8", "float32", "bool")])
def test_meshgrid_keeps_each_dtype(dtypes, indexing):
    arrays = [np.arange(i + 2).astype(d) for i, d in enumerate(dtypes)]
    want = np.meshgrid(*arrays, indexing=indexing)
    for got in (xp.meshgrid(*map(xp.asarray, arrays), indexing=indexing),
                np.meshgrid(*map(xp.asarray, arrays), indexing=indexing)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "uint32", "int64", "uint64"])
def test_sqrt_is_correctly_rounded(dtype):
    """IEEE 754's square root is correctly rounded, NumPy's too (torch's vectorized CPU kernel can be an ulp
    off: sqrt(2.0)); integers compute in float64 from their exact values."""
    rng = np.random.default_rng(0)
    if dtype.startswith("float"):
        info = np.finfo(dtype)
        mags = rng.uniform(np.log10(info.smallest_subnormal), np.log10(info.max), 5000)
        x = np.concatenate([10.0 ** mags, [0.0, -0.0, 2.0, 3.0, np.inf, np.nan, -1.0]]).astype(dtype)
    else:
        x = np.concatenate([rng.integers(0, np.iinfo(dtype).max, 5000, dtype=dtype, endpoint=True),
                            np.array([0, 2, 3, 608, 1096], dtype=dtype)])
    with np.errstate(all="ignore"):
        want = np.sqrt(x if dtype.startswith("float") else x.astype(np.float64))
    got = np.asarray(xp.sqrt(xp.asarray(x)))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    signed = ~np.isnan(want)  # the sign of zeros (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))


def test_round_of_bools_is_floating():
    """NumPy rounds bools with rint, a floating ufunc: the values as NumPy's, in the default float (the rule for
    integer input of floating operations); other decimals are NumPy's TypeError."""
    x = np.array([True, False])
    got = np.round(xp.asarray(x))
    assert got.dtype == xp.float64
    np.testing.assert_array_equal(np.asarray(got), np.round(x))
    with pytest.raises(TypeError):
        np.round(x, 1)
    with pytest.raises(TypeError, match="numpy.round"):
        np.round(xp.asarray(x), 1)


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
@pytest.mark.parametrize("make", [np.asarray, np.array])
def test_numpy_conversion_of_complex_to_real_keeps_the_real_part(make, dtype):
    """NumPy's asarray/array cast unsafely: the real part, with a ComplexWarning (into bool: the truth of both
    parts, no warning); the namespace's asarray refuses, as its astype (the standard asks it to)."""
    x = np.array([1.7 + 2j, -3.2 - 1j, 1j, 0j])
    if dtype == "bool":
        _same(make(xp.asarray(x), dtype=dtype, like=xp.asarray(x)), make(x, dtype=dtype))
    else:
        with pytest.warns(np.exceptions.ComplexWarning):
            want = make(x, dtype=dtype)
        with pytest.warns(np.exceptions.ComplexWarning):
            _same(make(xp.asarray(x), dtype=dtype, like=xp.asarray(x)), want)
        with pytest.raises(TypeError, match="imaginary part"):
            xp.asarray(xp.asarray(x), dtype=getattr(xp, dtype))


INTEGERS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"]


@pytest.mark.parametrize("dtype", INTEGERS)
def test_logical_and_bitwise_functions_on_every_integer_dtype(dtype):
    """torch lacks logical kernels for uint16/32/64: every logical and bitwise function answers on every integer
    dtype as NumPy's."""
    a = np.array([0, 1, 2, 0, 5, 0, 3], dtype=dtype)
    if dtype == "uint64":
        a = np.array([0, 1, 2**63, 2**64 - 1, 0, 3, 1], dtype=dtype)
    b = a[::-1].copy()
    _same(xp.logical_not(xp.asarray(a)), np.logical_not(a))
    names = ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"]
    for name in names:
        _same(getattr(xp, name)(xp.asarray(a), xp.asarray(b)), getattr(np, name)(a, b))
    if dtype != "bool":
        shift = b % 8
        _same(xp.bitwise_left_shift(xp.asarray(a), xp.asarray(shift)), np.left_shift(a, shift))
        _same(xp.bitwise_right_shift(xp.asarray(a), xp.asarray(shift)), np.right_shift(a, shift))
    _same(xp.bitwise_invert(xp.asarray(a)), np.invert(a))


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_numpy_floor_divide_values(dtype):
    """NumPy's floor division of floats (its divmod: -2 // inf is -1, inf // 3 NaN), which the ufunc table can
    call; the namespace's floor_divide keeps the standard's special cases (-0 and inf there)."""
    from trn_backend.numpy_dispatch.mathematical import floor_divide

    vals = np.array([-2.0, 2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 7.5, -7.5, 1e300, -3.0, 3.0, 0.1])
    x, y = (v.astype(dtype) for v in np.meshgrid(vals, vals))
    with np.errstate(all="ignore"):
        want = np.floor_divide(x, y)
    got = np.asarray(floor_divide(xp.asarray(x), xp.asarray(y)))
    _same(got, want)
    signed = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))
    assert float(xp.floor_divide(xp.asarray(np.array([-2.0], dtype)), np.inf)[0]) == 0.0  # the standard's -0


@pytest.mark.parametrize("value", [607, -1, 1.5, 0.0, 1j, True, 2**70])
def test_logical_functions_read_a_python_scalar_as_its_truth(value):
    """NumPy's logical functions take a Python int beside a narrow array without overflow (607 beside uint8),
    but convert it to int64 first (beyond it, OverflowError)."""
    a = np.array([254, 0], dtype=np.uint8)
    for name in ("logical_and", "logical_or", "logical_xor"):
        try:
            want = getattr(np, name)(value, a)
        except OverflowError:
            with pytest.raises(OverflowError):
                getattr(xp, name)(value, xp.asarray(a))
            continue
        _same(getattr(xp, name)(value, xp.asarray(a)), want)
        _same(getattr(xp, name)(xp.asarray(a), value), getattr(np, name)(a, value))
