"""NumPy's mathematical functions of trn_backend/numpy_dispatch/mathematical.py (diff, gradient, ediff1d, cross,
round, real and imag, convolve, nan_to_num, clip, interp, and the ufunc table's floor_divide and expm1) against
NumPy on the same data: the table's cases, hypothesis-drawn arrays, rounding of integers, clip's promotion,
interp, gradient and ediff1d, convolve and correlate (whose correlation core is here), and cross."""

from __future__ import annotations

import pathlib
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.numpy_dispatch.calls import (
    CPLX,
    OTHER_ORDER,
    Case,
    I,
    M,
    _apply,
    _neuron,
    _numpy_tree,
    agree,
    assert_on_device,
    nd,
    raises_like_numpy,
    run_both,
)
from tests.support import INT_NAMES, arrays, assert_same_array, assert_same_results, from_numpy, shapes, to_numpy

rng = np.random.default_rng(7)
CPLX_1D = rng.standard_normal(5) + 1j * rng.standard_normal(5)
NAN = np.nan


CASES = [
    Case(np.diff, (M,)),
    Case(np.diff, (M,), {"n": 2, "axis": 0}),
    Case(np.diff, (M,), {"prepend": 0.0, "append": M[:, :1]}),
    Case(np.clip, (M, -0.5, 0.5)),
    Case(np.clip, (I,), {"min": -2}),
    Case(np.clip, (I, 0.5, 2.5)),
    Case(np.clip, (M, -M[0], None)),
    Case(np.round, (M * 100, 1)),
    Case(np.round, (M * 100, -1)),
    Case(np.round, (M,)),
    Case(np.round, (np.array([15, 25, -35, 44, 250]), -1)),
    Case(np.round, (I, 2)),
    Case(np.around, (np.array([0.5, 1.5, 2.5, -0.5]),)),
    Case(np.real, (CPLX,)),
    Case(np.real, (M,)),
    Case(np.imag, (CPLX,)),
    Case(np.imag, (M,)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, rtol=OTHER_ORDER, atol=case.atol)


@settings(max_examples=40)
@given(a=arrays("float64", shapes(0, 3)), decimals=st.integers(-2, 3), lo=st.floats(-10, 0), hi=st.floats(0, 10))
def test_elementwise_functions_match_numpy(a, decimals, lo, hi) -> None:
    a = np.asarray(np.nan_to_num(a, nan=0.0, posinf=1e6, neginf=-1e6) % 1e6)
    assert_same_results(*run_both(np.round, a, decimals), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.clip, a, lo, hi), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.isclose, a, a * (1 + 1e-6)), rtol=OTHER_ORDER)
    assert np.allclose(from_numpy(a), from_numpy(a)) is True


