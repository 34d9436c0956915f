"""Views where NumPy returns views, over the same memory: np.flip, np.rot90, np.diagonal, and reshape, transpose
and the other shape functions of views with negative steps. Each case runs on a NeuronArray and on an ndarray
copy of the same data; after a write into the result the whole base arrays are compared, so a write must land
in the same places as NumPy's (or nowhere, where NumPy copies), and a read-only result must be read-only."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import assert_same


def _pair(shape):
    n = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    return xp.asarray(n.copy()), n


def _write_and_compare(v, w, x, n):
    """v (ours) and w (NumPy's) hold the same values and flags; a write into each changes the bases alike."""
    assert_same(v, w)
    assert v.flags.writeable == w.flags.writeable
    values = np.arange(w.size, dtype=np.float64).reshape(w.shape) + 1000
    if w.flags.writeable:
        v[...] = xp.asarray(values)
        w[...] = values
    else:
        with pytest.raises(ValueError, match="assignment destination is read-only"):
            v[...] = xp.asarray(values)
    assert_same(x, n)


# one step: a NumPy function that NumPy answers with a view (or, for reshape, a copy where it must), drawn with
# its arguments for an array of ndim dimensions
@st.composite
def _step(draw, shape):
    ndim = len(shape)
    kinds = ["reshape flat", "reshape split", "transpose", "expand_dims", "squeeze", "broadcast_to"]
    if ndim >= 1:
        kinds += ["flip", "flip all"]
    if ndim >= 2:
        kinds += ["rot90", "diagonal", "moveaxis", "swapaxes"]
    kind = draw(st.sampled_from(kinds))
    if kind == "flip":
        axis = draw(st.integers(-ndim, ndim - 1))
        return kind, lambda a: np.flip(a, axis)
    if kind == "flip all":
        return kind, lambda a: np.flip(a)
    if kind == "reshape flat":
        return kind, lambda a: np.reshape(a, -1)
    if kind == "reshape split":
        new = (1, *shape[:-1], 1, shape[-1]) if ndim else (1,)
        return kind, lambda a: np.reshape(a, new)
    if kind == "transpose":
        order = tuple(draw(st.permutations(range(ndim))))
        return kind, lambda a: np.transpose(a, order)
    if kind == "expand_dims":
        axis = draw(st.integers(-ndim - 1, ndim))
        return kind, lambda a: np.expand_dims(a, axis)
    if kind == "squeeze":
        return kind, lambda a: np.squeeze(a)
    if kind == "broadcast_to":
        return kind, lambda a: np.broadcast_to(a, (2, *a.shape))
    if kind == "rot90":
        k = draw(st.integers(-1, 4))
        axes = tuple(draw(st.permutations(range(ndim)))[:2])
        return kind, lambda a: np.rot90(a, k, axes)
    if kind == "diagonal":
        offset = draw(st.integers(-2, 2))
        axes = tuple(draw(st.permutations(range(ndim)))[:2])
        return kind, lambda a: np.diagonal(a, offset, *axes)
    if kind == "moveaxis":
        src, dst = draw(st.integers(0, ndim - 1)), draw(st.integers(-ndim, ndim - 1))
        return kind, lambda a: np.moveaxis(a, src, dst)
    i, j = draw(st.integers(0, ndim - 1)), draw(st.integers(0, ndim - 1))
    return kind, lambda a: np.swapaxes(a, i, j)


@st.composite
def _cases(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    key = tuple(draw(st.slices(n)) for n in shape)
    steps = []
    current = np.empty(shape)[key].shape
    for _ in range(draw(st.integers(1, 2))):
        name, f = draw(_step(current))
        steps.append((name, f))
        current = f(np.empty(current)).shape
    return shape, key, steps


@settings(max_examples=120)
@given(_cases())
def test_views_of_sliced_arrays_write_as_numpy_does(case):
    shape, key, steps = case
    x, n = _pair(shape)
    v, w = x[key], n[key]
    for _, f in steps:
        v, w = f(v), f(w)
    _write_and_compare(v, w, x, n)


@settings(max_examples=120)
@given(_cases())
def test_views_of_read_only_arrays_are_read_only_as_in_numpy(case):
    shape, key, steps = case
    x, n = _pair(shape)
    x.flags.writeable = False
    n.flags.writeable = False
    v, w = x[key], n[key]
    for _, f in steps:
        v, w = f(v), f(w)
    # read-only views, and writeable copies where NumPy copies (a reshape it cannot view)
    _write_and_compare(v, w, x, n)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: np.flip(a, 0),
        lambda a: np.flip(a),
        lambda a: np.rot90(a),
        lambda a: np.rot90(a, 3, (1, 0)),
        lambda a: np.reshape(a[::-1, ::-1], 12),
        lambda a: np.transpose(a[::-1]),
        lambda a: a[:, ::-1].T,
        lambda a: np.swapaxes(a[::-2], 0, 1),
        lambda a: np.moveaxis(a[::-1], 0, 1),
        lambda a: np.expand_dims(a[::-1], 0),
        lambda a: np.squeeze(a[::-1][None]),
        lambda a: a[::-1].reshape(2, 2, 3),
        lambda a: np.flip(a[::-1], 0),
    ],
)
def test_writes_into_numpy_views_land_in_the_base(view):
    x, n = _pair((4, 3))
    v, w = view(x), view(n)
    assert np.shares_memory(w, n)
    _write_and_compare(v, w, x, n)


