"""Conversions into a narrower float round once, to nearest with ties to even, through every route.

torch converts int64 (and int32) to float16 and bfloat16 through float32, and a Python int through a double,
rounding twice: off by one unit where the first rounding lands on a tie of the second. The oracle here rounds
the exact value (a Python int or a fractions.Fraction) once; NumPy and ml_dtypes themselves round twice on some
of these routes, so they are no reference.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import from_numpy

# significand bits (the implicit one included), the smallest normal exponent, and the largest finite value
FORMATS = {
    "bfloat16": (8, -126, (2**8 - 1) << (128 - 8)),
    "float16": (11, -14, (2**11 - 1) << (16 - 11)),
    "float32": (24, -126, (2**24 - 1) << (128 - 24)),
    "float64": (53, -1022, (2**53 - 1) << (1024 - 53)),
}
FORMATS["complex64"] = FORMATS["float32"]
FORMATS["complex128"] = FORMATS["float64"]
TARGETS = tuple(FORMATS)
INT_SOURCES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
DOUBLE_LIMIT = 2**1024 - 2**970  # the ints from here up round to 2**1024 in float64: Python's float() refuses them


def rounded(value: int | float | Fraction, target: str) -> float:
    """``value`` rounded once to the target format (to nearest, ties to even; infinite beyond its largest
    value), as a Python float: exact arithmetic on Fractions, independent of any float conversion."""
    x = Fraction(value)
    if x == 0:
        return 0.0
    bits, emin, largest = FORMATS[target]
    exponent = x.numerator.bit_length() - x.denominator.bit_length()  # floor(log2 |x|) or one more
    if Fraction(2) ** exponent > abs(x):
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, emin) - bits + 1)
    r = round(x / quantum) * quantum  # round() of a Fraction rounds half to even, exactly
    if abs(r) > largest:
        return math.inf if r > 0 else -math.inf
    return float(r)  # exact: r has at most 53 significant bits


def values_of(x: xp.NeuronArray) -> list[float]:
    """The elements as Python floats (the real parts of complex ones, whose imaginary parts must be 0)."""
    a = np.asarray(x)
    if a.dtype.kind == "c":
        assert not a.imag.any()
        a = a.real
    return a.astype(np.float64).ravel().tolist()


@st.composite
def near_ties(draw: st.DrawFn, lo: int, hi: int, target: str) -> int:
    """Ints in [lo, hi], mostly at or next to a rounding tie of the target's precision or of float32's and
    float64's (where a first rounding lands on the target's tie), or at the edges: the range's ends, and the
    target's largest value and overflow threshold."""
    bits, _, largest = FORMATS[target]
    kind = draw(st.sampled_from(["tie", "tie", "tie", "edge", "any"]))
    if kind == "any":
        return draw(st.integers(lo, hi))
    if kind == "edge":
        threshold = largest + (1 << (largest.bit_length() - bits - 1))  # from here up: infinity
        v = draw(st.sampled_from([lo, hi, 0, largest, threshold, -largest, -threshold])) + draw(st.integers(-2, 2))
        return min(max(v, lo), hi)
    precision = draw(st.sampled_from(sorted({bits, 24, 53})))
    top = draw(st.integers(precision, max(precision, max(abs(lo), hi).bit_length() - 1)))  # highest set bit
    shift = top - precision + 1
    significand = draw(st.integers(1 << (precision - 1), (1 << precision) - 1))
    tie = (significand << shift) + (1 << (shift - 1))
    if shift >= 2 and draw(st.booleans()):  # far enough off the tie that a float32 or float64 rounds onto it
        offset = draw(st.sampled_from([-1, 1])) << draw(st.integers(0, shift - 2))
    else:
        offset = draw(st.integers(-2, 2))
    v = (tie + offset) * draw(st.sampled_from([1, -1]))
    return min(max(v, lo), hi)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", INT_SOURCES)
@given(data=st.data())
def test_integer_arrays_round_once(source, target, data):
    info = np.iinfo(source)
    values = data.draw(st.lists(near_ties(int(info.min), int(info.max), target), min_size=1, max_size=8))
    expected = [rounded(v, target) for v in values]
    a = np.array(values, dtype=source)
    x = from_numpy(a)
    dtype = getattr(xp, target)
    assert values_of(xp.astype(x, dtype)) == expected
    assert values_of(xp.asarray(a, dtype=dtype)) == expected  # from NumPy data
    assert values_of(xp.asarray(x, dtype=dtype)) == expected
    z = xp.zeros(len(values), dtype=dtype)
    z[...] = x  # an array value is cast to the array's dtype
    assert values_of(z) == expected
    z[0] = a[0]  # a NumPy scalar value too
    assert values_of(z[0]) == expected[:1]
    assert values_of(xp.asarray(a[0], dtype=dtype)) == expected[:1]
    assert values_of(xp.full((2,), x[0], dtype=dtype)) == expected[:1] * 2  # a 0-d array fill value
    # promotion: integers with a floating array take its dtype (here, unlike NumPy, for every width)
    total = x + xp.zeros(len(values), dtype=dtype)
    assert total.dtype == dtype
    assert values_of(total) == expected


