"""Element-wise functions against NumPy, for every dtype their category allows (uint16/32/64 included)."""

from __future__ import annotations

import inspect
import math
import operator
import re
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import (
    COMPLEX_NAMES,
    DTYPE_NAMES,
    FLOAT_NAMES,
    INT_NAMES,
    NUMERIC_NAMES,
    REAL_NAMES,
    arrays,
    assert_same,
    from_numpy,
    shapes,
    to_numpy,
)
from trn_backend import _array
from trn_backend._api import elementwise

FLOATING = FLOAT_NAMES + COMPLEX_NAMES
RTOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}


def _moderate(name: str):
    """Finite values of moderate size, where transcendental functions of numpy and torch agree to a few ulp."""
    f = st.floats(-20, 20, width=32 if name in ("float32", "complex64") else 64, allow_subnormal=False)
    return st.builds(complex, f, f) if name in COMPLEX_NAMES else f


UNARY = {
    # name: (numpy function, dtype names, elements strategy factory or None)
    "abs": (np.abs, NUMERIC_NAMES, None),
    "negative": (np.negative, NUMERIC_NAMES, None),
    "positive": (np.positive, NUMERIC_NAMES, None),
    "square": (np.square, NUMERIC_NAMES, None),
    "sign": (np.sign, REAL_NAMES, None),
    "ceil": (np.ceil, REAL_NAMES, None),
    "floor": (np.floor, REAL_NAMES, None),
    "trunc": (np.trunc, REAL_NAMES, None),
    "round": (np.round, NUMERIC_NAMES, None),
    "isnan": (np.isnan, NUMERIC_NAMES, None),
    "isinf": (np.isinf, NUMERIC_NAMES, None),
    "isfinite": (np.isfinite, NUMERIC_NAMES, None),
    "signbit": (np.signbit, FLOAT_NAMES, None),
    "bitwise_invert": (np.invert, INT_NAMES + ("bool",), None),
    "logical_not": (np.logical_not, ("bool",), None),
    "conj": (np.conj, NUMERIC_NAMES, None),
    "real": (np.real, NUMERIC_NAMES, None),
    "sqrt": (np.sqrt, FLOATING, None),
    "exp": (np.exp, FLOATING, _moderate),
    "expm1": (np.expm1, FLOAT_NAMES, _moderate),
    "log": (np.log, FLOATING, _moderate),
    "log1p": (np.log1p, FLOAT_NAMES, _moderate),
    "log2": (np.log2, FLOATING, _moderate),
    "log10": (np.log10, FLOATING, _moderate),
    "sin": (np.sin, FLOATING, _moderate),
    "cos": (np.cos, FLOATING, _moderate),
    "tan": (np.tan, FLOAT_NAMES, _moderate),
    "sinh": (np.sinh, FLOATING, _moderate),
    "cosh": (np.cosh, FLOATING, _moderate),
    "tanh": (np.tanh, FLOAT_NAMES, _moderate),
    "asin": (np.arcsin, FLOAT_NAMES, _moderate),
    "acos": (np.arccos, FLOAT_NAMES, _moderate),
    "atan": (np.arctan, FLOATING, _moderate),
    "asinh": (np.arcsinh, FLOAT_NAMES, _moderate),
    "acosh": (np.arccosh, FLOAT_NAMES, _moderate),
    "atanh": (np.arctanh, FLOAT_NAMES, _moderate),
    "reciprocal": (np.reciprocal, FLOAT_NAMES, None),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=25)
@given(data=st.data())
def test_unary_matches_numpy(name, data):
    np_func, dtypes, elements = UNARY[name]
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    a = data.draw(arrays(dtype, shapes(), elements=elements(dtype) if elements else None), label="x")
    with np.errstate(all="ignore"):
        expected = np.asarray(np_func(a))
    assert_same(getattr(xp, name)(from_numpy(a)), expected, rtol=RTOL.get(str(expected.dtype)))


def _int_elements(dtype: str, positive: bool = False, below: int | None = None):
    info = np.iinfo(dtype)
    lo = 1 if positive else int(info.min)
    hi = int(info.max) if below is None else min(int(info.max), below)
    return st.integers(lo, hi)


def _standard_floor_divide(a, b):
    """NumPy's floor_divide, except at infinities where the standard asks for plain division (inf // 2 is inf)."""
    q = np.floor_divide(a, b)
    if q.dtype.kind == "f":
        q = np.where(np.isinf(a) | np.isinf(b), a / b, q).astype(q.dtype)
    return q


