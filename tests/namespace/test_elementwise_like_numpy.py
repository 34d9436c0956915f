"""Namespace functions where the array API standard leaves the answer unspecified, and their NumPy entry points,
against NumPy 2 on the same data: creation from float bounds and fill values, mixed-dtype grids, Python ints
beside bool arrays, element-wise kernels torch lacks or rounds differently."""

from __future__ import annotations

import numpy as np
import pytest

import trn_backend as xp
from tests.support import assert_same


@pytest.mark.parametrize("bounds", [(2.5,), (0.5, 3), (-0.5, 3, 0.7), (3.2, -1, -0.9), (1, 7.5, 2)])
@pytest.mark.parametrize("dtype", ["int8", "int64", "uint32"])
def test_arange_of_floats_into_an_integer_dtype(bounds, dtype):
    if dtype == "uint32" and bounds == (3.2, -1, -0.9):
        pytest.skip("NumPy wraps the negative value into uint32")
    like = xp.asarray([1])
    assert_same(xp.arange(*bounds, dtype=getattr(xp, dtype)), np.arange(*bounds, dtype=dtype))
    assert_same(np.arange(*bounds, dtype=dtype, like=like), np.arange(*bounds, dtype=dtype))


@pytest.mark.parametrize(
    ("dtype", "fill"),
    [("int16", 2.5), ("uint64", 1e-310), ("int8", -3.9), ("bool", 0.5), ("bool", 2**63 - 1), ("float32", 2**63)],
)
def test_full_like_converts_as_numpy(dtype, fill):
    x = np.zeros(3, dtype=dtype)
    assert_same(xp.full_like(xp.asarray(x), fill), np.full_like(x, fill))
    assert_same(np.full_like(xp.asarray(x), fill), np.full_like(x, fill))


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64 - 1])
def test_an_int_beyond_int64_beside_a_bool_array_overflows(value):
    """NumPy converts a Python int beside a bool array to int64 first (full, full_like, comparisons)."""
    x = np.array([True, False])
    for call in (
        lambda a: np.full_like(a, value),
        lambda a: np.equal(a, value),
        lambda a: np.less(value, a),
        lambda a: np.full(2, value, dtype=bool, like=a),
    ):
        with pytest.raises(OverflowError):
            call(x)
        with pytest.raises(OverflowError):
            call(xp.asarray(x))
    with pytest.raises(OverflowError):
        xp.full_like(xp.asarray(x), value)


def test_an_int_beyond_an_integer_dtype_still_compares_exactly():
    x = np.array([1, -2], dtype=np.int8)
    assert_same(np.equal(xp.asarray(x), 2**64 - 1), np.equal(x, 2**64 - 1))
    assert_same(np.less(xp.asarray(x), 2**63), np.less(x, 2**63))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("dtypes", [("float16", "uint8"), ("uint16", "complex128"), ("int8", "float32", "bool")])
def test_meshgrid_keeps_each_dtype(dtypes, indexing):
    arrays = [np.arange(i + 2).astype(d) for i, d in enumerate(dtypes)]
    want = np.meshgrid(*arrays, indexing=indexing)
    for got in (
        xp.meshgrid(*map(xp.asarray, arrays), indexing=indexing),
        np.meshgrid(*map(xp.asarray, arrays), indexing=indexing),
    ):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "uint32", "int64", "uint64"])
def test_sqrt_is_within_one_ulp_of_the_correctly_rounded_root(dtype):
    """torch's square root: within one ulp of NumPy's correctly rounded one (torch's vectorized float64 CPU kernel
    can be an ulp off, sqrt(2.0) on some builds); special values and the sign of zeros exactly; integers compute
    in float64 from their exact values."""
    rng = np.random.default_rng(0)
    if dtype.startswith("float"):
        info = np.finfo(dtype)
        mags = rng.uniform(np.log10(info.smallest_subnormal), np.log10(info.max), 5000)
        x = np.concatenate([10.0**mags, [0.0, -0.0, 2.0, 3.0, np.inf, np.nan, -1.0]]).astype(dtype)
    else:
        x = np.concatenate(
            [
                rng.integers(0, np.iinfo(dtype).max, 5000, dtype=dtype, endpoint=True),
                np.array([0, 2, 3, 608, 1096], dtype=dtype),
            ]
        )
    with np.errstate(all="ignore"):
        want = np.sqrt(x if dtype.startswith("float") else x.astype(np.float64))
    got = np.asarray(xp.sqrt(xp.asarray(x)))
    assert got.dtype == want.dtype
    finite = np.isfinite(want)
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=1)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    signed = ~np.isnan(want)  # the sign of zeros (a NaN's sign bit means nothing)
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))