@st.composite
def _round_case(draw: st.DrawFn) -> tuple[str, int, list[int]]:
    """An integer dtype, decimals in [-20, -1], and values near the dtype's limits, at rounding ties and
    around zero as well as anywhere in range."""
    dtype = draw(st.sampled_from(INT_NAMES))
    decimals = draw(st.integers(-20, -1))
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    step = 10**-decimals
    near = st.integers(-3 * step, 3 * step)
    values = st.one_of(
        st.integers(lo, hi),
        near.map(lambda d: lo + abs(d)),
        near.map(lambda d: hi - abs(d)),  # near the limits
        st.integers(lo // step, hi // step).map(lambda q: q * step + step // 2),  # ties, half to even
        st.integers(-1000, 1000),
    ).map(lambda v: min(max(v, lo), hi))
    return dtype, decimals, draw(st.lists(values, min_size=1, max_size=12))


@pytest.mark.heavy
@settings(max_examples=200)
@given(case=_round_case())
def test_round_of_integers_is_exact(case: tuple[str, int, list[int]]) -> None:
    dtype, decimals, values = case
    info = np.iinfo(dtype)
    a = np.array(values, dtype=dtype)
    ours, expected = run_both(np.round, a, decimals)
    got = to_numpy(ours)
    assert got.dtype == a.dtype
    # Python's round of an int is exact and half to even; a result beyond the dtype wraps modulo 2**bits
    exact = [round(v, decimals) for v in values]
    assert got.tolist() == [(r - int(info.min)) % 2**info.bits + int(info.min) for r in exact]
    # NumPy rounds integers through float64, which is exact below 2**53 where the result fits the dtype
    for v, r, g, e in zip(values, exact, got.tolist(), expected.tolist(), strict=True):
        if abs(v) <= 2**53 and info.min <= r <= info.max:
            assert g == e, (v, decimals, g, e)


def test_round_of_integers_at_the_reported_cases() -> None:
    int8 = np.array([100, -50, 50, 127, -128, 150 - 256], dtype=np.int8)
    assert_same_results(np.round(from_numpy(int8), -2), np.round(int8, -2), rtol=OTHER_ORDER)
    assert_same_results(np.round(from_numpy(np.array([100], np.int8)), -3), np.zeros(1, np.int8), rtol=OTHER_ORDER)
    assert_same_results(
        np.round(from_numpy(np.array([2**64 - 1], np.uint64)), -20), np.zeros(1, np.uint64), rtol=OTHER_ORDER
    )
    assert_same_results(
        np.round(from_numpy(int8), np.int64(-1)), np.round(int8, np.int64(-1)), rtol=OTHER_ORDER
    )  # NumPy integer decimals


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int16", "bool"])
@pytest.mark.parametrize(
    "bounds",
    [(0, 1), (-0.5, None), (None, 2), (True, 3.5), (-1e300, 1e300), (np.float32(0.5), 1.0), (0.25, np.float64(0.75))],
)
def test_clip_with_python_bounds_keeps_numpy_2_promotion(dtype, bounds) -> None:
    """Python bounds are weak (a real floating array keeps its dtype, which the implementation takes without
    asking the promotion rules); NumPy scalar bounds and integer or boolean arrays promote as NumPy 2 does."""
    a = np.array([-2.0, -0.5, 0.0, 0.4, 1.0, 3.0, 7000.0]).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's overflow warnings of its own float16 conversions
        expected = np.clip(a, *bounds)
    got = np.clip(from_numpy(a), *bounds)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(to_numpy(got), expected)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_numpy_expm1_of_complex_values(dtype):
    """numpy.expm1's complex formula and special values (NaN + 0j gives NaN + NaN j), for the ufunc table; the
    namespace's expm1 keeps the standard's (NaN + 0j)."""
    from trn_backend.numpy_dispatch.mathematical import expm1

    x = np.array(
        [
            -1 + 1j,
            -3 + 6.2628126e16j,
            complex(NAN, 0),
            complex(0, np.inf),
            1e-8 + 1e-8j,
            2 - 0.5j,
            complex(np.inf, 0),
            complex(-np.inf, 1),
        ],
        dtype=dtype,
    )
    want = np.expm1(x)
    got = np.asarray(expm1(xp.asarray(x)))
    assert got.dtype == want.dtype
    for part in (np.real, np.imag):
        assert_same_array(part(got), part(want), rtol=1e-5, what=part.__name__)  # each part relative to itself
    assert np.isnan(np.asarray(xp.expm1(xp.asarray(x)))[2].real)
    assert np.asarray(xp.expm1(xp.asarray(x)))[2].imag == 0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(
    "a, b", [([-2.0, np.inf, 3.0, -np.inf], [np.inf, 3.0, -np.inf, 2.0]), ([7.0, -7.0], [0.0, 2.5])]
)
def test_floor_divide_ufunc_is_numpys_and_the_operator_the_standards(a, b):
    """np.floor_divide on NeuronArrays gives NumPy's values (-2 // inf is -1); the // operator keeps the array API
    standard's special cases (-0.0 there)."""
    x, y = xp.asarray(np.array(a)), xp.asarray(np.array(b))
    with np.errstate(all="ignore"):
        want = np.floor_divide(np.array(a), np.array(b))
    np.testing.assert_array_equal(np.asarray(np.floor_divide(x, y)), want)
    if a[0] == -2.0:
        assert np.signbit(np.asarray(x // y)[0]) and np.asarray(x // y)[0] == 0


# ---------------------------------------------------------------- interp

POINTS = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
VALUES = np.array([1.0, 3.0, -1.0, 2.0, 0.5])


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"left": -7.0},
        {"right": 9},
        {"left": -1.0, "right": np.float32(2.0)},
        {"period": 3.0},
        {"period": -3.0, "left": 5.0},
    ],
)
def test_interp(kwargs: dict[str, Any]) -> None:
    x = np.array([-1.0, 0.0, 0.5, 1.0, 1.7, 2.5, 4.0, 5.0, np.nan, np.inf, -np.inf])
    # interpolation's arithmetic, in another order than NumPy's on some devices (fused multiply-adds)
    agree(np.interp, x, POINTS, VALUES, rtol=1e-12, **kwargs)
    # NaN's complex result: NumPy's nan+0j, ours nan+nanj (the same complex NaN)
    agree(np.interp, x.reshape(1, 11), POINTS, VALUES + 1j * VALUES[::-1], rtol=1e-12, nan_parts=False, **kwargs)
    agree(np.interp, x.astype(np.float32), POINTS.astype(np.float32), VALUES.astype(np.float32), rtol=1e-12, **kwargs)


