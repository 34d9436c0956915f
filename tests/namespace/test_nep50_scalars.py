"""NEP 50 scalars, checked against NumPy 2 on the same data: a NumPy scalar is a strong 0-d array of its dtype
(``float32_array + np.float64(1)`` is float64), a Python scalar is weak (``int8_array + 300`` is an OverflowError),
in every operand order and through the operators, the namespace's functions, NumPy's ufuncs and functions, and
einsum. True division converts a Python int to the float it computes in, as NumPy 2 does (``int8_array / 1000``).
"""

import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, INT_NAMES, assert_same, from_numpy

OPERATORS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
ARITHMETIC = ("+", "-", "*", "/", "//", "%", "**")
ORDERING = ("<", "<=", ">", ">=")
RTOL = {"float32": 1e-5, "complex64": 1e-5, "float64": 1e-12, "complex128": 1e-12}
NUMPY_ERRORS = (OverflowError, ValueError, TypeError)


def _kind(dtype: str) -> str:
    return np.dtype(dtype).kind.replace("u", "i")


def _compared_pairs() -> list[tuple[str, str]]:
    """(array dtype, NumPy scalar dtype) pairs whose promotion is NumPy's. Documented differences are left to
    their own tests: integers with floating dtypes give the floating dtype (NumPy widens int32 with float32 to
    float64), and uint64 with a signed integer is a TypeError (NumPy: float64)."""
    pairs = []
    for a in DTYPE_NAMES:
        for s in DTYPE_NAMES:
            kinds = {_kind(a), _kind(s)}
            if (
                kinds in ({"i", "f"}, {"i", "c"})
                or {a, s} & {"uint64"}
                and {np.dtype(a).kind, np.dtype(s).kind} == {"u", "i"}
            ):
                continue
            pairs.append((a, s))
    return pairs


PAIRS = _compared_pairs()


