"""Reductions and cumulative functions against NumPy: dtypes, axes, keepdims, empties, uint wrapping."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, REAL_NAMES, arrays, assert_same, from_numpy, shapes
from trn_backend._api import statistical

# The standard's accumulation dtype of sum/prod/cumulative_* without dtype=.
ACCUMULATOR = {
    "bool": "int64",
    "int8": "int64",
    "int16": "int64",
    "int32": "int64",
    "int64": "int64",
    "uint8": "uint64",
    "uint16": "uint64",
    "uint32": "uint64",
    "uint64": "uint64",
}


def _elements(dtype_name):
    """Values whose sums and products stay finite, so only rounding separates us from NumPy."""
    kind = np.dtype(dtype_name).kind
    if kind == "b":
        return st.booleans()
    if kind in "iu":
        lo, hi = np.iinfo(dtype_name).min, np.iinfo(dtype_name).max
        return st.integers(int(lo), int(hi))
    reals = st.floats(-8, 8, width=32)
    return reals if kind == "f" else st.builds(complex, reals, reals)


@st.composite
def array_axis(draw, dtype_name, min_dims=0):
    a = draw(arrays(dtype_name, shapes(min_dims=min_dims, max_side=4), elements=_elements(dtype_name)))
    axis = (
        draw(
            st.none() | st.integers(-a.ndim, a.ndim - 1) | st.lists(st.integers(0, a.ndim - 1), unique=True).map(tuple)
        )
        if a.ndim
        else None
    )
    return a, axis


def _rtol(dtype):
    return {np.dtype("float32"): 1e-4, np.dtype("complex64"): 1e-4}.get(np.dtype(dtype), 1e-10)


# ---------------------------------------------------------------- sum / prod


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@settings(max_examples=12)
@given(data=st.data())
def test_sum_prod_match_numpy(dtype_name, data):
    a, axis = data.draw(array_axis(dtype_name))
    keepdims = data.draw(st.booleans())
    acc = np.dtype(ACCUMULATOR.get(dtype_name, dtype_name))
    for f, ref in ((xp.sum, np.sum), (xp.prod, np.prod)):
        with np.errstate(all="ignore"):
            expected = np.asarray(ref(a, axis=axis, keepdims=keepdims, dtype=acc))
        assert_same(f(from_numpy(a), axis=axis, keepdims=keepdims), expected, rtol=_rtol(acc))


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("dtype_name", ["int8", "uint16", "uint32", "float32", "complex128"])
def test_sum_prod_dtype_argument(dtype_name):
    a = np.array([[3, 200], [7, 100]]).astype(dtype_name)
    for target in ("int8", "uint16", "uint64", "float64", "complex64"):
        with np.errstate(all="ignore"):
            s = np.sum(a.astype(target), axis=0, dtype=target)
            p = np.prod(a.astype(target), axis=1, dtype=target)
        assert_same(xp.sum(from_numpy(a), axis=0, dtype=getattr(xp, target)), s)
        assert_same(xp.prod(from_numpy(a), axis=1, dtype=getattr(xp, target)), p)


def test_unsigned_sums_wrap_modulo_2_64():
    a = np.array([2**64 - 1, 2**63, 2**63 + 5], np.uint64)
    assert_same(xp.sum(from_numpy(a)), np.array((2**64 - 1 + 2**63 + 2**63 + 5) % 2**64, np.uint64))
    u32 = np.array([2**32 - 1, 2**32 - 1], np.uint32)
    assert_same(xp.sum(from_numpy(u32)), np.array(2**33 - 2, np.uint64))
    assert_same(xp.prod(from_numpy(u32), dtype=xp.uint32), np.array(1, np.uint32))


def test_empty_sum_prod_and_axis_forms():
    e = from_numpy(np.zeros((2, 0), np.float32))
    assert_same(xp.sum(e, axis=1), np.zeros(2, np.float32))
    assert_same(xp.prod(e), np.array(1.0, np.float32))
    assert_same(xp.sum(from_numpy(np.array(5, np.int8))), np.array(5))
    x = from_numpy(np.arange(6).reshape(2, 3))
    assert_same(xp.sum(x, axis=()), np.arange(6).reshape(2, 3))
    assert_same(xp.sum(x, axis=[-1, 0], keepdims=True), np.array([[15]]))


# ---------------------------------------------------------------- max / min


@pytest.mark.parametrize("dtype_name", ("bool",) + REAL_NAMES)
@settings(max_examples=12)
@given(data=st.data())
def test_max_min_match_numpy(dtype_name, data):
    a = data.draw(arrays(dtype_name, shapes(max_side=4)))  # NaN and infinities included
    axis = data.draw(
        st.none() | st.lists(st.integers(0, a.ndim - 1), unique=True, min_size=1).map(tuple) if a.ndim else st.none()
    )
    keepdims = data.draw(st.booleans())
    reduced = a.size if axis is None else int(np.prod([a.shape[i] for i in axis]))
    for f, ref in ((xp.max, np.max), (xp.min, np.min)):
        if reduced == 0:
            with pytest.raises(ValueError, match=rf"{f.__name__}\(\): zero-size reduction"):
                f(from_numpy(a), axis=axis, keepdims=keepdims)
        else:
            assert_same(f(from_numpy(a), axis=axis, keepdims=keepdims), ref(a, axis=axis, keepdims=keepdims))


def test_max_min_uint64_and_errors():
    a = np.array([[2**63, 1], [2**64 - 1, 0]], np.uint64)
    assert_same(xp.max(from_numpy(a), axis=0), np.array([2**64 - 1, 1], np.uint64))
    assert_same(xp.min(from_numpy(a)), np.array(0, np.uint64))
    with pytest.raises(TypeError, match=r"max\(\) needs x of a real-valued or boolean dtype, got complex64"):
        xp.max(from_numpy(np.ones(2, np.complex64)))
    with pytest.raises(IndexError, match=r"min\(\): axis 2 is out of bounds"):
        xp.min(from_numpy(np.ones((2, 2))), axis=2)
    with pytest.raises(ValueError, match=r"max\(\): repeated axis"):
        xp.max(from_numpy(np.ones((2, 2))), axis=(0, -2))


# ---------------------------------------------------------------- mean / var / std


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@settings(max_examples=12)
@given(data=st.data())
def test_mean_var_std_match_numpy(dtype_name, data):
    a, axis = data.draw(array_axis(dtype_name))
    keepdims = data.draw(st.booleans())
    correction = data.draw(st.sampled_from([0, 1, 0.5]))
    # integers and bools: the mean in the default float, float64 on the CPU (as NumPy's)
    out = dtype_name if dtype_name in ("float32", "float64", "complex64", "complex128") else "float64"
    real = {"complex64": "float32", "complex128": "float64"}.get(out, out)
    wide = a.astype(np.complex128 if np.dtype(out).kind == "c" else np.float64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on empty means and ddof >= M
        mean = np.asarray(np.mean(wide, axis=axis, keepdims=keepdims)).astype(out)
        var = np.asarray(np.var(wide, axis=axis, keepdims=keepdims, ddof=correction)).astype(real)
        std = np.asarray(np.std(wide, axis=axis, keepdims=keepdims, ddof=correction)).astype(real)
    reduced = a.size if axis is None else int(np.prod([a.shape[i] for i in np.atleast_1d(axis)]))
    if reduced - correction <= 0:  # NumPy gives inf or a negative-divisor value there; the standard says NaN
        var, std = np.full_like(var, np.nan), np.full_like(std, np.nan)
    x = from_numpy(a)
    assert_same(xp.mean(x, axis=axis, keepdims=keepdims), mean, rtol=_rtol(out))
    # var and std lose accuracy to the mean's rounding: an absolute error of about (n eps max|x|)**2 for var
    # (data of equal large values has var 0 but a float32 mean off by eps |x|), n eps max|x| for std
    spread = 4 * max(reduced, 1) * float(np.finfo(real).eps) * float(np.max(np.abs(wide), initial=0))
    assert_same(
        xp.var(x, axis=axis, keepdims=keepdims, correction=correction), var, rtol=_rtol(out) * 10, atol=spread**2
    )
    assert_same(xp.std(x, axis=axis, keepdims=keepdims, correction=correction), std, rtol=_rtol(out) * 10, atol=spread)


def test_mean_var_special_cases():
    empty = from_numpy(np.zeros((0, 2), np.float64))
    assert_same(xp.mean(empty), np.array(np.nan))
    assert_same(xp.var(empty, axis=0), np.array([np.nan, np.nan]))
    nan_nan = np.array(complex(np.nan, np.nan), np.complex64)
    assert_same(xp.mean(from_numpy(np.zeros(0, np.complex64))), nan_nan)
    assert_same(xp.std(from_numpy(np.array([1.0, 3.0])), correction=2), np.array(np.nan))
    assert_same(xp.var(from_numpy(np.array([1.0, np.nan]))), np.array(np.nan))
    assert_same(xp.mean(from_numpy(np.array([2**64 - 1], np.uint64))), np.array(2.0**64, np.float64))
    with pytest.raises(TypeError, match=r"var\(\): correction must be an int or a float, got str"):
        xp.var(from_numpy(np.ones(2)), correction="1")


# ---------------------------------------------------------------- cumulative_sum / cumulative_prod


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@settings(max_examples=10)
@given(data=st.data())
def test_cumulative_match_numpy(dtype_name, data):
    a = data.draw(arrays(dtype_name, shapes(min_dims=1, max_side=4), elements=_elements(dtype_name)))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    include_initial = data.draw(st.booleans())
    acc = np.dtype(ACCUMULATOR.get(dtype_name, dtype_name))
    for f, ref in ((xp.cumulative_sum, np.cumulative_sum), (xp.cumulative_prod, np.cumulative_prod)):
        with np.errstate(all="ignore"):
            expected = ref(a, axis=axis, dtype=acc, include_initial=include_initial)
        assert_same(f(from_numpy(a), axis=axis, include_initial=include_initial), expected, rtol=_rtol(acc))


def test_cumulative_axis_rules_and_dtype():
    v = from_numpy(np.array([1, 2, 3], np.uint16))
    assert_same(xp.cumulative_sum(v), np.array([1, 3, 6], np.uint64))
    assert_same(xp.cumulative_prod(v, dtype=xp.float32, include_initial=True), np.array([1, 1, 2, 6], np.float32))
    assert_same(xp.cumulative_sum(from_numpy(np.array(4.0))), np.array([4.0]))  # 0-d: one element, as NumPy
    with pytest.raises(ValueError, match=r"cumulative_sum\(\): axis is required for an array of 2 dim"):
        xp.cumulative_sum(from_numpy(np.ones((2, 2))))
    with pytest.raises(IndexError, match=r"cumulative_prod\(\): axis 2 is out of bounds"):
        xp.cumulative_prod(from_numpy(np.ones((2, 2))), axis=2)
    with pytest.raises(TypeError, match="'float12' is not a dtype"):
        xp.cumulative_sum(v, dtype="float12")
    assert_same(xp.cumulative_sum(v, dtype="float32"), np.array([1, 3, 6], np.float32))  # any dtype spelling


def test_boolean_accumulation_is_logical():
    b = from_numpy(np.array([False, True, False]))
    assert_same(xp.cumulative_sum(b, dtype=xp.bool), np.cumsum(np.array([False, True, False]), dtype=bool))
    assert_same(xp.cumulative_prod(b, dtype=xp.bool), np.array([False, False, False]))
    assert_same(xp.sum(b, dtype=xp.bool), np.array(True))
    assert_same(xp.prod(b, dtype=xp.bool), np.array(False))


def test_axis_type_errors():
    with pytest.raises(TypeError, match=r"sum\(\): axis must be an int, got float"):
        xp.sum(from_numpy(np.ones(3)), axis=1.5)
    with pytest.raises(TypeError, match=r"mean\(\): axis must be an int, got str"):
        xp.mean(from_numpy(np.ones(3)), axis=("0",))


# ---------------------------------------------------------------- fast paths of sum and mean


@pytest.fixture
def general_reductions(monkeypatch):
    """The functions that ran the general path (flattening the reduced axes in reduce_axes)."""
    calls = []
    real = statistical.reduce_axes

    def spy(t, axis, keepdims, func, op):
        calls.append(func)
        return real(t, axis, keepdims, func, op)

    monkeypatch.setattr(statistical, "reduce_axes", spy)
    return calls


FAST_SUM = ("bool", "int8", "int16", "int32", "int64", "float32", "float64", "complex64", "complex128")
FAST_MEAN = ("float32", "float64", "complex64", "complex128")


@pytest.mark.parametrize("dtype_name", FAST_SUM)
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the spy only collects
@given(data=st.data())
def test_fast_sum_and_mean_match_numpy_on_views(dtype_name, data, general_reductions):
    # torch's own reduction over the axes as given, also of non-contiguous views (no flattening copy)
    base = data.draw(arrays(dtype_name, shapes(min_dims=1, max_side=4), elements=_elements(dtype_name)))
    order = tuple(data.draw(st.permutations(range(base.ndim)), label="order"))
    x, a = xp.permute_dims(from_numpy(base), order), base.transpose(order)  # x: a view of permuted strides
    axis = data.draw(
        st.none()
        | st.integers(-a.ndim, a.ndim - 1)
        | st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, unique_by=lambda i: i % a.ndim).map(tuple),
        label="axis",
    )
    keepdims = data.draw(st.booleans(), label="keepdims")
    acc = np.dtype(ACCUMULATOR.get(dtype_name, dtype_name))
    assert_same(
        xp.sum(x, axis=axis, keepdims=keepdims),
        np.asarray(np.sum(a, axis=axis, keepdims=keepdims, dtype=acc)),
        rtol=_rtol(acc),
    )
    if dtype_name in FAST_MEAN:
        wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the mean of nothing
            mean = np.asarray(np.mean(wide, axis=axis, keepdims=keepdims)).astype(a.dtype)
        assert_same(xp.mean(x, axis=axis, keepdims=keepdims), mean, rtol=_rtol(a.dtype))
    assert general_reductions == []


def test_fast_sum_and_mean_hand_the_rest_to_the_general_path(general_reductions):
    x = from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert_same(xp.sum(x, axis=()), np.arange(6, dtype=np.float32).reshape(2, 3))  # torch: every axis
    assert_same(xp.mean(x, axis=()), np.arange(6, dtype=np.float32).reshape(2, 3))
    assert_same(xp.sum(x, dtype=xp.float64), np.array(15.0))  # an explicit accumulation dtype
    u = from_numpy(np.array([200, 100], np.uint8))
    assert_same(xp.sum(u), np.array(300, np.uint64))  # torch would sum uint8 as int64
    i = from_numpy(np.array([1, 2], np.int32))
    assert_same(xp.mean(i), np.array(1.5, np.float64))  # integers: the mean in the default float (CPU: float64)
    assert general_reductions == ["sum", "mean", "sum", "sum", "mean"]


def test_fast_sum_and_mean_keep_the_axis_errors():
    x = from_numpy(np.ones((2, 3), np.float32))
    for f in (xp.sum, xp.mean):
        name = f.__name__
        with pytest.raises(IndexError, match=rf"{name}\(\): axis 2 is out of bounds for array of dimension 2"):
            f(x, axis=2)
        with pytest.raises(IndexError, match=rf"{name}\(\): axis -3 is out of bounds"):
            f(x, axis=(0, -3))
        with pytest.raises(TypeError, match=rf"{name}\(\): axis must be an int, got bool"):
            f(x, axis=True)
        with pytest.raises(ValueError, match=rf"{name}\(\): repeated axis in \(1, -1\)"):
            f(x, axis=(1, -1))
        with pytest.raises(IndexError, match=rf"{name}\(\): axis 0 is out of bounds for array of dimension 0"):
            f(from_numpy(np.array(1.0)), axis=0)
    assert_same(xp.sum(x, axis=np.int64(1)), np.full(2, 3, np.float32))  # NumPy integers are axes too
    assert_same(xp.mean(x, axis=[0], keepdims=np.True_), np.ones((1, 3), np.float32))
