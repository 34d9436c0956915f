"""One conversion of a Python scalar into a dtype, the same on every route that stores one: ``x.fill``,
``x[...] = value``, ``full``/``full_like``, ``numpy.full`` and the elements of nested lists in ``asarray``.

Oracle: NumPy 2's rule, computed exactly with Python ints and fractions: bool takes the truth; an integer dtype
takes an int in its range and a float's integer part (NaN a ValueError, infinities and values beyond the range an
OverflowError), a complex is a TypeError; a floating dtype takes the value rounded once to nearest, ties to even
(an int beyond float64's range is NumPy's OverflowError; a complex into a real dtype a TypeError). NumPy itself
converts a Python int to float32, float16 or bfloat16 through float64, which rounds twice where the first rounding
lands on a tie of the second; ml_dtypes refuses ints beyond int64 for bfloat16. Those are the cases the exact
oracle stands in for NumPy's answer.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import assert_same, numpy_integer_store

DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
# (precision in bits, smallest normal exponent, largest exponent) of each real floating dtype
FORMATS = {
    "float16": (11, -14, 15),
    "bfloat16": (8, -126, 127),
    "float32": (24, -126, 127),
    "float64": (53, -1022, 1023),
}


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _round_exact(x: Fraction, fmt: str) -> float:
    """x rounded once to nearest (ties to even) in the format, infinite beyond its largest value."""
    p, emin, emax = FORMATS[fmt]
    if x == 0:
        return 0.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2**e <= a < 2**(e + 2)
    if Fraction(2) ** (e + 1) <= a:
        e += 1
    if Fraction(2) ** e > a:
        e -= 1
    ulp = Fraction(2) ** (max(e, emin) - p + 1)
    n, rest = divmod(a, ulp)
    n = int(n)
    if rest * 2 > ulp or (rest * 2 == ulp and n % 2):
        n += 1
    rounded = n * ulp
    if rounded >= Fraction(2) ** (emax + 1):
        return math.copysign(math.inf, x)
    return math.copysign(float(rounded), x)


def expected(value: object, dtype: str) -> object:
    """The stored value (a Python scalar exact in ``dtype``), or the exception type NumPy's rule raises."""
    if dtype == "bool":
        return bool(value)
    if isinstance(value, complex) and not dtype.startswith("complex"):
        return TypeError
    if dtype in FORMATS or dtype.startswith("complex"):
        real = "float32" if dtype == "complex64" else "float64" if dtype == "complex128" else dtype
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) >= 2**1024 - 2**970:  # float64 would round it to inf: NumPy's OverflowError
                return OverflowError
        parts = (value.real, value.imag) if isinstance(value, complex) else (value, 0.0)
        rounded = [
            part if isinstance(part, float) and not math.isfinite(part) else _round_exact(Fraction(part), real)
            for part in parts
        ]
        return complex(*rounded) if dtype.startswith("complex") else rounded[0]
    return numpy_integer_store(value, dtype)


def _as_expected_array(value: object, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, dtype=_np_dtype(dtype))
    if isinstance(value, complex):
        out.real, out.imag = value.real, value.imag  # exact parts (inf * 1j would make a nan part)
    else:
        out[...] = value  # exactly representable: no rounding here
    return out


# ints on or beside the ties of float32, float16 and bfloat16 beyond 2**53 (where float64 rounds first), and the
# edges of the integer dtypes and of float64's range
LARGE_INTS = [
    2**53 + 1,
    2**63,
    2**63 - 1,
    2**64 - 1,
    2**64,
    -(2**63) - 1,
    16777217 * 2**40 + 1,
    -(16777217 * 2**40 + 1),
    2**65 + 2**41 + 1,
    2**1023,
    2**1024,
    -(2**70) - 1,
    (0x101 << 100) + 1,
    (0x801 << 100) + 1,
    2049 * 2**30 + 1,
    65520,
    65519,
    2**1024 - 2**970,
    2**1024 - 2**970 - 1,
]
BIG = st.sampled_from(LARGE_INTS)
VALUES = st.one_of(
    st.booleans(),
    st.integers(-(2**66), 2**66),
    BIG,
    st.integers(-300, 300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-1e5, 1e5),
    st.builds(complex, st.floats(-1e40, 1e40), st.floats(-10, 10)),
)


def _routes(dtype: str):
    """(name, call) pairs: call(value) stores value through one route and returns the NeuronArray."""

    def fill(v):
        x = xp.zeros(3, dtype=dtype)
        x.fill(v)
        return x

    def setitem(v):
        x = xp.zeros(3, dtype=dtype)
        x[...] = v
        return x

    def setitem_one(v):
        x = xp.zeros(3, dtype=dtype)
        x[1] = v
        return x[1:2]

    def numpy_full(v):
        return np.full(3, v, dtype=_np_dtype(dtype), like=xp.zeros(1))

    def nested(v):
        return xp.asarray([[v], [v], [v]], dtype=dtype).reshape((3,))

    return [
        ("fill", fill),
        ("setitem", setitem),
        ("setitem_one", setitem_one),
        ("numpy.full", numpy_full),
        ("asarray", nested),
    ]


def _check(call, value: object, dtype: str, want: object, shape: tuple[int, ...]) -> None:
    if isinstance(want, type):
        with pytest.raises(want):
            call(value)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        got = call(value)
    assert_same(got, _as_expected_array(want, dtype, shape))


