"""NumPy's joining, splitting, tiling, adding and removing elements and padding (trn_backend/numpy_dispatch/joins.py)
against NumPy on the same data: the table's cases, the split family, and pad, append, insert and delete
(hypothesis draws the index-heavy cases)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.numpy_dispatch.calls import (
    T3,
    Case,
    I,
    M,
    N,
    V,
    W,
    _apply,
    _neuron,
    _numpy_tree,
    agree,
    assert_on_device,
    nd,
    raises_like_numpy,
    run_both,
)
from tests.support import assert_same_results, from_numpy, to_numpy

rng = np.random.default_rng(7)


CASES = [
    Case(np.concatenate, ([M, N.T[:2]],)),
    Case(np.concatenate, ([M, I],), {"axis": None}),
    Case(np.concatenate, ([I, I],), {"axis": 1, "dtype": "float32"}),
    Case(np.stack, ([V, W],), {"axis": 1}),
    Case(np.vstack, ([V, W],)),
    Case(np.vstack, ([M, I],)),
    Case(np.hstack, ([V, W],)),
    Case(np.hstack, ([M, I],)),
    Case(np.dstack, ([M, M],)),
    Case(np.column_stack, ([V, W],)),
    Case(np.split, (T3, 2)),
    Case(np.split, (M, [1, 3]), {"axis": 1}),
    Case(np.array_split, (np.arange(7), 3)),
    Case(np.hsplit, (M, 2)),
    Case(np.vsplit, (M, [1])),
    Case(np.dsplit, (T3, [1, 3])),
    Case(np.tile, (M, 2)),
    Case(np.tile, (V, (2, 1, 2))),
    Case(np.repeat, (M, 2)),
    Case(np.repeat, (M, [1, 0, 2]), {"axis": 0}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, atol=case.atol)


@settings(max_examples=40)
@given(n=st.integers(0, 9), sections=st.integers(1, 4), cuts=st.lists(st.integers(-10, 10), max_size=3))
def test_split_family_matches_numpy(n, sections, cuts) -> None:
    a = np.arange(2 * n).reshape(2, n)
    assert_same_results(*run_both(np.array_split, a, sections, axis=1))
    assert_same_results(*run_both(np.split, a, cuts, axis=1))
    if n % sections == 0:
        assert_same_results(*run_both(np.split, a, sections, axis=1))
        assert_same_results(*run_both(np.hsplit, a, sections))
    else:
        with pytest.raises(ValueError, match="equal sections"):
            np.split(from_numpy(a), sections, axis=1)


# ---------------------------------------------------------------- pad

PAD_DTYPES = ["bool", "int8", "uint8", "uint16", "int64", "float32", "float64", "complex64"]


def _pad_input(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    a = rng.integers(-20, 60, shape)
    if dtype == "bool":
        return a > 20
    if np.dtype(dtype).kind == "c":
        return (a + 1j * a[..., ::-1]).astype(dtype)
    if np.dtype(dtype).kind == "u":
        return np.abs(a).astype(dtype)
    return a.astype(dtype)


@pytest.mark.parametrize(
    "pad_width",
    [
        2,
        (1,),
        (1, 3),
        ((1, 3),),
        ((2, 0), (1, 4)),
        [[1], [2]],
        np.array([[0, 3], [2, 1]]),
        {1: 2},
        {0: (3, 0), -1: 1},
        {},
    ],
)
def test_pad_width_spellings(pad_width: Any) -> None:
    agree(np.pad, I, pad_width, constant_values=-3)
    agree(np.pad, I, pad_width, mode="edge")


MODE_CASES = [
    ("constant", {}),
    ("constant", {"constant_values": 7}),
    ("constant", {"constant_values": ((1, 2), (3, 4))}),
    ("constant", {"constant_values": (-1.7, 2.6)}),
    ("edge", {}),
    ("wrap", {}),
    ("reflect", {}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {}),
    ("symmetric", {"reflect_type": "odd"}),
    ("linear_ramp", {}),
    ("linear_ramp", {"end_values": (5, -4)}),
    ("linear_ramp", {"end_values": ((1, 2), (3, 4))}),
    ("maximum", {}),
    ("minimum", {"stat_length": 2}),
    ("mean", {}),
    ("mean", {"stat_length": ((1, 2), (3, 1))}),
    ("median", {}),
    ("median", {"stat_length": 2.4}),
    ("maximum", {"stat_length": None}),
]


@pytest.mark.parametrize("dtype", PAD_DTYPES)
@pytest.mark.parametrize(("mode", "options"), MODE_CASES)
def test_pad_modes(mode: str, options: dict[str, Any], dtype: str) -> None:
    array = _pad_input(dtype, (3, 4))
    if np.dtype(dtype).kind == "u" and options.get("constant_values") == (-1.7, 2.6):
        # -1 (the integer part of -1.7) is beyond an unsigned dtype: refused, as NumPy refuses it for int8 (for
        # unsigned dtypes NumPy wraps it to 2**bits - 1)
        with pytest.raises(OverflowError, match=f"numpy.pad.*-1 is out of range for {dtype}"):
            np.pad(nd(array), ((2, 7), (5, 1)), mode, **options)
        return
    agree(np.pad, array, ((2, 7), (5, 1)), mode, rtol=2e-6, **options)


def test_pad_empty_mode_gives_shape_and_dtype() -> None:
    ours = np.pad(nd(M), ((1, 2), (0, 3)), mode="empty")
    assert ours.shape == (6, 7) and to_numpy(ours).dtype == np.float64
    np.testing.assert_array_equal(to_numpy(ours)[1:4, :4], M)


def test_pad_of_empty_arrays() -> None:
    agree(np.pad, np.zeros((0, 3)), ((0, 0), (1, 2)), mode="edge")
    agree(np.pad, np.zeros((0, 3)), 2)
    raises_like_numpy(ValueError, np.pad, np.zeros((0, 3)), 1, mode="reflect", match="empty axis 0")


def test_pad_singleton_axis_reflects_as_edge() -> None:
    agree(np.pad, np.array([[1.0, 2.0, 4.0]]), 3, mode="reflect", reflect_type="odd")
    agree(np.pad, np.array([5]), (4, 2), mode="symmetric")


@settings(max_examples=50)
@given(
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    st.data(),
    st.sampled_from([m for m, _ in MODE_CASES]),
    st.sampled_from(["even", "odd"]),
    st.sampled_from(["int16", "float64"]),
)
def test_pad_matches_numpy(shape: tuple[int, ...], data: Any, mode: str, reflect_type: str, dtype: str) -> None:
    widths = data.draw(
        st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=len(shape), max_size=len(shape))
    )
    options: dict[str, Any] = {}
    if mode in ("reflect", "symmetric"):
        options["reflect_type"] = reflect_type
    elif mode in ("maximum", "minimum", "mean", "median"):
        options["stat_length"] = data.draw(st.one_of(st.none(), st.integers(1, 5)))
    # the mean, median and linear_ramp modes compute in another order than NumPy's
    agree(np.pad, _pad_input(dtype, shape), widths, mode, rtol=1e-12, **options)


def test_pad_errors() -> None:
    raises_like_numpy(TypeError, np.pad, M, 1.5, match="integral")
    raises_like_numpy(ValueError, np.pad, M, -1, match="negative")
    raises_like_numpy(ValueError, np.pad, M, ((1, 2, 3),), match="pair")
    raises_like_numpy(ValueError, np.pad, M, 1, mode="nearest", match="not supported")
    raises_like_numpy(ValueError, np.pad, M, 1, mode="edge", constant_values=3, match="unsupported keyword")
    raises_like_numpy(ValueError, np.pad, M, 1, mode="maximum", stat_length=0, match="stat_length of 0")
    with pytest.raises(TypeError, match="callable mode"):
        np.pad(nd(M), 1, mode=lambda vector, width, axis, kwargs: None)


# ---------------------------------------------------------------- append, insert, delete


@pytest.mark.parametrize(
    "case",
    [
        ((M, 5.0), {}),
        ((I, M), {}),
        ((I.astype(np.float32), np.array([1, 2])), {}),
        ((I, I[:1]), {"axis": 0}),
        ((I.astype(np.int8), np.array([[1], [2], [3]], dtype=np.int16)), {"axis": 1}),
        ((np.array(2), [3, 4]), {}),
    ],
)
def test_append(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.append, *args, **kwargs)


@pytest.mark.parametrize(
    "case",
    [
        ((np.arange(5), 2, 9), {}),
        ((np.arange(5), -1, [7, 8]), {}),
        ((np.arange(5), 5, 1.9), {}),
        ((I, 1, 0), {}),
        ((I, 1, [10, 20, 30]), {"axis": 1}),
        ((I, [1], [[10], [20], [30]]), {"axis": 1}),
        ((I, 0, [1, 2, 3, 4]), {"axis": 0}),
        ((I, [2, 0, 2], [7, 8, 9]), {"axis": 1}),
        ((I, [2, 0, 2], np.array([[7], [8], [9]]).T), {"axis": 1}),
        ((I, slice(1, 3), 5), {"axis": 0}),
        ((I, slice(None, None, -2), [5, 6]), {"axis": 1}),
        ((np.arange(4), np.array([True, False, True]), 9), {}),
        ((np.arange(4), [], 3), {}),
        ((I.astype(np.uint8), np.array(2), [1, 2, 3]), {"axis": 1}),
    ],
)
def test_insert(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.insert, *args, **kwargs)


@settings(max_examples=50)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), st.data())
def test_insert_matches_numpy(shape: tuple[int, ...], data: Any) -> None:
    arr = rng.integers(-9, 9, shape).astype(np.int32)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = arr.size if axis is None else shape[axis]
    obj = data.draw(
        st.one_of(
            st.integers(-n, n),
            st.lists(st.integers(-n, n), max_size=4),
            st.builds(slice, st.integers(-5, 5), st.integers(-5, 5), st.sampled_from([1, 2, -1])),
        )
    )
    count = len(range(*obj.indices(n))) if isinstance(obj, slice) else None if isinstance(obj, int) else len(obj)
    values = rng.integers(-99, 99, 1 if count is None else max(count, 1)).astype(np.float64)
    if count not in (None, 1) and count != len(values):
        values = values[:1]
    try:
        np.insert(arr, obj, values, axis=axis)
    except ValueError:  # a drawn case NumPy refuses (values that do not fit an empty insertion): so must we
        with pytest.raises(ValueError):
            np.insert(from_numpy(arr), obj, from_numpy(values), axis=axis)
        return
    agree(np.insert, arr, obj, values, axis=axis)


@pytest.mark.parametrize(
    "case",
    [
        ((np.arange(6), 2), {}),
        ((np.arange(6), -1), {}),
        ((I, 1), {}),
        ((I, 1), {"axis": 0}),
        ((I, [0, 2, -1]), {"axis": 1}),
        ((I, [[0], [2]]), {"axis": 1}),
        ((I, np.array([True, False, True])), {"axis": 0}),
        ((I, slice(None, None, 2)), {"axis": 1}),
        ((I, slice(3, 0, -2)), {"axis": 1}),
        ((I, slice(5, 9)), {"axis": 1}),
        ((I, []), {"axis": 0}),
        ((I, np.array([1])), {"axis": 1}),
        ((I.astype(np.uint64), [0, 0, 3]), {"axis": 1}),
    ],
)
def test_delete(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    agree(np.delete, *args, **kwargs)


@settings(max_examples=50)
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_delete_matches_numpy(shape: tuple[int, ...], data: Any) -> None:
    arr = rng.standard_normal(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = arr.size if axis is None else shape[axis]
    obj = data.draw(
        st.one_of(
            st.integers(-n, n - 1),
            st.lists(st.integers(-n, n - 1), max_size=5),
            st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
            st.builds(slice, st.integers(-5, 5), st.integers(-5, 5), st.sampled_from([1, 3, -1])),
        )
    )
    agree(np.delete, arr, obj, axis=axis)


def test_delete_with_a_device_mask_keeps_the_mask_on_its_device() -> None:
    mask = xp.asarray(np.array([True, False, False, True]))
    ours = np.delete(nd(I), mask, axis=1)
    assert_on_device(ours)
    assert_same_results(ours, np.delete(I, [0, 3], axis=1))


def test_insert_and_delete_errors() -> None:
    raises_like_numpy(IndexError, np.insert, np.arange(3), 4, 1, match="out of bounds")
    raises_like_numpy(ValueError, np.insert, np.arange(3), [[1]], 1, match="1-d")
    raises_like_numpy(ValueError, np.insert, np.arange(3), [0, 1], [1, 2, 3], match="broadcast")
    raises_like_numpy(IndexError, np.delete, np.arange(3), 3, match="out of bounds")
    raises_like_numpy(IndexError, np.delete, np.arange(3), [0, 5], match="out of bounds")
    raises_like_numpy(ValueError, np.delete, np.arange(3), np.array([True, False]), match="axis length 3")
    raises_like_numpy(IndexError, np.delete, np.arange(3), np.array([0.0]), match="integers")
    raises_like_numpy(ValueError, np.delete, I, 0, axis=2)
