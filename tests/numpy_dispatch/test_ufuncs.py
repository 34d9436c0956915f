"""NumPy ufuncs on NeuronArray (NEP 13) against NumPy on ndarrays: every handled ufunc over hypothesis-drawn
shapes and dtypes, reduce, accumulate, outer, out=, dtype=, mixed inputs and the refusals; ufuncs from outside
the table (SciPy's) through the host fallback of trn_backend/numpy_dispatch/ufuncs.py.

Known differences, pinned here: integer input of a floating-point ufunc computes in float32 (NumPy: float64, or
float16 for 8-bit integers); uint64 with a signed integer array is a TypeError (NumPy: float64).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest
import scipy.special
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import INT_NAMES, NUMERIC_NAMES, REAL_NAMES, arrays, assert_same, from_numpy, shapes, to_numpy
from trn_backend.numpy_dispatch import handled_ufuncs
from trn_backend.numpy_dispatch.ufuncs import _PLAIN as PLAIN
from trn_backend.numpy_dispatch.ufuncs import ACCUMULATE, REDUCE, UFUNCS

FLOAT_NAMES = ("float32", "float64")
COMPLEX_NAMES = ("complex64", "complex128")
SIGNED = ("int8", "int16", "int32", "int64")


# ---------------------------------------------------------------- element strategies


def _any_float(width: int) -> st.SearchStrategy:
    return st.floats(width=width, allow_subnormal=False)


def _elements(dtype_name: str, domain: str) -> st.SearchStrategy:
    """Values of ``dtype_name`` in ``domain``: "any" (floats include inf and nan), "moderate" (finite, |x| <=
    100; trigonometry and complex functions), "nonzero" (finite divisors), "small" (integers that neither
    overflow a product nor a power), "shift" (shift counts within the width)."""
    dtype = np.dtype(dtype_name)
    width = 32 if dtype_name in ("float32", "complex64") else 64
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if domain == "shift":
            return st.integers(0, info.bits - 1)
        if domain in ("small", "nonzero"):
            values = st.integers(0 if dtype.kind == "u" else -7, 7)
            return values.filter(bool) if domain == "nonzero" else values
        return st.integers(int(info.min), int(info.max))
    if domain == "any":
        reals = _any_float(width)
    else:
        reals = st.floats(-100, 100, width=width, allow_subnormal=False)
        if domain == "nonzero":
            reals = reals.filter(lambda v: abs(v) > 1e-3)
    return reals if dtype.kind == "f" else st.builds(complex, reals, reals)


# ufunc -> (dtypes, domain of each input); one entry for every handled ufunc
ALL_REAL = REAL_NAMES
FLOATING = FLOAT_NAMES + COMPLEX_NAMES
SPECS: dict[np.ufunc, tuple[tuple[str, ...], tuple[str, ...]]] = {
    np.absolute: (NUMERIC_NAMES, ("any",)),
    np.negative: (NUMERIC_NAMES, ("any",)),
    np.positive: (NUMERIC_NAMES, ("any",)),
    np.square: (NUMERIC_NAMES, ("moderate",)),
    np.sign: (REAL_NAMES + COMPLEX_NAMES, ("moderate",)),
    np.conjugate: (NUMERIC_NAMES, ("any",)),
    np.sqrt: (FLOATING, ("moderate",)),
    np.exp: (FLOATING, ("moderate",)),
    np.expm1: (FLOAT_NAMES, ("any",)),
    np.log: (FLOATING, ("moderate",)),
    np.log1p: (FLOAT_NAMES, ("any",)),
    np.log2: (FLOAT_NAMES, ("any",)),
    np.log10: (FLOAT_NAMES, ("any",)),
    np.sin: (FLOATING, ("moderate",)),
    np.cos: (FLOATING, ("moderate",)),
    np.tan: (FLOAT_NAMES, ("moderate",)),
    np.arcsin: (FLOAT_NAMES, ("any",)),
    np.arccos: (FLOAT_NAMES, ("any",)),
    np.arctan: (FLOAT_NAMES, ("any",)),
    np.sinh: (FLOAT_NAMES, ("moderate",)),
    np.cosh: (FLOAT_NAMES, ("moderate",)),
    np.tanh: (FLOATING, ("moderate",)),
    np.arcsinh: (FLOAT_NAMES, ("any",)),
    np.arccosh: (FLOAT_NAMES, ("any",)),
    np.arctanh: (FLOAT_NAMES, ("any",)),
    np.floor: (ALL_REAL, ("any",)),
    np.ceil: (ALL_REAL, ("any",)),
    np.trunc: (ALL_REAL, ("any",)),
    np.rint: (FLOAT_NAMES, ("any",)),
    np.isnan: (NUMERIC_NAMES, ("any",)),
    np.isinf: (NUMERIC_NAMES, ("any",)),
    np.isfinite: (NUMERIC_NAMES, ("any",)),
    np.signbit: (FLOAT_NAMES, ("any",)),
    np.reciprocal: (FLOATING, ("nonzero",)),
    np.invert: (INT_NAMES + ("bool",), ("any",)),
    np.logical_not: (REAL_NAMES + ("bool",), ("any",)),
    np.add: (NUMERIC_NAMES, ("any", "any")),
    np.subtract: (NUMERIC_NAMES, ("any", "any")),
    np.multiply: (NUMERIC_NAMES, ("small", "small")),
    np.divide: (FLOATING, ("moderate", "nonzero")),
    np.floor_divide: (REAL_NAMES, ("small", "nonzero")),
    np.remainder: (REAL_NAMES, ("small", "nonzero")),
    np.power: (REAL_NAMES, ("small", "shift")),
    np.maximum: (REAL_NAMES, ("any", "any")),
    np.minimum: (REAL_NAMES, ("any", "any")),
    np.arctan2: (FLOAT_NAMES, ("any", "any")),
    np.hypot: (FLOAT_NAMES, ("moderate", "moderate")),
    np.copysign: (FLOAT_NAMES, ("any", "any")),
    np.nextafter: (FLOAT_NAMES, ("any", "any")),
    np.logaddexp: (FLOAT_NAMES, ("moderate", "moderate")),
    np.equal: (NUMERIC_NAMES + ("bool",), ("any", "any")),
    np.not_equal: (NUMERIC_NAMES + ("bool",), ("any", "any")),
    np.less: (REAL_NAMES, ("any", "any")),
    np.less_equal: (REAL_NAMES, ("any", "any")),
    np.greater: (REAL_NAMES, ("any", "any")),
    np.greater_equal: (REAL_NAMES, ("any", "any")),
    np.logical_and: (REAL_NAMES + ("bool",), ("any", "any")),
    np.logical_or: (REAL_NAMES + ("bool",), ("any", "any")),
    np.logical_xor: (REAL_NAMES + ("bool",), ("any", "any")),
    np.bitwise_and: (INT_NAMES + ("bool",), ("any", "any")),
    np.bitwise_or: (INT_NAMES + ("bool",), ("any", "any")),
    np.bitwise_xor: (INT_NAMES + ("bool",), ("any", "any")),
    np.left_shift: (INT_NAMES, ("small", "shift")),
    np.right_shift: (INT_NAMES, ("any", "shift")),
}


# NumPy's and torch's kernels of the transcendental ufuncs differ by a few ulps (float32's vectorized ones by more):
# results within these of NumPy's, relative and (near zero) absolute, by the result's dtype; integer and bool
# results, and the correctly rounded ufuncs' (assert_same exact where a dtype is left out), stay exact.
RTOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}
ATOL = {dtype: rtol * 1e-3 for dtype, rtol in RTOL.items()}


def numpy_answer(func: Any, *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return func(*args, **kwargs)


def test_every_handled_ufunc_has_a_spec() -> None:
    assert set(SPECS) | {np.matmul, np.vecdot} == set(UFUNCS)
    assert set(handled_ufuncs()) == {f"numpy.{u.__name__}" for u in UFUNCS}


@pytest.mark.parametrize("ufunc", sorted(SPECS, key=lambda u: u.__name__), ids=lambda u: u.__name__)
@settings(max_examples=25)
@given(data=st.data())
def test_call_matches_numpy(ufunc, data) -> None:
    dtypes, domains = SPECS[ufunc]
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=ufunc.nin, max_dims=3, max_side=4))
    inputs = [
        data.draw(hnp.arrays(dtype, shape, elements=_elements(dtype, domain)), label=f"x{i}")
        for i, (shape, domain) in enumerate(zip(shapes.input_shapes, domains, strict=True))
    ]
    assert_same(ufunc(*map(from_numpy, inputs)), numpy_answer(ufunc, *inputs), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("ufunc", [np.sqrt, np.sin, np.divide, np.exp], ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", ["int8", "int64", "uint16", "bool"])
def test_integer_input_of_floating_ufuncs_is_the_default_float(ufunc, dtype) -> None:
    # the standard's default float, float64 on the CPU, for every integer width (NumPy picks float16 for int8)
    inputs = [np.arange(1, 5).astype(dtype)] * ufunc.nin
    ours = ufunc(*map(from_numpy, inputs))
    assert_same(ours, numpy_answer(ufunc, *(x.astype(np.float64) for x in inputs)), rtol=RTOL, atol=ATOL)


@settings(max_examples=40)
@given(data=st.data())
def test_same_kind_promotion_matches_numpy(data) -> None:
    kinds = [INT_NAMES, FLOAT_NAMES, COMPLEX_NAMES]
    family = data.draw(st.sampled_from(kinds))
    d1, d2 = (data.draw(st.sampled_from(family)) for _ in range(2))
    if {d1, d2} & {"uint64"} and {d1, d2} & set(SIGNED):
        return
    a, b = np.ones(3, dtype=d1), np.full(3, 2, dtype=d2)
    for ufunc in (np.add, np.multiply, np.maximum if family != COMPLEX_NAMES else np.subtract):
        assert_same(ufunc(from_numpy(a), from_numpy(b)), ufunc(a, b), rtol=RTOL, atol=ATOL)


def test_uint64_with_signed_integers_is_an_error() -> None:
    with pytest.raises(TypeError, match="uint64 and int64"):
        np.add(from_numpy(np.arange(3, dtype=np.uint64)), from_numpy(np.arange(3)))


@pytest.mark.parametrize(
    ("ufunc", "array", "scalar"),
    [
        (np.add, np.arange(3, dtype=np.int8), 5),
        (np.multiply, np.ones(3, dtype=np.float32), 2.5),
        (np.subtract, np.ones(3, dtype=np.uint16), 1),
        (np.add, np.ones(3, dtype=np.complex64), 1j),
        (np.maximum, np.ones(3, dtype=np.float32), np.float64(2.0)),
        (np.add, np.ones(3, dtype=np.int16), np.int32(3)),
        (np.less, np.arange(3, dtype=np.uint8), 1),
        (np.power, np.arange(3, dtype=np.float32), 2),
    ],
)
def test_scalars_promote_as_in_numpy_2(ufunc, array, scalar) -> None:
    assert_same(ufunc(from_numpy(array), scalar), ufunc(array, scalar), rtol=RTOL, atol=ATOL)
    assert_same(ufunc(scalar, from_numpy(array)), ufunc(scalar, array), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("ufunc", [np.logical_and, np.logical_or, np.logical_xor], ids=lambda u: u.__name__)
@pytest.mark.parametrize("scalar", [0, 2, 0.0, -1.5, True, False])
def test_logical_ufuncs_take_truth_values_of_python_scalars(ufunc, scalar) -> None:
    a = np.array([0.0, 1.0, -2.0, np.nan])
    assert_same(ufunc(from_numpy(a), scalar), ufunc(a, scalar))
    assert_same(ufunc(scalar, from_numpy(a)), ufunc(scalar, a))


def test_out_alone_brings_the_call_onto_neuron_arrays() -> None:
    """A NeuronArray only in out=: the inputs join out's device, and the result is written there."""
    out = xp.zeros((3,), dtype=xp.float64)
    assert np.add(np.arange(3.0), 1.0, out=out) is out
    assert_same(out, np.arange(3.0) + 1.0, rtol=RTOL, atol=ATOL)
    on_meta = xp.NeuronArray(torch.empty(3, dtype=torch.float64, device="meta"))
    assert np.multiply(np.ones(3), 2, out=on_meta) is on_meta


