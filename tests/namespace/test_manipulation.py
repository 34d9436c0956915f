"""Manipulation functions against NumPy on every dtype, plus their error messages."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import DTYPE_NAMES, arrays, assert_same, from_numpy, shapes, to_numpy

DT = {name: getattr(xp, name) for name in DTYPE_NAMES}
names = st.sampled_from(DTYPE_NAMES)


@st.composite
def array_and_axis(draw, min_dims=1):
    name = draw(names)
    a = draw(arrays(name, shapes(min_dims=min_dims)))
    axis = draw(st.integers(-a.ndim, a.ndim - 1)) if a.ndim else 0
    return a, axis


# ---------------------------------------------------------------- broadcasting


@settings(max_examples=30)
@given(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=4))
def test_broadcast_shapes_and_arrays(bshapes):
    assert xp.broadcast_shapes(*bshapes.input_shapes) == np.broadcast_shapes(*bshapes.input_shapes)
    arrs = [np.arange(int(np.prod(s)), dtype=np.uint32).reshape(s) for s in bshapes.input_shapes]
    out = xp.broadcast_arrays(*(from_numpy(a) for a in arrs))
    assert isinstance(out, tuple)
    for o, e in zip(out, np.broadcast_arrays(*arrs), strict=True):
        assert_same(o, e)


@settings(max_examples=60)
@given(st.lists(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3), min_size=2, max_size=3))
def test_broadcast_checks_agree_with_numpy_on_any_shapes(shape_list):
    """The shared check (broadcast_shapes, broadcast_arrays and every element-wise function) accepts exactly the
    shapes NumPy accepts; incompatible ones are a ValueError naming the function, never torch's RuntimeError."""
    try:
        expected = np.broadcast_shapes(*shape_list)
    except ValueError:
        expected = None
    ones = [xp.ones(s) for s in shape_list]
    if expected is None:
        with pytest.raises(ValueError, match=r"broadcast_shapes\(\): shapes .* cannot be broadcast together"):
            xp.broadcast_shapes(*shape_list)
        with pytest.raises(ValueError, match=r"broadcast_arrays\(\): shapes"):
            xp.broadcast_arrays(*ones)
    else:
        assert xp.broadcast_shapes(*shape_list) == expected
        assert all(o.shape == expected for o in xp.broadcast_arrays(*ones))
    first, second = shape_list[:2]
    if _broadcasts(first, second):
        assert xp.add(ones[0], ones[1]).shape == np.broadcast_shapes(first, second)
    else:
        with pytest.raises(ValueError, match=r"add\(\): shapes .* cannot be broadcast together"):
            xp.add(ones[0], ones[1])


def _broadcasts(*shape_list) -> bool:
    try:
        np.broadcast_shapes(*shape_list)
    except ValueError:
        return False
    return True