def test_interp_integer_inputs_and_complex_ends() -> None:
    # interpolation's arithmetic, in another order than NumPy's on some devices (fused multiply-adds)
    agree(np.interp, np.arange(-1, 6), np.array([0, 2, 4]), np.array([3, 1, 7]), rtol=1e-12)
    agree(
        np.interp,
        np.array([-1.0, 0.5, 9.0]),
        np.array([0.0, 1.0]),
        np.array([1j, 2.0]),
        left=3j,
        right=1 + 1j,
        rtol=1e-12,
    )
    agree(np.interp, np.array([-1.0, 0.0, 2.0, np.nan]), np.array([0.0]), np.array([5.0]), rtol=1e-12)


def test_interp_infinite_values_follow_numpy() -> None:
    fp = np.array([np.inf, -np.inf, 1.0, 1.0, np.inf])
    # interpolation's arithmetic, in another order than NumPy's on some devices (fused multiply-adds)
    agree(np.interp, np.array([0.5, 1.0, 1.5, 2.5, 3.5, 3.0]), np.arange(5.0), fp, rtol=1e-12)
    complex_fp = np.empty(5, dtype=np.complex128)
    complex_fp.real, complex_fp.imag = fp, fp[::-1]
    agree(np.interp, np.array([0.5, 2.5]), np.arange(5.0), complex_fp, rtol=1e-12)


@settings(max_examples=40)
@given(
    st.lists(st.floats(-50, 50), min_size=1, max_size=8, unique=True),
    st.lists(st.floats(-1e3, 1e3), min_size=8, max_size=8),
    st.lists(st.floats(-60, 60), min_size=0, max_size=10),
)
def test_interp_matches_numpy(points: list[float], values: list[float], x: list[float]) -> None:
    p = np.sort(np.array(points))
    agree(np.interp, np.array(x, dtype=np.float64), p, np.array(values[: len(p)]), rtol=1e-9, atol=1e-9)


def test_interp_errors() -> None:
    raises_like_numpy(ValueError, np.interp, np.ones(2), np.zeros(0), np.zeros(0), match="empty")
    raises_like_numpy(ValueError, np.interp, np.ones(2), np.zeros(3), np.zeros(2), match="same length")
    raises_like_numpy(ValueError, np.interp, np.ones(2), np.arange(3.0), np.zeros(3), period=0, match="non-zero")
    raises_like_numpy(TypeError, np.interp, np.ones(2) * 1j, np.arange(3.0), np.zeros(3), match="x must be real")
    raises_like_numpy(TypeError, np.interp, np.ones(2), np.arange(3.0), np.zeros(3), left=1j, match="left")


# ---------------------------------------------------------------- gradient and ediff1d

G2 = rng.standard_normal((4, 5))
G3 = rng.standard_normal((3, 4, 5))
COORDS = np.array([0.0, 0.5, 1.7, 2.0, 3.5])


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize(
    "case",
    [
        ((G2,), {}),
        ((G2, 0.5), {}),
        ((G2, 2.0, COORDS), {}),
        ((G2, np.float64(2.0), np.arange(5)), {}),
        ((G2, COORDS), {"axis": 1}),
        ((G2, COORDS), {"axis": -1}),
        ((G3,), {"axis": (0, 2)}),
        ((G3, 1.5, COORDS), {"axis": [0, 2]}),
        ((G2[:, 0],), {}),
        ((G2[:, 0], COORDS[:4]), {}),
        ((I,), {}),
        ((I.astype(np.uint8), 2), {}),
        ((G2.astype(np.float32), COORDS), {"axis": 1}),
        ((G2.astype(np.float32), 0.3), {}),
        ((G2 + 1j * G2[::-1], COORDS), {"axis": 1}),
        ((np.array(1.5),), {}),
    ],
)
def test_gradient(case: tuple[tuple[Any, ...], dict[str, Any]], edge_order: int) -> None:
    args, kwargs = case
    agree(np.gradient, *args, edge_order=edge_order, rtol=2e-6 if args[0].dtype == np.float32 else 1e-12, **kwargs)


def test_gradient_errors() -> None:
    raises_like_numpy(ValueError, np.gradient, np.ones(2), edge_order=2, match="at least 3")
    raises_like_numpy(ValueError, np.gradient, np.ones(5), edge_order=3, match="greater than 2")
    raises_like_numpy(TypeError, np.gradient, G2, 1.0, 2.0, 3.0, match="one spacing per axis")
    raises_like_numpy(ValueError, np.gradient, G2, np.ones((2, 2)), 1.0, match="1-d")
    raises_like_numpy(ValueError, np.gradient, G2, np.arange(3.0), 1.0, match="do not match")
    raises_like_numpy(TypeError, np.gradient, np.array([True, False, True]), match="boolean")