@pytest.mark.parametrize("dtype", INT_NAMES)
@pytest.mark.parametrize("ufunc", [np.floor_divide, np.remainder, np.mod], ids=lambda u: u.__name__)
def test_integer_division_by_zero_gives_zero_as_in_numpy(ufunc, dtype) -> None:
    info = np.iinfo(dtype)
    a = np.array([0, 1, 7, int(info.max), int(info.min)], dtype=dtype)
    b = np.array([0, 0, 2, 0, -1 if info.min else 0], dtype=dtype)  # INT_MIN // -1 wraps, as in NumPy
    assert_same(ufunc(from_numpy(a), from_numpy(b)), numpy_answer(ufunc, a, b))
    assert_same(ufunc(from_numpy(a), 0), numpy_answer(ufunc, a, 0))
    assert_same(ufunc(0, from_numpy(a)), numpy_answer(ufunc, 0, a))
    assert_same(ufunc(a, from_numpy(b)), numpy_answer(ufunc, a, b))  # an ndarray operand


@pytest.mark.parametrize("dtype", INT_NAMES)
@pytest.mark.parametrize(
    "ufunc", [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal], ids=lambda u: u.__name__
)
def test_comparisons_with_python_ints_beyond_the_dtype_match_numpy_2(ufunc, dtype) -> None:
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    a = np.array([lo, lo + 1, 0, hi - 1, hi], dtype=dtype)
    for v in (lo - 2**65, lo - 1, lo, hi, hi + 1, hi + 2**65):
        assert_same(ufunc(from_numpy(a), v), ufunc(a, v))
        assert_same(ufunc(v, from_numpy(a)), ufunc(v, a))
        # NumPy 2 answers exactly: the Python comparison of each element with v
        assert to_numpy(ufunc(from_numpy(a), v)).tolist() == [bool(ufunc(int(e), v)) for e in a]