BINARY = {
    # name: (numpy function, dtype names)
    "add": (np.add, NUMERIC_NAMES),
    "subtract": (np.subtract, NUMERIC_NAMES),
    "multiply": (np.multiply, NUMERIC_NAMES),
    "divide": (np.divide, FLOATING),
    "floor_divide": (_standard_floor_divide, REAL_NAMES),
    "remainder": (np.remainder, REAL_NAMES),
    "equal": (np.equal, DTYPE_NAMES),
    "not_equal": (np.not_equal, DTYPE_NAMES),
    "less": (np.less, REAL_NAMES),
    "less_equal": (np.less_equal, REAL_NAMES),
    "greater": (np.greater, REAL_NAMES),
    "greater_equal": (np.greater_equal, REAL_NAMES),
    "maximum": (np.maximum, REAL_NAMES),
    "minimum": (np.minimum, REAL_NAMES),
    "bitwise_and": (np.bitwise_and, INT_NAMES + ("bool",)),
    "bitwise_or": (np.bitwise_or, INT_NAMES + ("bool",)),
    "bitwise_xor": (np.bitwise_xor, INT_NAMES + ("bool",)),
    "logical_and": (np.logical_and, ("bool",)),
    "logical_or": (np.logical_or, ("bool",)),
    "logical_xor": (np.logical_xor, ("bool",)),
    "atan2": (np.arctan2, FLOAT_NAMES),
    "copysign": (np.copysign, FLOAT_NAMES),
    "hypot": (np.hypot, FLOAT_NAMES),
    "logaddexp": (np.logaddexp, FLOAT_NAMES),
    "nextafter": (np.nextafter, FLOAT_NAMES),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=25)
@given(data=st.data())
def test_binary_matches_numpy(name, data):
    np_func, dtypes = BINARY[name]
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    shape1, shape2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3)).input_shapes
    integer_division = name in ("floor_divide", "remainder") and dtype in INT_NAMES
    a = data.draw(arrays(dtype, shape1), label="x1")
    b = data.draw(
        arrays(dtype, shape2, elements=_int_elements(dtype, positive=True) if integer_division else None), label="x2"
    )
    with np.errstate(all="ignore"):
        expected = np.asarray(np_func(a, b))
    assert_same(getattr(xp, name)(from_numpy(a), from_numpy(b)), expected, rtol=RTOL.get(str(expected.dtype)))


@settings(max_examples=40)
@given(data=st.data())
def test_shifts_match_numpy(data):
    dtype = data.draw(st.sampled_from(INT_NAMES), label="dtype")
    bits = np.dtype(dtype).itemsize * 8
    a = data.draw(arrays(dtype, shapes(max_dims=2)), label="x1")
    n = data.draw(arrays(dtype, a.shape, elements=st.integers(0, bits - 1)), label="x2")
    assert_same(xp.bitwise_left_shift(from_numpy(a), from_numpy(n)), np.left_shift(a, n))
    assert_same(xp.bitwise_right_shift(from_numpy(a), from_numpy(n)), np.right_shift(a, n))


@settings(max_examples=40)
@given(data=st.data())
def test_pow_matches_numpy(data):
    dtype = data.draw(st.sampled_from(NUMERIC_NAMES), label="dtype")
    a = data.draw(arrays(dtype, shapes(max_dims=2), elements=_moderate(dtype) if dtype in FLOATING else None))
    if dtype in INT_NAMES:
        b = data.draw(arrays(dtype, a.shape, elements=st.integers(0, 5)))
    else:
        b = data.draw(arrays(dtype, a.shape, elements=st.integers(-3, 3).map(float)))
        b = b.astype(dtype)
    with np.errstate(all="ignore"):
        expected = np.power(a, b)
    assert_same(xp.pow(from_numpy(a), from_numpy(b)), expected, rtol=RTOL.get(dtype) and 10 * RTOL[dtype])


def test_uint64_extremes():
    big = np.array([2**64 - 1, 2**63, 2**63 - 1, 0, 1], dtype=np.uint64)
    small = np.array([3, 2**63 + 1, 7, 5, 2**64 - 1], dtype=np.uint64)
    x, y = from_numpy(big), from_numpy(small)
    for name, f in [
        ("floor_divide", np.floor_divide),
        ("remainder", np.remainder),
        ("less", np.less),
        ("maximum", np.maximum),
        ("minimum", np.minimum),
        ("add", np.add),
        ("multiply", np.multiply),
        ("subtract", np.subtract),
        ("greater_equal", np.greater_equal),
    ]:
        assert_same(getattr(xp, name)(x, y), f(big, small))
    assert_same(xp.bitwise_right_shift(x, 63), big >> np.uint64(63))
    assert_same(xp.divide(x, y), big.astype(np.float64) / small.astype(np.float64))  # the CPU's default float