@pytest.mark.parametrize("dtype", DTYPES)
@given(value=VALUES)
def test_every_route_stores_a_python_scalar_as_numpy_rounds_it_once(dtype: str, value: object) -> None:
    want = expected(value, dtype)
    for name, call in _routes(dtype):
        if name == "asarray" and isinstance(value, complex) and want is TypeError:
            want_here = TypeError  # asarray names the cast it refuses: a TypeError too
        elif name == "numpy.full" and dtype == "bool" and type(value) is int and not -(2**63) <= value < 2**63:
            want_here = OverflowError  # NumPy's full converts the int to int64 before the bool cast
        else:
            want_here = want
        shape = (1,) if name == "setitem_one" else (3,)
        _check(call, value, dtype, want_here, shape)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "uint64", "int64"])
@pytest.mark.parametrize("value", LARGE_INTS)
def test_large_ints_round_once_on_every_route(dtype: str, value: int) -> None:
    want = expected(value, dtype)
    for name, call in _routes(dtype):
        _check(call, value, dtype, want, (1,) if name == "setitem_one" else (3,))
    _check(lambda v: xp.full(3, v, dtype=dtype), value, dtype, want, (3,))


@pytest.mark.parametrize("dtype", DTYPES)
@given(value=VALUES)
def test_full_and_full_like_store_what_their_policy_accepts(dtype: str, value: object) -> None:
    # full refuses a complex into a real dtype (TypeError) rather than drop the imaginary part; a float into an
    # integer dtype truncates as NumPy's (the standard leaves it unspecified), and an int beyond int64 into bool
    # is NumPy's OverflowError (NumPy's full converts it to int64 first); everything else converts as above
    refused = isinstance(value, complex) and not dtype.startswith("complex")
    beyond = dtype == "bool" and type(value) is int and not -(2**63) <= value < 2**63
    want = TypeError if refused else OverflowError if beyond else expected(value, dtype)
    _check(lambda v: xp.full(3, v, dtype=dtype), value, dtype, want, (3,))
    _check(lambda v: xp.full_like(xp.zeros(3), v, dtype=dtype), value, dtype, want, (3,))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bfloat16"])
@given(value=VALUES)
def test_the_oracle_is_numpys_rule(dtype: str, value: object) -> None:
    # where NumPy rounds once (everything but large ints into float32 and float16), its answer is the oracle's
    want = expected(value, dtype)
    cell = np.empty((), dtype=dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cell.fill(value)
    except (OverflowError, TypeError, ValueError) as e:
        assert want is type(e), (want, e)
        return
    if isinstance(value, int) and dtype in ("float16", "float32", "complex64") and abs(value) > 2**53:
        return  # NumPy rounds through float64 first
    assert not isinstance(want, type), (want, cell)
    np.testing.assert_array_equal(cell, _as_expected_array(want, dtype, ()))


def test_named_cases() -> None:
    # bfloat16 of an int beyond int64: ml_dtypes refuses it, x[...] = did not
    x = xp.zeros(2, dtype=xp.bfloat16)
    x.fill(2**64 - 1)
    assert_same(x, np.full(2, 2.0**64, dtype=ml_dtypes.bfloat16))
    # float32 of (2**24 + 1) * 2**40 + 1: above the tie, so up; through float64 it lands on the tie and rounds to
    # even, down (NumPy's answer)
    v = 16777217 * 2**40 + 1
    y = xp.zeros(2, dtype=xp.float32)
    y.fill(v)
    assert int(np.asarray(y)[0]) == (2**24 + 2) * 2**40 != int(np.float32(v))
    # integer lists mixing big ints and floats: each element converted on its own
    assert_same(xp.asarray([2**62 + 1, 1.5], dtype=xp.int64), np.asarray([2**62 + 1, 1.5], dtype=np.int64))
    assert_same(xp.asarray([[2**64 - 1], [0.5]], dtype=xp.uint64), np.asarray([[2**64 - 1], [0.5]], dtype=np.uint64))
    # beside arrays too
    assert_same(
        xp.asarray([xp.asarray(1), 1.5, 2**62 + 1], dtype=xp.int64),
        np.asarray([np.array(1), 1.5, 2**62 + 1], dtype=np.int64),
    )
    with pytest.raises(OverflowError, match=r"asarray\(\): Python int 300 is out of range for int8"):
        xp.asarray([xp.asarray(1), 300], dtype=xp.int8)


def test_errors_name_the_function_and_the_dtype() -> None:
    x = xp.zeros(2, dtype=xp.int8)
    with pytest.raises(OverflowError, match=r"x.fill\(\): Python int 300 is out of range for int8 \[-128, 127\]"):
        x.fill(300)
    with pytest.raises(ValueError, match="cannot convert float NaN to int8"):
        x.fill(math.nan)
    with pytest.raises(TypeError, match="complex value 1j into a int8 array"):
        x.fill(1j)
    with pytest.raises(OverflowError, match=r"asarray\(\): 300 is out of range for int8.*integer part of 300.5"):
        xp.asarray([1, 300.5], dtype=xp.int8)
    with pytest.raises(OverflowError, match=r"numpy.full\(\): Python int 256 is out of range for uint8"):
        np.full(2, 256, dtype=np.uint8, like=xp.zeros(1))
    with pytest.raises(OverflowError, match=r"full\(\): a Python int of 1025 bits is beyond float64's range"):
        xp.full(2, 2**1024, dtype=xp.float32)