def test_arithmetic_ufuncs_with_python_ints_beyond_the_dtype_overflow() -> None:
    for ufunc in (np.add, np.maximum, np.floor_divide):
        with pytest.raises(OverflowError, match="Python int -1 is out of range for uint8"):
            ufunc(from_numpy(np.arange(3, dtype=np.uint8)), -1)


@pytest.mark.parametrize(
    "ufunc", sorted((u for u in SPECS if u.nin == 2), key=lambda u: u.__name__), ids=lambda u: u.__name__
)
def test_incompatible_shapes_name_the_ufunc_and_both_shapes(ufunc) -> None:
    dtype = next(d for d in ("float64", "int64", "bool") if d in SPECS[ufunc][0])
    x, y = np.ones((2, 6), dtype), np.ones(5, dtype)
    message = re.escape(f"numpy.{ufunc.__name__}(): shapes (2, 6) and (5,) cannot be broadcast together")
    for a, b in ((from_numpy(x), from_numpy(y)), (from_numpy(x), y), (x, from_numpy(y))):
        with pytest.raises(ValueError, match=message):
            ufunc(a, b)


def test_mixed_numpy_and_neuron_inputs_give_neuron_arrays() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    for result in (
        np.add(from_numpy(a), b),
        np.add(a, from_numpy(b)),
        a * from_numpy(b),
        np.maximum([1.0, 5.0, 0.0], from_numpy(b)),
    ):
        assert isinstance(result, xp.NeuronArray)
    assert_same(np.add(a, from_numpy(b)), a + b, rtol=RTOL, atol=ATOL)
    assert_same(np.maximum([1.0, 5.0, 0.0], from_numpy(b)), np.maximum([1.0, 5.0, 0.0], b), rtol=RTOL, atol=ATOL)


