"""Aliasing against NumPy 2: element reads are copies (NumPy's scalars), reads with slices are views, and views
with negative steps are views too: writes through them land in the base, and they read what the base holds at
the time of the read. Each property runs the same operations on a NeuronArray and on a NumPy copy of it."""

from __future__ import annotations

import copy
import math
import pickle
import random
import re

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.array.test_indexing import _slices, numpy_keys, spelled
from tests.support import assert_same, from_numpy, to_numpy

DTYPES = ("int64", "uint32", "float32", "bool")


def _distinct(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    values = np.arange(math.prod(shape)).reshape(shape)
    return (values % 3 == 1) if dtype == "bool" else values.astype(dtype)


SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


# ---------------------------------------------------------------- element reads are copies


@st.composite
def element_keys(draw, shape: tuple[int, ...]) -> tuple:
    """An integer for every axis, as a Python int, a NumPy integer or a 0-d integer NeuronArray."""
    key = []
    for size in shape:
        i = draw(st.integers(-size, size - 1))
        spell = draw(st.sampled_from([int, np.int64, xp.asarray] + ([np.uint8] if i >= 0 else [])))
        key.append(spell(i))
    return key[0] if len(key) == 1 and draw(st.booleans()) else tuple(key)


@given(data=st.data())
def test_element_reads_are_copies_and_ellipsis_reads_are_views(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    a = _distinct(data.draw(SHAPES), dtype)
    x = from_numpy(a.copy())
    source = data.draw(st.sampled_from(["x", "x reversed"]))
    if source == "x reversed":  # elements of a view with negative steps
        a, x = a[::-1], x[::-1]
    key = data.draw(element_keys(a.shape))
    numpy_key = tuple(int(k) for k in key) if isinstance(key, tuple) else (int(key),)
    element, expected = x[key], a[numpy_key]
    element_view, expected_view = x[(Ellipsis, *numpy_key)], a[(Ellipsis, *numpy_key)]
    assert element.shape == () and element_view.shape == ()
    x[key] = a[numpy_key] = not expected if dtype == "bool" else 100
    assert_same(x, a)
    assert_same(element, np.asarray(expected))  # NumPy's scalar kept the old value
    assert_same(element_view, expected_view)  # NumPy's 0-d view sees the write


@given(data=st.data())
def test_swaps_shuffles_and_iteration_match_numpy(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    a = _distinct((data.draw(st.integers(1, 8)),), dtype)
    x = from_numpy(a.copy())
    i, j = data.draw(st.integers(0, a.size - 1)), data.draw(st.integers(-a.size, a.size - 1))
    x[i], x[j] = x[j], x[i]
    a[i], a[j] = a[j], a[i]
    assert_same(x, a)
    seed = data.draw(st.integers(0, 2**16))
    random.Random(seed).shuffle(x)
    random.Random(seed).shuffle(a)
    assert_same(x, a)
    items, expected = list(x), list(a)
    a[...] = a[::-1].copy()
    x[...] = from_numpy(a)
    for item, want in zip(items, expected, strict=True):
        assert_same(item, np.asarray(want))


def test_element_reads_of_sharded_arrays_are_copies():
    td = pytest.importorskip("trn_backend.distributed")
    from tests.distributed_support import spmd

    def body(rank: int) -> list:
        x = td.replicate(xp.asarray(np.arange(6.0)))
        x[0], x[4] = x[4], x[0]
        return np.asarray(x).tolist()

    assert spmd(2, body)[0] == [4.0, 1.0, 2.0, 3.0, 0.0, 5.0]


# ---------------------------------------------------------------- views, negative steps included


@st.composite
def view_steps(draw, shape: tuple[int, ...]):
    """One way to take a view of an array of ``shape``: a basic key (ints, slices with any step, None, an
    Ellipsis), or a transpose."""
    if len(shape) >= 2 and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["T", "mT"] if len(shape) == 2 else ["mT"]))
    parts = [
        draw(st.integers(-size, size - 1)) if size and draw(st.integers(0, 3)) == 0 else draw(_slices(size))
        for size in shape
    ]
    if draw(st.booleans()):
        i = draw(st.integers(0, len(parts)))
        parts[i : draw(st.integers(i, len(parts)))] = [Ellipsis]
    for _ in range(draw(st.integers(0, 1))):
        parts.insert(draw(st.integers(0, len(parts))), None)
    return tuple(parts)


def _view(x, step):
    return getattr(x, step) if isinstance(step, str) else x[step]


def _views(data, x, a) -> list:
    """A chain of one to three views of x, each of the one before, with NumPy's views of a alongside (a key
    that reads one element, a NumPy scalar, is skipped)."""
    views = [(x[...], a[...])]
    for _ in range(data.draw(st.integers(1, 3))):
        step = data.draw(view_steps(a.shape))
        if isinstance(_view(a, step), np.ndarray):
            x, a = _view(x, step), _view(a, step)
            views.append((x, a))
    return views


def _check(x, a, views) -> None:
    assert_same(x, a)
    for v, b in views:
        assert v.shape == b.shape
        assert_same(v, b)


@given(data=st.data())
def test_writes_through_views_land_in_the_base(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    a = _distinct(data.draw(SHAPES), dtype)
    x = from_numpy(a.copy())
    views = _views(data, x, a)
    v, b = views[-1]
    how = data.draw(
        st.sampled_from(
            [
                "v[key] = scalar",
                "v[key] = array",
                "v += 1",
                "v ^= v[::-1]",
                "numpy.add(..., out=v)",
                "numpy.negative(v, out=v)",
                "numpy.bitwise_xor(out=v)",
            ]
        )
    )
    if how.startswith("v[key]"):
        key = data.draw(numpy_keys(b.shape, unique=True))
        positions = np.arange(b.size).reshape(b.shape)[key]
        if np.unique(positions).size == positions.size:  # NumPy leaves the order of repeated writes open
            value = True if dtype == "bool" else 99
            if how == "v[key] = array":
                value = _distinct(b[key].shape, dtype)[..., ::-1] if b[key].ndim else value
                value = ~value if dtype == "bool" else value + 50
            v[data.draw(spelled(key))] = from_numpy(value) if isinstance(value, np.ndarray) else value
            b[key] = value
    elif how == "v += 1" and dtype != "bool":
        v += 1
        b += 1
    elif how == "v ^= v[::-1]" and b.ndim and dtype != "float32":
        v ^= v[::-1]  # an operand that overlaps v, reversed: NumPy reads it whole first
        b ^= b[::-1]
    elif how == "numpy.add(..., out=v)" and dtype != "bool":
        other = _distinct(b.shape, dtype)
        np.add(from_numpy(other), from_numpy(other), out=v)
        np.add(other, other, out=b)
    elif how == "numpy.negative(v, out=v)" and dtype not in ("bool", "uint32"):
        np.negative(v, out=v)
        np.negative(b, out=b)
    elif how == "numpy.bitwise_xor(out=v)" and dtype != "float32":
        np.bitwise_xor(v, True if dtype == "bool" else 5, out=v)  # not in the table: NumPy on the host views
        np.bitwise_xor(b, True if dtype == "bool" else 5, out=b)
    _check(x, a, views)


@given(data=st.data())
def test_views_read_later_writes_into_the_base(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    a = _distinct(data.draw(SHAPES), dtype)
    x = from_numpy(a.copy())
    views = _views(data, x, a)
    key = data.draw(numpy_keys(a.shape, unique=True))
    x[data.draw(spelled(key))] = a[key] = not a.flat[0] if dtype == "bool" else 77
    _check(x, a, views)
    if dtype != "bool":
        x += 1
        a += 1
        _check(x, a, views)


@given(data=st.data())
def test_reads_of_views_with_negative_steps_match_numpy(data):
    a = _distinct(data.draw(SHAPES), "int32")
    x = from_numpy(a)
    v, b = _views(data, x, a)[-1]
    key = data.draw(numpy_keys(b.shape, scalar_bools=(True, False)))
    try:
        expected = b[key]
    except IndexError:
        with pytest.raises(IndexError):
            v[data.draw(spelled(key))]
        return
    assert_same(v[data.draw(spelled(key))], expected)


def test_negative_step_views_in_numpy_and_dlpack():
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    y = x[:, ::-1]
    h = np.asarray(y)  # NumPy's own view with a negative stride
    h[0, 0] = -1.0
    assert to_numpy(x)[0, 2] == -1.0
    assert np.shares_memory(h, np.asarray(x))
    assert torch.equal(torch.from_dlpack(y), torch.tensor([[-1.0, 1.0, 0.0], [5.0, 4.0, 3.0]], dtype=torch.float64))
    with pytest.raises(BufferError, match="negative steps"):
        y.__dlpack__(copy=False)


@pytest.mark.parametrize(
    "duplicate", [copy.copy, copy.deepcopy, lambda v: pickle.loads(pickle.dumps(v))], ids=["copy", "deepcopy", "pickle"]
)
def test_copies_of_reversed_views_are_independent_arrays(duplicate):
    x = xp.asarray(np.arange(4.0))
    c = duplicate(x[::-1])
    c[0] = 9.0
    assert_same(c, np.array([9.0, 2.0, 1.0, 0.0]))
    assert_same(x, np.arange(4.0))


def test_out_of_bounds_indices_of_reversed_views_name_the_index_given():
    y = xp.asarray(np.arange(5))[::-1]
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        y[5]
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        y[xp.asarray([0, -6])] = 1


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda m: m.__setitem__(0, 1.0), id="x[key] = value"),
        pytest.param(lambda m: m.__iadd__(1.0), id="in-place add"),
        pytest.param(lambda m: np.add(1.0, 1.0, out=m), id="numpy.add(out=...)"),
    ],
)
def test_writes_into_copies_of_reversed_views_raise(write, request):
    """A function that NumPy answers with a view of a view with negative steps, and that cannot view it here
    (unstack), returns a copy, which refuses writes rather than losing them."""
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    m = xp.unstack(x[:, ::-1])[0]
    with pytest.raises(ValueError, match=re.escape(request.node.callspec.id) + ".*negative steps.*copy=True"):
        write(m)
    assert_same(x, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda m: m.__setitem__(0, 1.0), id="x[key] = value"),
        pytest.param(lambda m: m.__iadd__(1.0), id="in-place add"),
        pytest.param(lambda m: np.add(1.0, 1.0, out=m), id="numpy.add(out=...)"),
    ],
)
def test_writes_into_reshaped_reversed_views_land_as_in_numpy(write):
    """reshape of a view with negative steps is NumPy's view where NumPy makes one: writes go through."""
    x, n = xp.asarray(np.arange(6.0)), np.arange(6.0)
    write(xp.reshape(x[::-1], (2, 3)))
    write(np.reshape(n[::-1], (2, 3)))
    assert_same(x, n)