def test_promotion_follows_the_standard_with_0d_arrays():
    # torch lets a 0-d tensor lose against a higher-rank one of the same kind; the standard does not
    a = from_numpy(np.array(1.5, dtype=np.float64))
    b = from_numpy(np.ones(3, dtype=np.float32))
    assert xp.add(a, b).dtype == xp.float64
    i8 = from_numpy(np.ones(2, dtype=np.int8))
    i64 = from_numpy(np.array(300, dtype=np.int64))
    assert_same(i8 * i64, np.full(2, 300, dtype=np.int64))
    u8 = from_numpy(np.array([200], dtype=np.uint8))
    assert (u8 + from_numpy(np.array([100], dtype=np.int8))).dtype == xp.int16
    assert (u8 + from_numpy(np.array([1], dtype=np.uint32))).dtype == xp.uint32
    with pytest.raises(TypeError, match="uint64 and int64"):
        xp.add(from_numpy(np.ones(1, np.uint64)), from_numpy(np.ones(1, np.int64)))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_python_scalars_are_weak(dtype):
    x = from_numpy(np.zeros(2, dtype=dtype))
    if dtype == "bool":
        assert (x | True).dtype == xp.bool
        return
    assert (x + 1).dtype == getattr(xp, dtype)
    assert (1 + x).dtype == getattr(xp, dtype)
    assert xp.add(x, 2).dtype == getattr(xp, dtype)
    expected_float = (np.zeros(2, dtype=dtype) * 0.5).dtype  # NumPy's: integers give float64, the CPU's default
    assert (x * 0.5).dtype == expected_float


def test_scalar_out_of_range_and_bad_operands():
    x = from_numpy(np.zeros(2, dtype=np.uint8))
    with pytest.raises(OverflowError, match="300 is out of range for uint8"):
        x + 300
    with pytest.raises(TypeError, match="add\\(\\) needs at least one NeuronArray"):
        xp.add(1, 2)
    with pytest.raises(TypeError, match="x2 to be a NeuronArray or a Python scalar, got list"):
        xp.add(x, [1, 2])
    with pytest.raises(TypeError, match="NeuronArray, got ndarray"):
        xp.sin(np.zeros(3))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_left_shift"])
def test_wrong_dtype_category_is_a_type_error(name):
    x = from_numpy(np.ones(2, dtype=np.float32))
    with pytest.raises(TypeError, match=f"{name}\\(\\) needs x1 and x2 of a"):
        getattr(xp, name)(x, x)


def test_complex_input_to_real_only_functions():
    z = from_numpy(np.ones(2, dtype=np.complex64))
    for f in (xp.less, xp.maximum, xp.floor_divide):
        with pytest.raises(TypeError, match="real numeric"):
            f(z, z)
    with pytest.raises(TypeError, match="signbit\\(\\) needs a real-valued dtype"):
        xp.signbit(z)


def test_negative_integer_powers_are_refused():
    x = from_numpy(np.array([2, 3], dtype=np.int32))
    with pytest.raises(ValueError, match="negative integer powers"):
        xp.pow(x, -1)
    assert_same(xp.pow(x, from_numpy(np.array([0, 2], dtype=np.int32))), np.array([1, 9], dtype=np.int32))


def test_integer_input_to_floating_functions_promotes_to_default_float():
    x = from_numpy(np.array([1, 4, 9], dtype=np.int32))
    assert_same(xp.sqrt(x), np.array([1, 2, 3], dtype=np.float64))  # float64, the CPU's default float
    assert_same(xp.divide(x, x), np.ones(3, dtype=np.float64))
    assert_same(xp.sqrt(xp.astype(x, xp.float32)), np.array([1, 2, 3], dtype=np.float32))  # floats keep theirs


def _same_float(got: float, expected: float) -> bool:
    if math.isnan(expected):
        return math.isnan(got)
    return got == expected and math.copysign(1, got) == math.copysign(1, expected)


def test_remainder_follows_python_for_signed_zeros_and_infinities():
    a = np.array([-0.0, 0.0, 5.0, -5.0, 1.0], dtype=np.float64)
    b = np.array([1.0, -1.0, math.inf, math.inf, -math.inf], dtype=np.float64)
    got = xp.remainder(from_numpy(a), from_numpy(b))
    for i in range(len(a)):
        assert _same_float(float(got[i]), float(a[i]) % float(b[i])), (a[i], b[i])