@pytest.mark.parametrize("target", TARGETS)
@given(data=st.data())
def test_python_ints_round_once(target, data):
    ints = near_ties(-DOUBLE_LIMIT + 1, DOUBLE_LIMIT - 1, target) | near_ties(-(2**80), 2**80, target)
    values = data.draw(st.lists(ints, min_size=1, max_size=6))
    expected = [rounded(v, target) for v in values]
    dtype = getattr(xp, target)
    v, want = values[0], expected[:1]
    assert values_of(xp.asarray(values, dtype=dtype)) == expected
    assert values_of(xp.asarray([*values, 0.5], dtype=dtype))[:-1] == expected  # with a float among them
    assert values_of(xp.asarray(v, dtype=dtype)) == want
    assert values_of(xp.full((2,), v, dtype=dtype)) == want * 2
    assert values_of(xp.full_like(xp.zeros(3, dtype=dtype), v)) == want * 3
    z = xp.zeros(len(values), dtype=dtype)
    for i, value in enumerate(values):
        z[i] = value
    assert values_of(z) == expected
    zero = xp.zeros(2, dtype=dtype)
    assert values_of(zero + v) == values_of(v + zero) == want * 2  # a weak scalar takes the array's dtype
    assert values_of(xp.linspace(v, v, 3, dtype=dtype)) == want * 3  # the endpoints
    if -(2**63) <= v < 2**64 - 2:
        assert values_of(xp.arange(v, v + 2, dtype=dtype)) == want + [rounded(v + 1, target)]


@pytest.mark.parametrize("target", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("func", ["asarray", "full", "setitem", "add"])
def test_python_int_beyond_float64_is_an_error(target, func):
    # as in NumPy: such an int has no float value (Python's float() refuses it too)
    dtype = getattr(xp, target)
    x = xp.zeros(2, dtype=dtype)
    calls = {
        "asarray": lambda v: xp.asarray([v], dtype=dtype),
        "full": lambda v: xp.full((2,), v, dtype=dtype),
        "setitem": lambda v: x.__setitem__(0, v),
        "add": lambda v: x + v,
    }
    for v in (DOUBLE_LIMIT, -DOUBLE_LIMIT, 2**2000):
        with pytest.raises(OverflowError, match=r"beyond float64's range"):
            calls[func](v)
    # the largest ints below round to float64's largest value, or overflow a narrower dtype to infinity
    assert values_of(calls["asarray"](DOUBLE_LIMIT - 1)) == [rounded(DOUBLE_LIMIT - 1, target)]


@st.composite
def float_near_ties(draw: st.DrawFn, source: str, target: str) -> float:
    """Normal floats of the source format at or next to a rounding tie of the (narrower) target, within the
    target's normal range."""
    bits, emin, largest = FORMATS[target]
    source_bits = FORMATS[source][0]
    significand = draw(st.integers(1 << (bits - 1), (1 << bits) - 1))
    # the tie as a source significand, moved by a few units of the source
    m = ((2 * significand + 1) << (source_bits - bits - 1)) + draw(st.integers(-3, 3))
    exponent = draw(st.integers(emin, largest.bit_length() - 1)) - (source_bits - 1)
    return math.ldexp(m, exponent) * draw(st.sampled_from([1.0, -1.0]))


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("float64", "float16"),
        ("float64", "bfloat16"),
        ("float64", "float32"),
        ("float32", "float16"),
        ("float32", "bfloat16"),
    ],
)
@given(data=st.data())
def test_floats_round_once(source, target, data):
    values = data.draw(st.lists(float_near_ties(source, target), min_size=1, max_size=8))
    a = np.array(values, dtype=source)
    assert a.tolist() == values  # exact in the source format
    expected = [rounded(v, target) for v in values]
    dtype = getattr(xp, target)
    assert values_of(xp.astype(from_numpy(a), dtype)) == expected
    assert values_of(xp.asarray(a, dtype=dtype)) == expected
    z = xp.zeros(len(values), dtype=dtype)
    z[...] = from_numpy(a)
    assert values_of(z) == expected
    if source == "float64":  # Python floats
        assert values_of(xp.asarray(values, dtype=dtype)) == expected
        assert values_of(xp.full((1,), values[0], dtype=dtype)) == expected[:1]
        assert values_of(xp.zeros(1, dtype=dtype) + values[0]) == expected[:1]


def _nearest(value: float, dtype) -> float:
    """The value of ``dtype`` (16 bits) nearest to ``value``, ties to even, found exactly with fractions among the
    neighbours of a nearby value."""
    from fractions import Fraction

    bits = int(np.array([value], dtype=np.float32).astype(dtype).view(np.uint16)[0])
    candidates = [float(np.array([bits + step], dtype=np.uint16).view(dtype)[0]) for step in range(-2, 3)]
    return min(
        candidates,
        key=lambda c: (abs(Fraction(c) - Fraction(value)), int(np.array([c], dtype=dtype).view(np.uint16)[0]) & 1),
    )


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
