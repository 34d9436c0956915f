"""Integer powers and shifts at the edges of their dtypes, as NumPy 2 computes them: a power wraps modulo
2**bits (uint64 exponents and bases from 2**63 up included), a shift by a count outside [0, bits) gives 0, or -1
for a right shift of a negative value. Oracles: Python ints, and NumPy 2 on the same data."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _bits(dtype: str) -> int:
    return np.dtype(dtype).itemsize * 8


def _range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _wrapped(value: int, dtype: str) -> int:
    """``value`` modulo 2**bits, read in ``dtype`` (two's complement for signed dtypes)."""
    bits = _bits(dtype)
    value %= 2**bits
    return value - 2**bits if np.dtype(dtype).kind == "i" and value >= 2 ** (bits - 1) else value


def _values(dtype: str, *, minimum: int | None = None) -> st.SearchStrategy[int]:
    """Integers of ``dtype``, its extremes and, for uint64, the values from 2**63 up drawn often."""
    lo, hi = _range(dtype)
    lo = lo if minimum is None else max(lo, minimum)
    bits = _bits(dtype)
    edges = sorted(v for v in {lo, lo + 1, hi - 1, hi, -1, 0, 1, 2, 3, bits - 1, bits, bits + 1} if lo <= v <= hi)
    parts = [st.sampled_from(edges), st.integers(lo, hi)]
    if dtype == "uint64":
        parts.append(st.integers(2**63, 2**64 - 1))
    return st.one_of(*parts)


def _array(values: list[int], dtype: str) -> xp.NeuronArray:
    return xp.asarray(np.array(values, dtype=dtype))


@st.composite
def _power_case(draw: st.DrawFn) -> tuple[str, list[int], list[int]]:
    dtype = draw(st.sampled_from(INT_DTYPES))
    n = draw(st.integers(1, 4))
    bases = draw(st.lists(_values(dtype), min_size=n, max_size=n))
    exponents = draw(st.lists(_values(dtype, minimum=0), min_size=n, max_size=n))  # NumPy refuses negative ones
    return dtype, bases, exponents


@given(_power_case())
def test_integer_power_is_modular(case: tuple[str, list[int], list[int]]) -> None:
    dtype, bases, exponents = case
    expected = [_wrapped(pow(b, e, 2 ** _bits(dtype)), dtype) for b, e in zip(bases, exponents, strict=True)]
    x, e = _array(bases, dtype), _array(exponents, dtype)
    host = np.array(bases, dtype=dtype) ** np.array(exponents, dtype=dtype)
    assert host.tolist() == expected  # the oracles agree
    for result in (x**e, xp.pow(x, e), np.power(x, e)):
        assert result.dtype == np.dtype(dtype)
        assert np.asarray(result).tolist() == expected
    # one exponent as a Python int (weak: it converts to the array's dtype), either of the numbers as a 0-d array
    for i, exponent in enumerate(exponents):
        row = [_wrapped(pow(b, exponent, 2 ** _bits(dtype)), dtype) for b in bases]
        assert np.asarray(x**exponent).tolist() == row
        assert np.asarray(xp.pow(x, exponent)).tolist() == row
        assert np.asarray(np.power(x, exponent)).tolist() == row
        assert np.asarray(x ** _array(exponent, dtype)).tolist() == row
        assert np.asarray(bases[i] ** e).tolist() == [
            _wrapped(pow(bases[i], f, 2 ** _bits(dtype)), dtype) for f in exponents
        ]


def test_uint64_power_beyond_2_63() -> None:
    x = _array([3, 2, 2**63 + 3, 2**64 - 1], "uint64")
    for exponent in (2**63, 2**63 + 5, 2**64 - 1):
        expected = [pow(b, exponent, 2**64) for b in (3, 2, 2**63 + 3, 2**64 - 1)]
        assert np.asarray(x**exponent).tolist() == expected
        assert np.asarray(x ** np.uint64(exponent)).tolist() == expected
        assert np.asarray(x ** _array([exponent] * 4, "uint64")).tolist() == expected
    with pytest.raises(OverflowError, match=r"pow\(\): Python int 18446744073709551616 is out of range for uint64"):
        x**2**64  # noqa: B018
    with pytest.raises(OverflowError, match="out of range for int64"):
        _array([3], "int64") ** 2**63  # noqa: B018 - NumPy 2 raises too


def _shifted(x: int, n: int, dtype: str, left: bool) -> int:
    """NumPy's shift: counts outside [0, bits) shift every bit out (a negative value's right shift is -1)."""
    if not 0 <= n < _bits(dtype):
        return 0 if left or x >= 0 else -1
    return _wrapped(x << n, dtype) if left else x >> n


@st.composite
def _shift_case(draw: st.DrawFn) -> tuple[str, list[int], list[int]]:
    dtype = draw(st.sampled_from(INT_DTYPES))
    n = draw(st.integers(1, 4))
    return (
        dtype,
        draw(st.lists(_values(dtype), min_size=n, max_size=n)),
        draw(st.lists(_values(dtype), min_size=n, max_size=n)),
    )


@given(_shift_case())
def test_shifts_by_any_count(case: tuple[str, list[int], list[int]]) -> None:
    dtype, values, counts = case
    x, n = _array(values, dtype), _array(counts, dtype)
    for left, ops in (
        (True, (lambda a, b: a << b, xp.bitwise_left_shift, np.left_shift)),
        (False, (lambda a, b: a >> b, xp.bitwise_right_shift, np.right_shift)),
    ):
        expected = [_shifted(v, c, dtype, left) for v, c in zip(values, counts, strict=True)]
        assert ops[2](np.array(values, dtype=dtype), np.array(counts, dtype=dtype)).tolist() == expected
        for op in ops:
            result = op(x, n)
            assert result.dtype == np.dtype(dtype)
            assert np.asarray(result).tolist() == expected
            for count in counts:  # the count as a Python int
                assert np.asarray(op(x, count)).tolist() == [_shifted(v, count, dtype, left) for v in values]


def test_uint64_shift_counts_beyond_2_63() -> None:
    x = _array([3, 2**63 + 1, 2**64 - 1], "uint64")
    for count in (64, 2**63, 2**63 + 1, 2**64 - 1):
        for n in (count, np.uint64(count), _array([count] * 3, "uint64")):
            assert np.asarray(x >> n).tolist() == [0, 0, 0]
            assert np.asarray(x << n).tolist() == [0, 0, 0]
    assert np.asarray(x >> 63).tolist() == [0, 1, 1]
    assert np.asarray(x >> 0).tolist() == [3, 2**63 + 1, 2**64 - 1]