def _elements(dtype: str) -> st.SearchStrategy:
    """Values of ``dtype``: every integer of an integer dtype; moderate floats (libm and FMA details stay out)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return st.booleans()
    if kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(int(info.min), int(info.max))
    floats = st.floats(-1e4, 1e4, width=32 if dtype in ("float32", "complex64") else 64, allow_subnormal=False)
    return floats if kind == "f" else st.builds(complex, floats, floats)


def _skipped(op: str, a: str, s: str) -> bool:
    """Documented differences of the functions themselves, whatever the operands: the standard's categories
    (arithmetic, shifts and ordering of two bools, ordering of complex numbers) raise TypeError where NumPy
    answers."""
    kinds = {np.dtype(a).kind, np.dtype(s).kind}
    ordering = ORDERING + ("maximum", "minimum")
    return (kinds == {"b"} and op in ARITHMETIC + ordering + ("<<", ">>") and op != "/") or (
        "c" in kinds and op in ordering + ("atan2",)
    )


def _numpy(op: str, left: object, right: object) -> np.ndarray | BaseException:
    with np.errstate(all="ignore"):
        try:
            return np.asarray(OPERATORS[op](left, right))
        except NUMPY_ERRORS as e:
            return e


def _check(ours_call, expected: np.ndarray | BaseException, op: str) -> None:
    if isinstance(expected, BaseException):
        error = next(t for t in NUMPY_ERRORS if isinstance(expected, t))
        with pytest.raises(error):
            ours_call()
        return
    result = ours_call()
    if op in ("**", "atan2") and expected.dtype.kind in "fc":
        # libm's pow and atan2 may round differently, and their special values (0 ** -1j) are libm's own: the
        # dtype, and the finite values to a tolerance
        finite = np.isfinite(expected)
        assert result.dtype == expected.dtype and result.shape == expected.shape
        assert_same(from_numpy(np.asarray(result)[finite]), expected[finite], rtol=RTOL[str(expected.dtype)])
        return
    # complex products and quotients may round differently (FMA): the rest is exact
    inexact = expected.dtype.kind == "c" and op in ("*", "/")
    assert_same(result, expected, rtol=RTOL.get(str(expected.dtype)) if inexact else None)


IN_PLACE = {
    op: getattr(operator, f"__i{f.__name__.strip('_')}__")
    for op, f in OPERATORS.items()
    if op not in ORDERING + ("==", "!=")
}
ORDERS = ("array first", "scalar first", "in place")


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, np.ndarray, np.generic, str]:
    op = draw(st.sampled_from(sorted(OPERATORS)))
    a, s = draw(st.sampled_from(PAIRS).filter(lambda p: not _skipped(op, *p)))
    data = np.array(draw(st.lists(_elements(a), min_size=1, max_size=3)), dtype=a)
    scalar = np.dtype(s).type(draw(_elements(s)))
    return op, data, scalar, draw(st.sampled_from(ORDERS if op in IN_PLACE else ORDERS[:2]))


def _in_place(op: str, target: object, scalar: np.generic) -> object:
    """``target op= scalar``: NumPy's same_kind cast of the result back to the target's dtype."""
    result = IN_PLACE[op](target, scalar)
    assert result is target
    return result


@given(_case())
def test_numpy_scalars_are_strong_in_every_operator_and_order(case):
    op, data, scalar, order = case
    x = from_numpy(data)
    if order == "scalar first":  # the NumPy scalar's operator runs first: it hands the call to x.__array_ufunc__
        _check(lambda: OPERATORS[op](scalar, x), _numpy(op, scalar, data), op)
    elif order == "array first":
        _check(lambda: OPERATORS[op](x, scalar), _numpy(op, data, scalar), op)
    else:
        with np.errstate(all="ignore"):
            try:
                expected = np.asarray(_in_place(op, data.copy(), scalar))
            except NUMPY_ERRORS as e:
                expected = e
        _check(lambda: _in_place(op, x, scalar), expected, op)


# namespace function -> (NumPy's ufunc, the operator of the same meaning)
FUNCTIONS = {
    "add": (np.add, "+"),
    "subtract": (np.subtract, "-"),
    "multiply": (np.multiply, "*"),
    "divide": (np.divide, "/"),
    "pow": (np.power, "**"),
    "less": (np.less, "<"),
    "equal": (np.equal, "=="),
    "bitwise_and": (np.bitwise_and, "&"),
    "bitwise_left_shift": (np.left_shift, "<<"),
    "maximum": (np.maximum, "maximum"),
    "minimum": (np.minimum, "minimum"),
    "atan2": (np.arctan2, "atan2"),
}


@given(st.sampled_from(sorted(FUNCTIONS)), st.sampled_from(PAIRS), st.data())
def test_namespace_functions_and_numpy_ufuncs_take_numpy_scalars_as_strong(name, pair, data):
    ufunc, op = FUNCTIONS[name]
    a, s = pair
    if _skipped(op, a, s):
        return
    host = np.array(data.draw(st.lists(_elements(a), min_size=1, max_size=3)), dtype=a)
    scalar = np.dtype(s).type(data.draw(_elements(s)))
    x = from_numpy(host)
    for f in (getattr(xp, name), ufunc):
        for args, host_args in (((x, scalar), (host, scalar)), ((scalar, x), (scalar, host))):
            with np.errstate(all="ignore"):
                try:
                    expected = np.asarray(ufunc(*host_args))
                except NUMPY_ERRORS as e:
                    expected = e
            if name == "atan2" and _kind(a) != "f" and _kind(s) != "f":
                # documented: integer input computes in the default float, where NumPy picks float16 for int8
                expected = np.arctan2(*(np.asarray(v, np.float64) for v in host_args))
            _check(lambda f=f, args=args: f(*args), expected, op)


def test_documented_promotions_with_numpy_scalars():
    """A NumPy scalar promotes as the 0-d array it is: integers with floating dtypes give the floating dtype,
    uint64 with a signed integer is a TypeError, as for arrays."""
    i32 = from_numpy(np.array([1, 2**24 + 1], np.int32))
    assert_same(i32 + np.float32(0.5), np.array([1, 2**24 + 1], np.float32) + np.float32(0.5))
    assert_same(np.float32(0.5) * i32, np.float32(0.5) * np.array([1, 2**24 + 1], np.float32))
    assert_same(from_numpy(np.ones(2, np.float32)) + np.int64(3), np.full(2, 4, np.float32))
    u64 = from_numpy(np.array([5, 2**64 - 1], np.uint64))
    for call in (
        lambda: u64 + np.int64(1),
        lambda: u64 == np.int8(5),
        lambda: np.int64(1) + u64,
        lambda: xp.add(u64, np.int32(1)),
    ):
        with pytest.raises(TypeError, match="no integer dtype holds both"):
            call()


def test_examples():
    f32 = from_numpy(np.array([1.5, 2.5], np.float32))
    i8 = from_numpy(np.array([1, -2], np.int8))
    u8 = from_numpy(np.array([1, 2], np.uint8))
    assert_same(f32 + np.float64(0.1), np.array([1.5, 2.5], np.float32) + np.float64(0.1))
    assert_same(np.float64(0.1) + f32, np.float64(0.1) + np.array([1.5, 2.5], np.float32))
    assert_same(i8 + np.int64(300), np.array([301, 298], np.int64))
    assert_same(i8 < np.int64(300), np.array([True, True]))
    assert_same(u8 == np.int16(-1), np.array([False, False]))
    assert_same(i8 ** np.int64(2), np.array([1, 4], np.int64))
    with pytest.raises(OverflowError, match=r"add\(\): Python int 300 is out of range for int8"):
        i8 + 300  # noqa: B018 - a Python int stays weak
    assert_same(xp.where(xp.asarray([True, False]), f32, np.float64(1)), np.array([1.5, 1.0]))
    assert_same(xp.where(xp.asarray([True, False]), np.int16(7), i8), np.array([7, -2], np.int16))
    assert_same(xp.maximum(i8, np.int16(1)), np.array([1, 1], np.int16))
    assert_same(xp.pow(f32, np.float64(2)), np.array([2.25, 6.25]))
    assert xp.result_type(i8, np.int64(1)) == np.int64
    assert xp.result_type(f32, np.float64(1), 1) == np.float64
    assert xp.result_type(np.float32(1), 1.0) == np.float32
    assert_same(np.where(np.array([True, False]), f32, np.float64(1)), np.array([1.5, 1.0]))
    assert_same(np.add(i8, np.int16(1)), np.array([2, -1], np.int16))


def test_in_place_operators_cast_back_under_same_kind():
    for dtype, value in (
        ("float32", np.float64(1 / 3)),
        ("int8", np.int64(300)),
        ("int8", np.int16(-129)),
        ("uint8", np.uint32(2**32 - 1)),
        ("complex64", np.complex128(1 / 3 + 1j)),
        ("float32", np.float32(2.0)),
    ):
        host = np.array([1, 2], dtype=dtype)
        x = from_numpy(host)
        y = x
        y += value
        host += value
        assert y is x
        assert_same(x, host)
    x = from_numpy(np.array([1, 2], np.int8))
    with pytest.raises(TypeError, match="same_kind"):
        x += np.float64(1.5)  # NumPy refuses the cast too
    with pytest.raises(OverflowError, match="out of range for int8"):
        x += 300
    for dtype in ("bool", "uint32"):  # NumPy refuses to store the int result before it sees the negative power
        x = from_numpy(np.zeros(2, dtype))
        with pytest.raises(TypeError, match="same_kind"):
            x **= np.int8(-1)


def test_clip_takes_numpy_scalar_bounds_as_arrays():
    """xp.clip keeps x's dtype (the standard): a NumPy scalar bound is a 0-d array of its dtype, held at x's range
    where a cast would wrap, rounded inward where it is a float; numpy.clip promotes as NumPy does."""
    host = np.array([1, -2, 100], np.int8)
    x = from_numpy(host)
    assert_same(xp.clip(x, np.int16(300)), np.array([127, 127, 127], np.int8))
    assert_same(xp.clip(x, np.int16(-300), np.int16(5)), np.array([1, -2, 5], np.int8))
    assert_same(xp.clip(x, xp.asarray(np.array([300, -300, 5], np.int16))), np.array([127, -2, 100], np.int8))
    assert_same(xp.clip(x, np.float64(-1.5), np.float64(2.5)), np.array([1, -1, 2], np.int8))
    assert_same(xp.clip(x, None, xp.asarray(np.array(np.inf))), host)
    assert_same(xp.clip(x, np.uint64(2**63)), np.array([127, 127, 127], np.int8))
    assert_same(
        xp.clip(from_numpy(np.array([1, 2**63 + 5], np.uint64)), np.int64(-5), np.int64(2**62)),
        np.array([1, 2**62], np.uint64),
    )
    with pytest.raises(ValueError, match=r"clip\(\): min holds NaN"):
        xp.clip(x, np.float64("nan"))
    assert_same(np.clip(x, np.int16(0), np.int16(300)), np.clip(host, np.int16(0), np.int16(300)))
    assert_same(
        xp.clip(from_numpy(np.array([0.5, 3.0], np.float32)), np.float64(1.0), np.float64(2.0)),
        np.array([1.0, 2.0], np.float32),
    )


def test_einsum_operands():
    host = np.array([1.5, 2.5], np.float32)
    x = from_numpy(host)
    expected = np.einsum("i,->i", host, np.float64(2))
    assert expected.dtype == np.float64
    assert_same(xp.einsum("i,->i", x, np.float64(2)), expected)
    assert_same(xp.einsum(",i->i", np.float64(2), x), expected)
    assert_same(xp.einsum("i,,->i", x, np.float64(2), 3), np.einsum("i,,->i", host, np.float64(2), 3))
    i8 = np.array([1, 2], np.int8)
    assert_same(xp.einsum("i,->i", from_numpy(i8), np.int16(300)), np.einsum("i,->i", i8, np.int16(300)))
    assert_same(np.einsum("i,->i", x, np.float64(2)), expected)
    assert_same(np.einsum("i,->i", x, np.array(2.0)), np.einsum("i,->i", host, np.array(2.0)))
    assert_same(xp.einsum(",->", np.float32(2), 3.5), np.array(7.0, np.float32))
    with pytest.raises(TypeError, match=r"einsum\(\) expects operands\[1\] to be a NeuronArray, got ndarray"):
        xp.einsum("i,->i", x, np.array(2.0))  # the namespace takes NeuronArrays and scalars, as everywhere


def test_numpy_scalars_of_unsupported_dtypes_are_refused():
    x = from_numpy(np.ones(2, np.float32))
    for value in (np.longdouble(1), np.str_("a"), np.datetime64(1, "s")):
        for call, name in (
            (lambda v=value: x + v, "add"),
            (lambda v=value: xp.multiply(v, x), "multiply"),
            (lambda v=value: xp.einsum("i,->i", x, v), "einsum"),
        ):
            with pytest.raises(TypeError, match=rf"{name}\(\): a NumPy scalar of dtype .* is not supported"):
                call()


# ---------------------------------------------------------------- Python ints beyond an integer array's dtype


@given(st.sampled_from(INT_NAMES + ("bool",)), st.sampled_from(("/", "//", "%")), st.booleans(), st.data())
def test_python_ints_beyond_the_dtype_divide_as_numpy(dtype, op, int_first, data):
    """True division computes in the default float, where NumPy 2 converts the int: no overflow (``int8 / 1000``
    is 0.001); floor division and remainder convert it to the array's dtype: OverflowError, as in NumPy."""
    host = np.array(data.draw(st.lists(_elements(dtype), min_size=1, max_size=3)), dtype=dtype)
    value = data.draw(
        st.one_of(st.integers(-(2**70), 2**70), st.integers(-300, 300), st.sampled_from([2**64, -(2**63) - 1, 2**1100]))
    )
    x = from_numpy(host)
    left, right = ((value, x), (value, host)) if int_first else ((x, value), (host, value))
    _check(lambda: OPERATORS[op](*left), _numpy(op, *right), op)
    if op == "/":
        _check(lambda: xp.divide(*left), _numpy(op, *right), op)