def test_numpy_inputs_move_to_the_neuron_arrays_device() -> None:
    # torch's meta device stands in for an accelerator: shapes and dtypes only, no host data
    on_device = xp.NeuronArray(torch.empty(3, dtype=torch.float64, device="meta"))
    out = xp.NeuronArray(torch.empty(3, dtype=torch.float64, device="meta"))
    assert np.add(np.ones(3), on_device).device.type == "meta"
    assert np.multiply(on_device, np.float64(2.0), out=out) is out
    assert np.add.outer(np.ones(2), on_device).device.type == "meta"


# ---------------------------------------------------------------- gufuncs


@settings(max_examples=30)
@given(
    m=st.integers(1, 4),
    k=st.integers(1, 4),
    n=st.integers(1, 4),
    batch=st.lists(st.integers(1, 3), max_size=2),
    dtype=st.sampled_from(["float64", "complex128", "int64"]),
)
def test_matmul_and_vecdot_match_numpy(m, k, n, batch, dtype) -> None:
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = (rng.standard_normal((*batch, m, k)) * 3).astype(dtype)
    b = (rng.standard_normal((k, n)) * 3).astype(dtype)
    assert_same(np.matmul(from_numpy(a), from_numpy(b)), np.matmul(a, b), rtol=RTOL, atol=ATOL)
    assert_same(np.matmul(from_numpy(a), from_numpy(b[:, 0])), np.matmul(a, b[:, 0]), rtol=RTOL, atol=ATOL)
    assert_same(np.vecdot(from_numpy(a), from_numpy(a)), np.vecdot(a, a), rtol=RTOL, atol=ATOL)
    assert_same(np.vecdot(from_numpy(a), from_numpy(a), axis=0), np.vecdot(a, a, axis=0), rtol=RTOL, atol=ATOL)
    assert_same(from_numpy(a) @ b, a @ b, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------- reduce, accumulate, outer


@pytest.mark.parametrize("ufunc", sorted(REDUCE, key=lambda u: u.__name__), ids=lambda u: u.__name__)
@settings(max_examples=20)
@given(data=st.data())
def test_reduce_matches_numpy(ufunc, data) -> None:
    dtype = data.draw(st.sampled_from(REAL_NAMES + ("bool",)))
    a = data.draw(
        hnp.arrays(
            dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), elements=_elements(dtype, "small")
        )
    )
    axis = data.draw(
        st.sampled_from([None, 0, -1, (0, a.ndim - 1)]) | st.just(()) if a.ndim > 1 else st.sampled_from([None, 0, -1])
    )
    keepdims = data.draw(st.booleans())
    kwargs = {"axis": axis, "keepdims": keepdims}
    if ufunc in (np.maximum, np.minimum) and dtype == "bool":
        return  # the standard's max/min take numbers
    assert_same(ufunc.reduce(from_numpy(a), **kwargs), numpy_answer(ufunc.reduce, a, **kwargs), rtol=RTOL, atol=ATOL)
    assert_same(
        ufunc.reduce(from_numpy(a)), numpy_answer(ufunc.reduce, a), rtol=RTOL, atol=ATOL
    )  # NumPy's default axis is 0