def test_reshape_that_numpy_must_copy_gives_a_writeable_copy():
    x, n = _pair((4, 3))
    v, w = x[::-1].reshape(12), n[::-1].reshape(12)
    assert not np.shares_memory(w, n)
    _write_and_compare(v, w, x, n)
    with pytest.raises(ValueError, match=r"reshape\(copy=False\).*negative steps.*cannot be viewed as shape"):
        xp.reshape(x[::-1], (12,), copy=False)


def test_flip_and_rot90_errors_name_the_function():
    x, _ = _pair((2, 3))
    with pytest.raises(IndexError, match=r"numpy\.flip.*axis 2 is out of bounds"):
        np.flip(x, 2)
    with pytest.raises(ValueError, match=r"numpy\.rot90\(\): the axes must be different"):
        np.rot90(x, 1, (0, 0))


def test_views_with_negative_steps_of_a_lazy_conjugate_read_its_values():
    import torch

    t = torch.tensor([[1 + 2j, 3 - 1j], [0.5j, -2 + 0j]], dtype=torch.complex128)
    c = xp.from_torch(t.conj())
    assert_same(np.flip(c, 1), np.flip(t.numpy().conj(), 1))
    assert_same(np.rot90(c), np.rot90(t.numpy().conj()))


def test_sharded_reversed_views_refuse_writes_rather_than_lose_them():
    from tests.distributed_support import spmd

    def body(rank):
        import trn_backend.distributed as td

        x = td.shard(xp.asarray(np.arange(8.0)), 0)
        r = x[::-1]
        refused = []
        for write in (
            lambda: r.__setitem__(0, 1.0),
            lambda: r.__iadd__(1.0),
            lambda: np.add(r, 1, out=r),
            lambda: r[1:].__setitem__(0, 5.0),
        ):
            try:
                write()
            except ValueError as e:
                refused.append("assignment destination is read-only" in str(e) and "sharded" in str(e))
        return refused, r.flags.writeable, x[1:].flags.writeable, np.asarray(x.gather()).tolist()

    for refused, writeable, slice_writeable, values in spmd(2, body):
        assert refused == [True] * 4
        assert not writeable and slice_writeable
        assert values == list(range(8))


def test_sharded_copies_where_numpy_views_refuse_writes():
    """np.flip, np.rot90, np.diagonal and np.broadcast_to of a sharded array are copies or DTensor views that
    NumPy answers with views (read-only ones for diagonal and broadcast_to): writes are refused, not lost."""
    from tests.distributed_support import spmd

    def body(rank):
        import trn_backend.distributed as td

        x = td.shard(xp.asarray(np.arange(16.0).reshape(4, 4)), 0)
        results = []
        for view in (
            lambda a: np.flip(a, 0),
            lambda a: np.rot90(a),
            lambda a: np.diagonal(a),
            lambda a: np.broadcast_to(a[0], (2, 4)),
        ):
            v = view(x)
            try:
                v[...] = -1.0
                results.append(False)
            except ValueError as e:
                results.append("assignment destination is read-only" in str(e) and not v.flags.writeable)
        return results, np.asarray(x.gather()).tolist()

    for refused, values in spmd(2, body):
        assert refused == [True] * 4
        assert values == np.arange(16.0).reshape(4, 4).tolist()