def test_broadcast_errors_are_value_errors():
    assert xp.broadcast_shapes() == ()
    with pytest.raises(ValueError, match=r"broadcast_shapes\(\): shapes \(2, 3\) and \(4,\) cannot"):
        xp.broadcast_shapes((2, 3), (4,))
    with pytest.raises(ValueError, match=r"broadcast_to\(\).*shape \(3,\) to \(4,\)"):
        xp.broadcast_to(xp.ones(3), (4,))
    with pytest.raises(ValueError, match=r"shape \(1,\) to \(\)"):
        xp.broadcast_to(xp.ones(1), ())
    with pytest.raises(ValueError, match="broadcast_arrays"):
        xp.broadcast_arrays(xp.ones(2), xp.ones(3))


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_broadcast_to(name):
    a = np.arange(3).astype(name).reshape(3, 1)
    assert_same(xp.broadcast_to(from_numpy(a), (2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))


# ---------------------------------------------------------------- joining


@settings(max_examples=40)
@given(names, names, st.data())
def test_concat_and_stack_promote(n1, n2, data):
    try:
        expected_dtype = np.result_type(np.dtype(n1), np.dtype(n2)) if n1 != n2 else np.dtype(n1)
        dtype = xp.result_type(DT[n1], DT[n2])
    except TypeError:
        return  # uint64 with a signed integer has no common dtype
    shape = data.draw(shapes(min_dims=1))
    a = data.draw(arrays(n1, shape))
    b = data.draw(arrays(n2, shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    name = {v: k for k, v in DT.items()}[dtype]
    kinds = {np.dtype(n1).kind, np.dtype(n2).kind}
    if kinds <= {"i", "u"} or kinds <= {"f", "c"} or kinds == {"b"}:  # NumPy's promotion is the standard's
        assert np.dtype(name) == expected_dtype
    a_, b_ = a.astype(name), b.astype(name)
    assert_same(xp.concat([from_numpy(a), from_numpy(b)], axis=axis), np.concatenate([a_, b_], axis=axis))
    assert_same(xp.concat((from_numpy(a), from_numpy(b)), axis=None), np.concatenate([a_, b_], axis=None))
    assert_same(xp.stack([from_numpy(a), from_numpy(b)], axis=axis), np.stack([a_, b_], axis=axis))


def test_concat_and_stack_errors():
    with pytest.raises(ValueError, match="at least one array"):
        xp.concat([])
    with pytest.raises(ValueError, match=r"concat\(\): shapes \(2, 3\) and \(2, 4\) differ outside axis 0"):
        xp.concat([xp.ones((2, 3)), xp.ones((2, 4))])
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        xp.concat([xp.ones((2, 3))], axis=2)
    with pytest.raises(ValueError, match=r"stack\(\).*\(2,\) and \(3,\)"):
        xp.stack([xp.ones(2), xp.ones(3)])
    with pytest.raises(TypeError, match="tuple or list"):
        xp.stack(xp.ones(2))
    assert_same(xp.concat([xp.asarray(1), xp.asarray([2, 3])], axis=None), np.array([1, 2, 3]))


@settings(max_examples=30)
@given(array_and_axis())
def test_unstack(case):
    a, axis = case
    out = xp.unstack(from_numpy(a), axis=axis)
    assert isinstance(out, tuple) and len(out) == a.shape[axis]
    for o, e in zip(out, np.moveaxis(a, axis, 0), strict=True):
        assert_same(o, e)


# ---------------------------------------------------------------- shapes


@settings(max_examples=40)
@given(names, st.data())
def test_reshape(name, data):
    a = data.draw(arrays(name, shapes()))
    target = data.draw(st.permutations(a.shape)) if a.ndim else ()
    target = tuple(target)
    if target and a.size:
        target = (-1,) + target[1:]
    x = from_numpy(a)
    expected = a.reshape(target)
    assert_same(xp.reshape(x, target), expected)
    copied = xp.reshape(x, target, copy=True)
    assert_same(copied, expected)
    assert not np.shares_memory(to_numpy(copied), to_numpy(x)) or a.size == 0


def test_reshape_copy_false_and_errors():
    x = xp.permute_dims(xp.reshape(xp.arange(6), (2, 3)), (1, 0))
    with pytest.raises(ValueError, match=r"reshape\(copy=False\).*shape \(3, 2\)"):
        xp.reshape(x, (6,), copy=False)
    assert_same(xp.reshape(x, (6,)), np.arange(6).reshape(2, 3).T.reshape(6))
    y = xp.arange(6)
    assert np.shares_memory(to_numpy(xp.reshape(y, (2, 3), copy=False)), to_numpy(y))
    with pytest.raises(ValueError, match=r"shape \(6,\) \(size 6\) into shape \(4, -1\)"):
        xp.reshape(y, (4, -1))
    with pytest.raises(ValueError, match="more than one -1"):
        xp.reshape(y, (-1, -1))
    with pytest.raises(ValueError, match="into shape"):
        xp.reshape(xp.ones((0, 2)), (0, -1))
    with pytest.raises(ValueError, match="at least -1"):
        xp.reshape(y, (-2, -3))


@settings(max_examples=30)
@given(array_and_axis(min_dims=0), st.integers(1, 2), st.data())
def test_expand_dims_and_squeeze(case, count, data):
    a, _ = case
    m = a.ndim + count
    axes = tuple(data.draw(st.lists(st.integers(-m, m - 1), min_size=count, max_size=count, unique_by=lambda v: v % m)))
    expected = np.expand_dims(a, axes)
    out = xp.expand_dims(from_numpy(a), axis=axes if count > 1 else axes[0])
    assert_same(out, expected)
    assert_same(xp.squeeze(out, axis=axes), a)


def test_expand_dims_and_squeeze_errors():
    x = xp.ones((2, 3))
    with pytest.raises(IndexError, match="expand_dims.*axis 3 is out of bounds"):
        xp.expand_dims(x, axis=3)
    with pytest.raises(ValueError, match="repeated axis"):
        xp.expand_dims(x, axis=(0, -4))
    with pytest.raises(ValueError, match=r"squeeze\(\): axis 1 has size 3"):
        xp.squeeze(x, axis=1)
    with pytest.raises(IndexError, match="squeeze"):
        xp.squeeze(x, axis=2)
    with pytest.raises(TypeError, match="axis must be an int or a tuple"):
        xp.squeeze(x, axis=None)


@settings(max_examples=30)
@given(names, st.data())
def test_tile(name, data):
    a = data.draw(arrays(name, shapes(max_dims=3, max_side=3)))
    reps = tuple(data.draw(st.lists(st.integers(0, 3), max_size=4)))
    assert_same(xp.tile(from_numpy(a), reps), np.tile(a, reps))


def test_tile_errors():
    with pytest.raises(ValueError, match="repetitions.*at least 0"):
        xp.tile(xp.ones(2), (-1,))


@settings(max_examples=40)
@given(array_and_axis(), st.booleans(), st.data())
def test_repeat(case, flat, data):
    a, axis = case
    size = a.size if flat else a.shape[axis]
    axis_kw = None if flat else axis
    n = data.draw(st.integers(0, 3))
    assert_same(xp.repeat(from_numpy(a), n, axis=axis_kw), np.repeat(a, n, axis=axis_kw))
    counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)), dtype=np.uint16)
    expected = np.repeat(a, counts, axis=axis_kw)
    assert_same(xp.repeat(from_numpy(a), from_numpy(counts), axis=axis_kw), expected)
    one = np.array([2], dtype=np.int8)
    assert_same(xp.repeat(from_numpy(a), from_numpy(one), axis=axis_kw), np.repeat(a, 2, axis=axis_kw))