def test_reduce_arguments() -> None:
    a = np.arange(1, 13, dtype=np.int8).reshape(3, 4)
    assert_same(
        np.add.reduce(from_numpy(a), axis=1, dtype=np.float64),
        np.add.reduce(a, axis=1, dtype=np.float64),
        rtol=RTOL,
        atol=ATOL,
    )
    assert_same(
        np.multiply.reduce(from_numpy(a), 0, None, None, False, 2),
        np.multiply.reduce(a, 0, None, None, False, 2),
        rtol=RTOL,
        atol=ATOL,
    )
    assert_same(
        np.maximum.reduce(from_numpy(a), axis=None, initial=100),
        np.maximum.reduce(a, axis=None, initial=100),
        rtol=RTOL,
        atol=ATOL,
    )
    assert_same(
        np.minimum.reduce(from_numpy(a[:0]), axis=0, initial=5),
        np.minimum.reduce(a[:0], axis=0, initial=5),
        rtol=RTOL,
        atol=ATOL,
    )
    assert_same(
        np.logical_and.reduce(from_numpy(a > 3), axis=1), np.logical_and.reduce(a > 3, axis=1), rtol=RTOL, atol=ATOL
    )
    assert_same(np.logical_or.reduce(from_numpy(a), axis=0), np.logical_or.reduce(a, axis=0), rtol=RTOL, atol=ATOL)
    with pytest.raises(TypeError, match="where="):
        np.add.reduce(from_numpy(a), where=from_numpy(a > 2))


@pytest.mark.parametrize("ufunc", sorted(ACCUMULATE, key=lambda u: u.__name__), ids=lambda u: u.__name__)
@settings(max_examples=20)
@given(data=st.data())
def test_accumulate_matches_numpy(ufunc, data) -> None:
    dtype = data.draw(st.sampled_from(NUMERIC_NAMES + ("bool",)))
    a = data.draw(
        hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=_elements(dtype, "small"))
    )
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    assert_same(
        ufunc.accumulate(from_numpy(a), axis=axis), numpy_answer(ufunc.accumulate, a, axis=axis), rtol=RTOL, atol=ATOL
    )
    assert_same(ufunc.accumulate(from_numpy(a)), numpy_answer(ufunc.accumulate, a), rtol=RTOL, atol=ATOL)
    if a.dtype.kind != "c":
        assert_same(
            ufunc.accumulate(from_numpy(a), dtype="float64"),
            numpy_answer(ufunc.accumulate, a, dtype="float64"),
            rtol=RTOL,
            atol=ATOL,
        )