def test_floor_divide_special_values_follow_the_standard():
    # where the standard parts from Python: inf // finite is inf, finite // inf is a signed zero
    cases = [
        (math.inf, 2.0, math.inf),
        (-math.inf, 2.0, -math.inf),
        (math.inf, -2.0, -math.inf),
        (5.0, -math.inf, -0.0),
        (-5.0, math.inf, -0.0),
        (5.0, math.inf, 0.0),
        (-5.0, -math.inf, 0.0),
        (7.0, 2.0, 3.0),
        (-7.0, 2.0, -4.0),
        (math.inf, math.inf, math.nan),
    ]
    a = from_numpy(np.array([c[0] for c in cases]))
    b = from_numpy(np.array([c[1] for c in cases]))
    got = xp.floor_divide(a, b)
    for i, (_, _, expected) in enumerate(cases):
        assert _same_float(float(got[i]), expected), cases[i]


def test_complex_special_values():
    z = from_numpy(np.array([0j, complex(math.inf, 0), complex(-math.inf, math.inf), complex(math.nan, 0)]))
    e = xp.expm1(z)
    assert [complex(v) for v in e][:2] == [0j, complex(math.inf, 0)]
    assert complex(e[2]) == -1 + 0j
    assert math.isnan(complex(e[3]).real) and complex(e[3]).imag == 0
    a = complex(xp.acos(from_numpy(np.array(0j))))
    assert a.real == math.pi / 2 and math.copysign(1, a.imag) == -1
    assert math.isnan(float(xp.sign(from_numpy(np.array(math.nan)))))


@settings(max_examples=30)
@given(data=st.data())
def test_clip_matches_numpy(data):
    dtype = data.draw(st.sampled_from(REAL_NAMES))
    a = data.draw(arrays(dtype, shapes(max_dims=2)))
    bounds = data.draw(st.lists(arrays(dtype, ()), min_size=2, max_size=2))
    if any(np.isnan(v) for v in bounds):
        return
    lo, hi = sorted(bounds)
    assert_same(xp.clip(from_numpy(a), from_numpy(lo), from_numpy(hi)), np.clip(a, lo, hi))


def test_clip_scalar_bounds_keep_dtype():
    x = from_numpy(np.array([0, 100, 255], dtype=np.uint8))
    assert_same(xp.clip(x, 10, 1000), np.array([10, 100, 255], dtype=np.uint8))
    assert_same(xp.clip(x, min=2.5), np.array([3, 100, 255], dtype=np.uint8))
    # array bounds broadcast with x, as maximum(minimum(x, max), min) does
    low = np.full((2, 1), 7, dtype=np.uint8)
    assert_same(xp.clip(x, from_numpy(low)), np.maximum(np.array([0, 100, 255], dtype=np.uint8), low))


def test_cross_device_operands_name_both_devices():
    if not torch.cuda.is_available():
        a = xp.NeuronArray(torch.zeros(2))
        b = xp.NeuronArray(torch.zeros(2, device="meta"))
        with pytest.raises(ValueError, match="cpu and meta"):
            xp.add(a, b)


# ---------------------------------------------------------------- integer division by zero


def _int_operands(dtype: str):
    """Integers of ``dtype`` with the special divisors and dividends (0, ±1, both limits) drawn often."""
    info = np.iinfo(dtype)
    special = [0, 1, int(info.min), int(info.max)] + ([-1, int(info.min) + 1] if info.min < 0 else [])
    return st.sampled_from(special) | st.integers(int(info.min), int(info.max))


@settings(max_examples=60)
@given(data=st.data())
def test_integer_floor_divide_and_remainder_match_numpy_for_every_divisor(data):
    # NumPy: x // 0 == x % 0 == 0 (with a warning), INT_MIN // -1 wraps to INT_MIN and INT_MIN % -1 is 0
    dtype = data.draw(st.sampled_from(INT_NAMES), label="dtype")
    shape1, shape2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=4)).input_shapes
    a = data.draw(arrays(dtype, shape1, elements=_int_operands(dtype)), label="x1")
    b = data.draw(arrays(dtype, shape2, elements=_int_operands(dtype)), label="x2")
    with np.errstate(all="ignore"):
        assert_same(xp.floor_divide(from_numpy(a), from_numpy(b)), np.floor_divide(a, b))
        assert_same(xp.remainder(from_numpy(a), from_numpy(b)), np.remainder(a, b))