@pytest.mark.parametrize(
    "case",
    [
        ((M,), {}),
        ((I.astype(np.int8) * 30,), {"to_begin": 5, "to_end": np.array([1, 2])}),
        ((M,), {"to_end": np.array([[1.0], [2.0]])}),
        ((np.array(3.0),), {"to_begin": 1.5}),
        ((I.astype(np.uint8),), {"to_begin": np.array([7], dtype=np.uint8)}),
        ((CPLX_1D,), {"to_end": 2.5}),
    ],
)
def test_ediff1d(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.ediff1d, *args, **kwargs)


def test_ediff1d_errors() -> None:
    raises_like_numpy(TypeError, np.ediff1d, I, to_begin=1.5, match="same_kind")
    raises_like_numpy(TypeError, np.ediff1d, I.astype(np.int8), to_end=np.array([1.0]), match="to_end")


# ---------------------------------------------------------------- convolution and correlation

SEQUENCE_DTYPES = ["bool", "int8", "uint8", "int64", "uint16", "float32", "float64", "complex128"]


@settings(max_examples=50)
@given(
    st.integers(1, 7),
    st.integers(1, 7),
    st.sampled_from(SEQUENCE_DTYPES),
    st.sampled_from(SEQUENCE_DTYPES),
    st.sampled_from(["full", "same", "valid"]),
    st.data(),
)
def test_convolve_and_correlate_match_numpy(la: int, lv: int, da: str, dv: str, mode: str, data: Any) -> None:
    def sequence(n: int, dtype: str) -> np.ndarray:
        values = data.draw(st.lists(st.integers(-60, 120), min_size=n, max_size=n))
        a = np.array(values)
        if np.dtype(dtype).kind == "c":
            return (a + 1j * a[::-1]).astype(dtype)
        return a.astype(dtype) if dtype != "bool" else a > 30

    a, v = sequence(la, da), sequence(lv, dv)
    rtol = 1e-5 if {da, dv} & {"float32"} else 1e-12
    agree(np.convolve, a, v, mode, rtol=rtol)
    agree(np.correlate, a, v, mode=mode, rtol=rtol)


def test_convolve_of_scalars_and_integer_modes() -> None:
    agree(np.convolve, np.array(3), np.array([1, 2]))
    agree(np.correlate, np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0]), 1)
    agree(np.correlate, CPLX_1D, CPLX_1D[:2], rtol=1e-12)  # complex products summed in another order


def test_convolve_and_correlate_errors() -> None:
    for func in (np.convolve, np.correlate):
        raises_like_numpy(ValueError, func, np.zeros(0), np.ones(2), match="a cannot be empty")
        raises_like_numpy(ValueError, func, np.ones(2), np.zeros(0), match="v cannot be empty")
        raises_like_numpy(ValueError, func, np.ones((2, 2)), np.ones(2), match="1-d")
        raises_like_numpy(ValueError, func, np.ones(3), np.ones(2), mode="middle", match="mode must be one of")
    raises_like_numpy(ValueError, np.correlate, np.array(3.0), np.ones(2), match="1-d")


# ---------------------------------------------------------------- cross


@pytest.mark.parametrize(
    "case",
    [
        ((rng.standard_normal(3), rng.standard_normal(3)), {}),
        ((rng.standard_normal((4, 3)), rng.standard_normal(3)), {}),
        ((rng.integers(-9, 9, (2, 3)).astype(np.int8), rng.integers(-9, 9, (5, 1, 3)).astype(np.int16)), {}),
        ((rng.standard_normal((3, 4)), rng.standard_normal((4, 3))), {"axisa": 0, "axisc": 0}),
        ((rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 2, 4))), {"axis": 0}),
        ((rng.standard_normal((2, 3)), rng.standard_normal((3, 2))), {"axisb": 0, "axisc": -2}),
        ((rng.integers(0, 9, (4, 3)).astype(np.uint8), rng.standard_normal((4, 3)).astype(np.float32)), {}),
        ((CPLX_1D[:3], rng.standard_normal(3)), {}),
    ],
)
def test_cross(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.cross, *args, rtol=1e-6, **kwargs)


@pytest.mark.parametrize("shapes", [((2,), (2,)), ((4, 2), (2,)), ((2,), (3,)), ((3, 3), (3, 2))])
def test_cross_of_2_vectors_warns_as_numpy(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated"):
        expected = np.cross(a, b)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors are deprecated") as record:
        ours = np.cross(nd(a), nd(b))
    assert_on_device(ours)
    assert_same_results(ours, expected, rtol=1e-12)
    assert pathlib.Path(record[0].filename).name == pathlib.Path(__file__).name  # the user's line, as NumPy


def test_cross_errors() -> None:
    raises_like_numpy(ValueError, np.cross, np.ones(4), np.ones(3), match="dimension must be 2 or 3")
    raises_like_numpy(ValueError, np.cross, np.ones((3, 3)), np.ones(3), axisc=2)