@pytest.mark.parametrize(
    "ufunc",
    [np.add, np.multiply, np.subtract, np.maximum, np.less, np.power, np.arctan2, np.bitwise_and],
    ids=lambda u: u.__name__,
)
def test_outer_matches_numpy(ufunc) -> None:
    a, b = np.arange(1, 5).reshape(2, 2), np.arange(3)
    if ufunc is np.arctan2:
        a, b = a.astype(np.float64), b.astype(np.float64)
    assert_same(ufunc.outer(from_numpy(a), from_numpy(b)), ufunc.outer(a, b), rtol=RTOL, atol=ATOL)
    assert_same(ufunc.outer(from_numpy(a), b), ufunc.outer(a, b), rtol=RTOL, atol=ATOL)


def test_methods_numpy_itself_refuses_stay_refused() -> None:
    # methods and ufuncs outside the table run NumPy on the host view (tests/numpy_dispatch/test_registry.py);
    # what NumPy refuses for ndarrays it refuses here too
    a = from_numpy(np.arange(4.0))
    with pytest.raises(TypeError, match="not allowed|outer"):
        np.matmul.outer(a, a)


# ---------------------------------------------------------------- out=, dtype=, where=, refusals


def test_out_writes_into_neuron_arrays() -> None:
    a = np.arange(6.0).reshape(2, 3)
    x = from_numpy(a)
    out = xp.zeros((2, 3), dtype=xp.float64)
    assert np.add(x, 1.0, out=out) is out
    assert_same(out, a + 1, rtol=RTOL, atol=ATOL)
    assert np.multiply(x, 2, out=(out,)) is out
    assert_same(out, a * 2, rtol=RTOL, atol=ATOL)
    assert np.sqrt(x, out) is out
    assert_same(out, np.sqrt(a), rtol=RTOL, atol=ATOL)
    np.add(x, 1, out=x)  # in place
    assert_same(x, a + 1, rtol=RTOL, atol=ATOL)
    wide = xp.zeros((4, 2, 3), dtype=xp.float64)
    np.negative(x, out=wide)  # the result broadcasts to out, as in NumPy
    assert_same(wide, np.broadcast_to(-(a + 1), (4, 2, 3)), rtol=RTOL, atol=ATOL)
    f32 = xp.zeros((2, 3), dtype=xp.float32)
    np.add(x, x, out=f32)  # float64 -> float32 is same_kind
    assert_same(f32, (2 * (a + 1)).astype(np.float32), rtol=RTOL, atol=ATOL)
    reduced = xp.zeros((3,), dtype=xp.float64)
    assert np.add.reduce(x, out=reduced) is reduced
    assert_same(reduced, (a + 1).sum(axis=0), rtol=RTOL, atol=ATOL)
    ints = from_numpy(np.arange(3))
    with pytest.raises(TypeError, match="same_kind"):
        np.add(x, x, out=xp.zeros((2, 3), dtype=xp.int64))
    with pytest.raises(TypeError, match="out= must be a NeuronArray"):
        np.add(ints, ints, out=np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="broadcast"):
        np.add(x, x, out=xp.zeros((3,), dtype=xp.float64))


def test_out_alone_brings_numpy_inputs_to_the_device() -> None:
    out = xp.zeros((3,), dtype=xp.float64)
    assert np.add(np.arange(3.0), 1.0, out=out) is out
    assert_same(out, np.arange(3.0) + 1, rtol=RTOL, atol=ATOL)


def test_dtype_argument() -> None:
    a = np.arange(1, 5, dtype=np.int8)
    assert_same(
        np.add(from_numpy(a), from_numpy(a), dtype=np.float64), np.add(a, a, dtype=np.float64), rtol=RTOL, atol=ATOL
    )
    assert_same(np.sqrt(from_numpy(a), dtype="float64"), np.sqrt(a, dtype="float64"), rtol=RTOL, atol=ATOL)
    assert_same(np.multiply(from_numpy(a), 3, dtype=np.int32), np.multiply(a, 3, dtype=np.int32), rtol=RTOL, atol=ATOL)
    with pytest.raises(TypeError, match="same_kind"):
        np.add(from_numpy(a.astype(np.float64)), 1, dtype=np.int32)
    with pytest.raises(TypeError, match="float128 is not supported"):
        np.add(from_numpy(a), 1, dtype=np.longdouble)
    assert_same(
        np.add(from_numpy(a), 1, dtype=np.float16), np.add(a, 1, dtype=np.float16), rtol=RTOL, atol=ATOL
    )  # an extension dtype


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"where": np.array([True, False, True, True])}, "where="),
        ({"casting": "unsafe"}, "casting='unsafe'"),
        ({"order": "F"}, "order='F'"),
        ({"subok": False}, "subok=False"),
    ],
)
def test_unsupported_ufunc_arguments_raise_type_error_naming_them(kwargs, argument) -> None:
    a = from_numpy(np.arange(4.0))
    with pytest.raises(TypeError, match=re.escape(argument)):
        np.add(a, a, **kwargs)
    assert_same(np.add(a, a, where=True, casting="same_kind"), np.arange(4.0) * 2, rtol=RTOL, atol=ATOL)