def test_repeat_errors():
    x = xp.ones((2, 3))
    with pytest.raises(ValueError, match=r"repeats must have shape \(\), \(1,\) or \(3,\), got \(2,\)"):
        xp.repeat(x, xp.asarray([1, 2]), axis=1)
    with pytest.raises(TypeError, match="integer dtype"):
        xp.repeat(x, xp.asarray([1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        xp.repeat(x, xp.asarray([-1]))
    with pytest.raises(ValueError, match="non-negative"):
        xp.repeat(x, xp.asarray([2**64 - 1], dtype=xp.uint64))
    with pytest.raises(ValueError, match="repeats must be at least 0"):
        xp.repeat(x, -1)


# ---------------------------------------------------------------- reordering


@settings(max_examples=40)
@given(names, st.data())
def test_permute_dims_and_moveaxis(name, data):
    a = data.draw(arrays(name, shapes(min_dims=1, max_dims=4)))
    order = tuple(data.draw(st.permutations(range(a.ndim))))
    negative = tuple(o - a.ndim for o in order)
    assert_same(xp.permute_dims(from_numpy(a), negative), np.transpose(a, order))
    k = data.draw(st.integers(1, a.ndim))
    src = tuple(data.draw(st.permutations(range(a.ndim))))[:k]
    dst = tuple(data.draw(st.permutations(range(-a.ndim, 0))))[:k]
    assert_same(xp.moveaxis(from_numpy(a), src, dst), np.moveaxis(a, src, dst))
    assert_same(xp.moveaxis(from_numpy(a), src[0], dst[0]), np.moveaxis(a, src[0], dst[0]))


def test_permute_dims_and_moveaxis_errors():
    x = xp.ones((2, 3))
    with pytest.raises(ValueError, match=r"axes \(0,\) must list all 2 axes"):
        xp.permute_dims(x, (0,))
    with pytest.raises(ValueError, match="repeated axis"):
        xp.permute_dims(x, (0, -2))
    with pytest.raises(IndexError, match="out of bounds"):
        xp.permute_dims(x, (0, 2))
    with pytest.raises(ValueError, match="differ in length"):
        xp.moveaxis(x, (0, 1), 0)


@settings(max_examples=40)
@given(names, st.data())
def test_flip(name, data):
    a = data.draw(arrays(name, shapes()))
    axis = data.draw(
        st.none()
        | (st.integers(-a.ndim, a.ndim - 1) if a.ndim else st.none())
        | st.lists(st.integers(0, max(a.ndim - 1, 0)), unique=True, max_size=a.ndim).map(tuple)
    )
    assert_same(xp.flip(from_numpy(a), axis=axis), np.flip(a, axis=axis))


@settings(max_examples=40)
@given(names, st.data())
def test_roll(name, data):
    a = data.draw(arrays(name, shapes()))
    shift = data.draw(st.integers(-7, 7))
    assert_same(xp.roll(from_numpy(a), shift), np.roll(a, shift))
    if a.ndim:
        axes = tuple(data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, max_size=3)))
        shifts = tuple(data.draw(st.lists(st.integers(-7, 7), min_size=len(axes), max_size=len(axes))))
        assert_same(xp.roll(from_numpy(a), shifts, axis=axes), np.roll(a, shifts, axis=axes))
        assert_same(xp.roll(from_numpy(a), shift, axis=axes), np.roll(a, shift, axis=axes))


def test_roll_errors():
    x = xp.ones((2, 3))
    with pytest.raises(ValueError, match="needs a tuple axis"):
        xp.roll(x, (1, 2))
    with pytest.raises(ValueError, match="differ in length"):
        xp.roll(x, (1, 2), axis=(0, 1, 1))
    with pytest.raises(IndexError, match="roll"):
        xp.roll(x, 1, axis=5)


def test_mixed_devices_are_refused():
    x = xp.ones(2)
    m = xp.ones(2, device="meta")
    with pytest.raises(ValueError, match="concat.*different devices"):
        xp.concat([x, m])
    with pytest.raises(ValueError, match="repeat.*different devices"):
        xp.repeat(x, xp.asarray([1, 2], device="meta"))