@pytest.mark.parametrize("dtype", INT_NAMES)
def test_integer_division_by_zero_gives_zero_everywhere(dtype):
    info = np.iinfo(dtype)
    a = np.array([0, 1, 7, int(info.max), int(info.min)], dtype=dtype)
    zero = np.zeros(5, dtype=dtype)
    expected = np.zeros(5, dtype=dtype)
    x = from_numpy(a)
    for f in (xp.floor_divide, xp.remainder):
        assert_same(f(x, from_numpy(zero)), expected)
        assert_same(f(x, 0), expected)  # a Python divisor
        assert_same(f(from_numpy(zero), from_numpy(zero)), expected)
    assert_same(0 // x, np.zeros(5, dtype=dtype))  # 0 // 0 is 0 too; the rest are 0 or -1
    assert_same(x // 0, expected)
    assert_same(x % 0, expected)
    assert_same(1 % from_numpy(zero), expected)
    y = from_numpy(a)
    y //= 0
    assert_same(y, expected)
    y = from_numpy(a)
    y %= from_numpy(zero)
    assert_same(y, expected)


@pytest.mark.parametrize("dtype", ("int8", "int16", "int32", "int64"))
def test_int_min_floor_divided_by_minus_one_wraps_as_numpy(dtype):
    a = np.full(3, np.iinfo(dtype).min, dtype=dtype)
    x = from_numpy(a)
    with np.errstate(over="ignore"):
        assert_same(x // -1, np.floor_divide(a, -1))
        assert_same(x % -1, np.remainder(a, -1))
        assert_same(xp.floor_divide(x, from_numpy(np.full(3, -1, dtype))), np.floor_divide(a, a.dtype.type(-1)))
    assert to_numpy(x // -1).tolist() == [np.iinfo(dtype).min] * 3


def test_floor_divide_and_remainder_document_division_by_zero():
    assert "division by zero gives 0" in xp.floor_divide.__doc__
    assert "x % 0 gives 0" in xp.remainder.__doc__


# ---------------------------------------------------------------- Python ints beyond the dtype

COMPARISONS = {
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
}


@pytest.mark.parametrize("name", sorted(COMPARISONS))
@pytest.mark.parametrize("dtype", INT_NAMES)
def test_comparisons_with_python_ints_beyond_the_dtype_are_exact(dtype, name):
    compare = COMPARISONS[name]
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    a = np.array([[lo, lo + 1, 0], [hi - 1, hi, hi // 2]], dtype=dtype)
    x = from_numpy(a)
    for v in (lo - 2**70, lo - 1, lo, hi, hi + 1, hi + 2**70):  # at and beyond both limits
        left = np.array([[compare(int(e), v) for e in row] for row in a])
        right = np.array([[compare(v, int(e)) for e in row] for row in a])
        assert_same(getattr(xp, name)(x, v), left)
        assert_same(getattr(xp, name)(v, x), right)
        assert_same(compare(x, v), left)  # the operators, reflected ones included
        assert_same(compare(v, x), right)


@pytest.mark.parametrize("dtype", INT_NAMES)
def test_arithmetic_with_python_ints_beyond_the_dtype_is_an_overflow_error(dtype):
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    x = from_numpy(np.zeros(2, dtype=dtype))
    for name in ("add", "multiply", "maximum", "bitwise_and", "floor_divide"):
        for v in (lo - 1, hi + 1):
            with pytest.raises(OverflowError, match=f"{name}\\(\\): Python int {v} is out of range for {dtype}"):
                getattr(xp, name)(x, v)
    with pytest.raises(OverflowError, match="out of range"):
        x + (hi + 1)


# ---------------------------------------------------------------- shapes that do not broadcast

# every binary element-wise function of the namespace (those with parameters x1 and x2)
BINARY_NAMES = sorted(
    n for n in elementwise.__all__ if list(inspect.signature(getattr(xp, n)).parameters) == ["x1", "x2"]
)


def test_the_binary_table_covers_the_namespace():
    assert set(BINARY_NAMES) - set(BINARY) == {"bitwise_left_shift", "bitwise_right_shift", "pow"}


@pytest.mark.parametrize("name", BINARY_NAMES)
def test_incompatible_shapes_name_the_function_and_both_shapes(name):
    dtypes = BINARY[name][1] if name in BINARY else INT_NAMES
    dtype = next(d for d in ("float64", "int64", "bool") if d in dtypes)
    x, y = from_numpy(np.ones((2, 6), dtype)), from_numpy(np.ones(5, dtype))
    message = re.escape(f"{name}(): shapes (2, 6) and (5,) cannot be broadcast together")
    with pytest.raises(ValueError, match=message):
        getattr(xp, name)(x, y)
    with pytest.raises(ValueError, match=re.escape(f"{name}(): shapes (5,) and (2, 6)")):
        getattr(xp, name)(y, x)


def test_incompatible_shapes_in_operators_clip_and_where():
    x, y = from_numpy(np.ones((2, 6))), from_numpy(np.ones(5))
    shapes_ = re.escape("shapes (2, 6) and (5,) cannot be broadcast together (axis -1: 6 against 5)")
    for op, name in (
        (operator.add, "add"),
        (operator.lt, "less"),
        (operator.eq, "equal"),
        (operator.floordiv, "floor_divide"),
        (operator.pow, "pow"),
        (operator.iadd, "add"),
    ):
        with pytest.raises(ValueError, match=f"{name}\\(\\): {shapes_}"):
            op(x, y)
    with pytest.raises(ValueError, match=f"clip\\(\\): {shapes_}"):
        xp.clip(x, y)
    with pytest.raises(ValueError, match=f"clip\\(\\): {shapes_}"):
        xp.clip(x, max=y)
    with pytest.raises(ValueError, match=f"where\\(\\): {shapes_}"):
        xp.where(from_numpy(np.ones((2, 6), bool)), x, y)
    with pytest.raises(ValueError, match=re.escape("where(): shapes (5,) and (2, 6)")):
        xp.where(from_numpy(np.ones(5, bool)), x, 0.0)


# ---------------------------------------------------------------- fast paths of add, subtract, multiply, divide

FAST_FUNCTIONS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}
FAST_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv}
FAST_INPLACE = {"add": operator.iadd, "subtract": operator.isub, "multiply": operator.imul, "divide": operator.itruediv}
FAST_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8")


def _fast_dtypes(name: str) -> tuple[str, ...]:
    return FLOAT_NAMES if name == "divide" else FAST_DTYPES


@pytest.fixture
def general_calls(monkeypatch):
    """The names of the binary functions that ran their general path (promotion through binary_operands)."""
    calls = []

    def spy(x1, x2, func, **kwargs):
        calls.append(func)
        return real(x1, x2, func, **kwargs)

    real = elementwise.binary_operands
    monkeypatch.setattr(elementwise, "binary_operands", spy)
    return calls


@pytest.mark.parametrize("name", sorted(FAST_FUNCTIONS))
@settings(max_examples=30)
@given(data=st.data())
def test_fast_path_on_two_arrays_matches_numpy_exactly(name, data):
    # one dtype, one shape: torch's own function; its float arithmetic is correctly rounded, as NumPy's
    dtype = data.draw(st.sampled_from(_fast_dtypes(name)), label="dtype")
    shape = data.draw(shapes(max_dims=2), label="shape")
    a, b = data.draw(arrays(dtype, shape), label="x1"), data.draw(arrays(dtype, shape), label="x2")
    with np.errstate(all="ignore"):
        expected = FAST_FUNCTIONS[name](a, b)
    assert_same(getattr(xp, name)(from_numpy(a), from_numpy(b)), expected)
    assert_same(FAST_OPERATORS[name](from_numpy(a), from_numpy(b)), expected)
    x = from_numpy(a)
    t = x._t
    assert FAST_INPLACE[name](x, from_numpy(b)) is x and x._t is t
    assert_same(x, expected)


@pytest.mark.parametrize("name", sorted(FAST_FUNCTIONS))
def test_fast_path_takes_same_dtype_same_shape_arrays(name, general_calls):
    for dtype in _fast_dtypes(name):
        a, b = np.arange(1, 7, dtype=dtype).reshape(2, 3), np.full((2, 3), 3, dtype=dtype)
        with np.errstate(all="ignore"):
            assert_same(getattr(xp, name)(from_numpy(a), from_numpy(b)), FAST_FUNCTIONS[name](a, b))
    assert general_calls == []


# (array dtype, Python scalar) pairs the fast path takes, the scalar passed to torch as it is
FAST_SCALARS = [
    ("float32", 2.0),
    ("float32", 0.1),
    ("float32", -0.0),
    ("float32", math.inf),
    ("float32", -math.inf),
    ("float32", 1e300),
    ("float32", 3),
    ("float32", -(2**53)),
    ("float32", 2**53),
    ("float64", 0.1),
    ("float64", 1e-310),
    ("float64", 2**53),
    ("float64", -7),
    ("int8", 127),
    ("int8", -128),
    ("int16", -3),
    ("int32", 2**31 - 1),
    ("int64", -(2**63)),
    ("int64", 2**63 - 1),
    ("uint8", 255),
    ("uint8", 0),
]


def _weak_reference(np_func, dtype: str, value, scalar_first: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """An array of ``dtype`` and NumPy 2's answer with ``value`` as a weak scalar (NEP 50, the standard's rule)."""
    a = (np.arange(-3, 3) if dtype != "uint8" else np.arange(6)).astype(dtype)
    a[a == 0] = 1 if scalar_first else 0  # no integer-free zero divisors where the scalar divides
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 1e300 overflows float32 on conversion, as in torch
        return a, np_func(value, a) if scalar_first else np_func(a, value)


@pytest.mark.parametrize("name", sorted(FAST_FUNCTIONS))
@pytest.mark.parametrize(("dtype", "value"), FAST_SCALARS)
def test_fast_path_takes_python_scalars_with_weak_semantics(name, dtype, value, general_calls, inplace_fast):
    if dtype not in _fast_dtypes(name):
        return
    for scalar_first in (False, True):
        a, expected = _weak_reference(FAST_FUNCTIONS[name], dtype, value, scalar_first)
        x = from_numpy(a)
        result = getattr(xp, name)(value, x) if scalar_first else getattr(xp, name)(x, value)
        assert_same(result, expected)
        op = FAST_OPERATORS[name]
        assert_same(op(value, x) if scalar_first else op(x, value), expected)
    a, expected = _weak_reference(FAST_FUNCTIONS[name], dtype, value)
    x = from_numpy(a)
    FAST_INPLACE[name](x, value)
    assert_same(x, expected)
    assert general_calls == []
    assert inplace_fast == [True]


# (array dtype, operand) pairs the fast path hands to the general path, which gives the standard's answer
GENERAL_SCALARS = [
    ("float32", math.nan),
    ("float32", True),
    ("float32", 2**60 + 1),
    ("float64", -(2**53) - 1),
    ("float32", 1 + 2j),
    ("float32", np.float64(0.5)),
    ("float32", np.int64(2)),
    ("int32", 2.5),
    ("int8", True),
    ("uint8", -1),
    ("int8", 128),
    ("int64", 2**63),
    ("complex64", 2.0),
    ("uint16", 7),
    ("uint64", 2**64 - 1),
    ("bool", 1),
]


@pytest.mark.parametrize("name", sorted(FAST_FUNCTIONS))
@pytest.mark.parametrize(("dtype", "value"), GENERAL_SCALARS, ids=str)
def test_fast_path_hands_other_scalars_to_the_general_path(name, dtype, value, general_calls):
    x = from_numpy(np.arange(1, 4).astype(dtype))
    # a NumPy scalar is a strong 0-d array: NumPy promotes it as the standard does within a kind (float32 with
    # np.float64 is float64); across kinds the higher kind's dtype wins here, as a Python scalar's would
    strong = isinstance(value, np.generic) and value.dtype.kind == np.dtype(dtype).kind
    value_py = value.item() if isinstance(value, np.generic) and not strong else value
    try:
        result = getattr(xp, name)(x, value)
    except (OverflowError, TypeError) as e:
        # the standard's errors: an int beyond the dtype, a category the function refuses
        in_range = not isinstance(value_py, int) or dtype.startswith(("float", "complex", "bool"))
        assert isinstance(e, TypeError if in_range else OverflowError), e
        assert general_calls == [name]
        return
    assert general_calls == [name]
    if name == "divide" and dtype in INT_NAMES + ("bool",) or dtype in INT_NAMES and isinstance(value_py, float):
        # integers (and bools) with a float promote to the default float, float64 on the CPU
        a = np.arange(1, 4).astype(dtype).astype("float64")
        value_np = np.float64(value_py)
    else:
        a = np.arange(1, 4).astype(dtype)
        value_np = value_py
    with np.errstate(all="ignore"):
        expected = FAST_FUNCTIONS[name](a, value_np)
    assert_same(result, expected, rtol=RTOL.get(str(expected.dtype)))


def test_fast_path_hands_mixed_arrays_to_the_general_path(general_calls):
    f32, f64 = from_numpy(np.ones(3, np.float32)), from_numpy(np.full(3, 0.1))
    assert_same(xp.add(f32, f64), np.ones(3, np.float32) + np.full(3, 0.1))  # promotion
    zero_d = from_numpy(np.array(0.1))  # a 0-d float64 wins against float32, which torch's own add would not do
    assert xp.multiply(zero_d, f32).dtype == xp.float64
    assert_same(
        xp.subtract(from_numpy(np.ones((2, 1))), from_numpy(np.arange(3.0))), np.ones((2, 1)) - np.arange(3.0)
    )  # broadcasting
    i = from_numpy(np.arange(1, 4, dtype=np.int32))
    assert_same(xp.divide(i, i), np.ones(3, np.float64))  # integers divide in the default float (CPU: float64)
    c = from_numpy(np.array([complex(0, math.inf)], np.complex128))
    assert_same(xp.add(c, from_numpy(np.zeros(1, np.complex128))), np.array([complex(0, math.inf)]))
    with pytest.raises(TypeError, match="add\\(\\) needs x1 and x2 of a numeric dtype, got bool"):
        xp.add(from_numpy(np.ones(2, bool)), from_numpy(np.ones(2, bool)))
    assert general_calls == ["add", "multiply", "subtract", "divide", "add", "add"]


def test_fast_path_checks_devices():
    a = xp.NeuronArray(torch.zeros(2))
    b = xp.NeuronArray(torch.zeros(2, device="meta"))
    with pytest.raises(ValueError, match="cpu and meta"):
        a + b
    with pytest.raises(ValueError, match="cpu and meta"):
        a += b
    assert_same(a, np.zeros(2, np.float32))
    # a scalar with an array off the CPU takes the general path: torch's CUDA kernels treat a host scalar
    # differently (division multiplies by its reciprocal); on "meta" that path only needs to run
    assert (b * 2.0).device == torch.device("meta")
    assert xp.divide(2.0, b).shape == (2,)


@pytest.fixture
def inplace_fast(monkeypatch):
    """What the in-place fast path answered for each call: True where it updated x itself. The namespace's own
    functions are put back for the test: the fast path runs only while they are in place, and importing
    trn_backend.distributed (another test, same worker) wraps them."""
    answers = []
    for name, (func, run) in list(_array._INPLACE_FAST.items()):
        monkeypatch.setattr(xp, name, func)

        def spy(t, other, run=run):
            answers.append(run(t, other))
            return answers[-1]

        monkeypatch.setitem(_array._INPLACE_FAST, name, (func, spy))
    return answers


def test_fast_inplace_operands_that_overlap_x_are_read_first(inplace_fast):
    a = np.arange(6.0)
    x = from_numpy(a)
    tail, head = x[1:], x[:-1]  # views of x: torch would read head while writing tail
    tail += head
    a[1:] += a[:-1].copy()
    assert_same(x, a)
    y = from_numpy(np.arange(4.0))
    y += y  # the same array: each element reads itself, which torch's in-place add does
    assert_same(y, np.arange(4.0) * 2)
    assert inplace_fast == [False, True]


def test_fast_inplace_keeps_the_general_errors(inplace_fast):
    x = from_numpy(np.arange(3, dtype=np.int8))
    with pytest.raises(OverflowError, match="200 is out of range for int8"):
        x += 200
    with pytest.raises(
        TypeError,
        match="in-place multiply: the float64 result cannot be stored in x of dtype int8 "
        "under NumPy's same_kind casting",
    ):
        x *= 2.5
    f = from_numpy(np.ones(3, np.float32))
    expected = np.ones(3, np.float32)
    f += from_numpy(np.full(3, 0.1))  # the float64 result is cast back to float32 (same_kind): the general path
    expected += np.full(3, 0.1)
    assert_same(f, expected)
    with pytest.raises(ValueError, match="in-place add would change the shape of x from \\(3,\\) to \\(2, 3\\)"):
        f += from_numpy(np.ones((2, 3), np.float32))
    f += from_numpy(np.ones(1, np.float32))  # broadcasting into x's shape: the general path
    assert_same(f, expected + np.float32(1))
    assert_same(x, np.arange(3, dtype=np.int8))
    assert inplace_fast == [False] * 5


def test_fast_paths_defer_to_replaced_namespace_functions(monkeypatch):
    # operators call the namespace's public function (an override may handle it); they must call what is there
    calls = []
    real = xp.add
    monkeypatch.setitem(_array.OPERATORS, "add", lambda x1, x2: calls.append((x1, x2)) or real(x1, x2))
    x = from_numpy(np.ones(2, np.float32))
    x + x
    x += 1.0
    assert len(calls) == 2
    assert_same(x, np.full(2, 2, np.float32))


def test_python_number_exponents_take_the_scalar_path():
    # a tensor exponent makes torch compute exp(b log a): spurious imaginary parts on complex squares and
    # results that depend on the array's length; a Python number squares exactly, as NumPy
    z = np.array([1234.5678j, -3.25 + 0j, 1 + 1j])
    np.testing.assert_array_equal(np.asarray(xp.asarray(z) ** 2), z * z)
    np.testing.assert_array_equal(np.asarray(xp.asarray(z) ** 0), np.ones(3, complex))
    a = np.random.default_rng(1).random(1000)
    np.testing.assert_array_equal(np.asarray(xp.asarray(a) ** 2), a * a)
    whole, head = np.asarray(xp.asarray(a) ** 3), np.asarray(xp.asarray(a[:7]) ** 3)
    np.testing.assert_array_equal(whole[:7], head)  # the same value whatever the array's length