def test_matmul_axes_are_unsupported() -> None:
    a = from_numpy(np.ones((2, 2)))
    with pytest.raises(TypeError, match="axes="):
        np.matmul(a, a, axes=[(0, 1), (0, 1), (0, 1)])


def test_integer_reciprocal_and_negative_powers_refused() -> None:
    ints = from_numpy(np.array([1, 2, 4]))
    with pytest.raises(TypeError, match="reciprocal"):
        np.reciprocal(ints)
    with pytest.raises(ValueError, match="negative integer powers"):
        np.power(ints, -1)
    with pytest.raises(ValueError, match="negative integer powers"):
        np.power(ints, from_numpy(np.array([1, -1, 2])))
    assert_same(np.power(ints, 2), np.array([1, 4, 16]), rtol=RTOL, atol=ATOL)
    assert_same(np.power(from_numpy(np.array([1.0, 2.0])), -1), np.array([1.0, 0.5]), rtol=RTOL, atol=ATOL)


def test_operators_with_ndarrays_dispatch() -> None:
    a, b = np.arange(3.0), from_numpy(np.arange(3.0))
    assert_same(a + b, a + a, rtol=RTOL, atol=ATOL)
    assert_same(a < b, a < a, rtol=RTOL, atol=ATOL)
    assert_same(a**b, a**a, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------- the call without keywords


def _outcome(call: Any) -> Any:
    """What a call gives: its result as NumPy values with its dtype, or its error's type and message."""
    try:
        result = call()
    except (TypeError, ValueError) as e:
        return type(e), str(e)
    assert isinstance(result, xp.NeuronArray)
    return str(result.dtype), to_numpy(result).tolist()


@pytest.mark.parametrize("ufunc", sorted(PLAIN, key=lambda u: u.__name__), ids=lambda u: u.__name__)
def test_a_call_without_keywords_is_the_general_call(ufunc) -> None:
    """An element-wise ufunc called with no keyword on NeuronArrays and Python scalars calls the namespace function
    at once (``ufuncs._PLAIN``); the same call with a loop control at its default (``casting="same_kind"``)
    takes the general way. Both give the same values, dtypes and errors: for arrays of one shape and of two that
    broadcast or do not, Python scalars on either side, and integer, boolean and floating arrays."""
    rng = np.random.default_rng(0)
    arrays = {
        "float32": rng.uniform(-3, 3, (2, 3)).astype(np.float32),
        "int32": rng.integers(-5, 6, (2, 3)),
        "bool": rng.random((2, 3)) < 0.5,
    }
    for x in arrays.values():
        operands = [(x,), (x, x), (x, x[0]), (x[:, :1], x), (x, x[:, :2]), (x, 2), (1.5, x), (x, True)]
        for ops in operands:
            if len(ops) != ufunc.nin:
                continue
            converted = [from_numpy(v) if isinstance(v, np.ndarray) else v for v in ops]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy's own warnings for the reference below
                plain = _outcome(lambda: ufunc(*converted))  # noqa: B023 (called at once)
                general = _outcome(lambda: ufunc(*converted, casting="same_kind"))  # noqa: B023
            assert plain[0] == general[0], (ops, plain, general)
            if plain[0] in (TypeError, ValueError):
                assert plain == general
            else:
                np.testing.assert_array_equal(np.asarray(plain[1]), np.asarray(general[1]))


# ---------------------------------------------------------------- ufuncs from outside the table

# SciPy's ufuncs themselves: with SCIPY_ARRAY_API=1 (set for the whole test run) scipy.special.erf is SciPy's
# array-API wrapper around them (test_scipy_ufuncs_without_the_array_api_switch covers the public names without it)
FOREIGN = [
    scipy.special._ufuncs.erf,
    scipy.special._ufuncs.gamma,
    scipy.special._ufuncs.expit,
    scipy.special._ufuncs.fresnel,
    np.cbrt,
    np.modf,
    np.frexp,
]


@pytest.mark.parametrize("ufunc", FOREIGN, ids=lambda u: u.__name__)
@given(st.sampled_from(FLOAT_NAMES).flatmap(lambda d: arrays(d, shapes(), elements=st.floats(-30, 30, width=32))))
def test_foreign_ufuncs_return_neuron_arrays_with_numpys_values(ufunc, a):
    from trn_backend.numpy_dispatch.ufuncs import UFUNCS

    assert ufunc not in UFUNCS
    ours, theirs = ufunc(from_numpy(a)), ufunc(a)
    if ufunc.nout == 1:
        ours, theirs = (ours,), (theirs,)
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        assert o.device == torch.device("cpu")
        assert_same(o, np.asarray(t))


def test_foreign_ufunc_methods_out_and_unholdable_results():
    a = np.linspace(0.1, 2.0, 6)
    x = from_numpy(a)
    assert_same(np.logaddexp2.reduce(x), np.asarray(np.logaddexp2.reduce(a)))
    out = from_numpy(np.zeros(6))
    assert scipy.special._ufuncs.erf(x, out=out) is out
    assert_same(out, scipy.special._ufuncs.erf(a))
    doubled = np.frompyfunc(lambda v: 2 * v, 1, 1)  # an object-dtype result
    with pytest.raises(TypeError, match="computed a object result, which a NeuronArray cannot hold"):
        doubled(x)


def test_foreign_ufuncs_on_arrays_off_the_host_are_refused_by_name(monkeypatch):
    from trn_backend.numpy_dispatch import _registry

    monkeypatch.setattr(_registry, "on_host", lambda array: False)  # as if x lived on an accelerator
    with pytest.raises(TypeError, match=r"^the ufunc fresnel is not supported on NeuronArray on device cpu"):
        scipy.special._ufuncs.fresnel(xp.asarray([1.0]))
    with pytest.raises(TypeError, match=r"^numpy.cbrt is not supported on NeuronArray on device cpu"):
        np.cbrt(xp.asarray([1.0]))


@pytest.mark.heavy
def test_scipy_ufuncs_without_the_array_api_switch():
    """Without SCIPY_ARRAY_API, scipy.special.erf is a NumPy ufunc: the result is a NeuronArray computed on the
    host (with it, SciPy's own array-API wrapper returns a NeuronArray too: the test above)."""
    program = (
        "import numpy as np, scipy.special, trn_backend as xp\n"
        "assert isinstance(scipy.special.erf, np.ufunc)\n"
        "x = xp.asarray(np.linspace(0.0, 2.0, 5))\n"
        "y = scipy.special.erf(x)\n"
        "assert type(y) is xp.NeuronArray and y.device == x.device, type(y)\n"
        "np.testing.assert_array_equal(np.asarray(y), scipy.special.erf(np.linspace(0.0, 2.0, 5)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    proc = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "ufunc", sorted((u for u in UFUNCS if u.nin == 1), key=lambda u: u.__name__), ids=lambda u: u.__name__
)
@pytest.mark.parametrize("shape", [(), (3,)])
def test_every_unary_ufunc_on_bool_answers_as_numpy(ufunc, shape):
    """NumPy computes its unary ufuncs on bool as on 0 and 1 (abs, floor, isnan, square, ...), where the namespace
    (numeric dtypes only) refuses bool: dispatch answers as NumPy, with NumPy's dtype where the result is bool or
    integer, and in the default floating dtype where NumPy's loop gives float16 (docs/numpy.md). reciprocal of
    integers, bool included, is refused (NumPy's truncates)."""
    host = np.array([True, False, True]) if shape else np.array(True)
    x = xp.asarray(host)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = ufunc(host)
        except TypeError:
            want = None
    if want is None or ufunc is np.reciprocal:
        with pytest.raises(TypeError):
            ufunc(x)
        return
    got = ufunc(x)
    assert isinstance(got, xp.NeuronArray) and got.shape == np.shape(want)
    if np.asarray(want).dtype.kind in "biu":
        assert_same(got, np.asarray(want))
    else:
        assert got.dtype == xp.float64
        # the same values, to float16's rounding of NumPy's answer
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(want, dtype=np.float64), rtol=2 * float(np.finfo(np.float16).eps)
        )
