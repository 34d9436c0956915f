"""Writeability as NumPy has it: ``x.flags``, read-only views, and every write route refusing a read-only array
with NumPy's "assignment destination is read-only" (the whole base array compared with NumPy's after each try)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import scipy.special
import torch

import trn_backend as xp
from tests.support import assert_same

READ_ONLY = "assignment destination is read-only"


def _pair(shape=(3, 4), dtype="float64"):
    n = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    return xp.asarray(n.copy()), n


# --- x.flags against NumPy's flagsobj ---

LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "column slice": lambda a: a[:, 1:3],
    "row slice": lambda a: a[1:],
    "step": lambda a: a[:, ::2],
    "reversed": lambda a: a[::-1],
    "reversed columns": lambda a: a[:, ::-1],
    "one row": lambda a: a[1:2],
    "empty": lambda a: a[:0],
    "0-d": lambda a: a[1, 2, ...],
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_flags_match_numpy(layout):
    x, n = _pair()
    got, want = LAYOUTS[layout](x).flags, LAYOUTS[layout](n).flags
    for name in ("writeable", "c_contiguous", "f_contiguous", "aligned", "writebackifcopy"):
        assert getattr(got, name) == getattr(want, name), name
    for key in ("WRITEABLE", "W", "C_CONTIGUOUS", "C", "F_CONTIGUOUS", "F", "ALIGNED", "A"):
        assert got[key] == want[key], key


def test_owndata_of_a_new_array_and_of_views():
    x, _ = _pair()
    assert x.flags.owndata and x.flags["OWNDATA"]
    assert not x[1:].flags.owndata
    assert not x.T.flags.owndata
    assert not x[::-1].flags.owndata


def test_flags_repr_and_bad_names():
    x, n = _pair()
    assert repr(x.flags) == repr(n.flags)
    with pytest.raises(KeyError, match="unknown flag"):
        x.flags["NOPE"]
    with pytest.raises(ValueError, match="only the WRITEABLE flag"):
        x.flags["C_CONTIGUOUS"] = False
    with pytest.raises(AttributeError):
        x.flags.c_contiguous = False


def test_setting_writeable_false_and_true_again():
    x, n = _pair()
    x.flags.writeable = False
    n.flags.writeable = False
    assert not x.flags.writeable
    with pytest.raises(ValueError, match=READ_ONLY):
        x[0, 0] = 7
    x.flags["WRITEABLE"] = True
    n.flags["WRITEABLE"] = True
    x[0, 0] = 7
    n[0, 0] = 7
    assert_same(x, n)


def test_views_of_a_read_only_array_are_read_only_and_stay_so():
    """As in NumPy: a view taken while its base is read-only cannot be made writeable."""
    x, n = _pair()
    x.flags.writeable = False
    n.flags.writeable = False
    views = [
        lambda a: a[1:],
        lambda a: a.T,
        lambda a: a[::-1],
        lambda a: a[:, ::-2],
        lambda a: a[None],
        lambda a: a.reshape(12),
        lambda a: np.transpose(a),
        lambda a: np.flip(a, 1),
        lambda a: a[...],
    ]
    for view in views:
        v, w = view(x), view(n)
        assert not v.flags.writeable and not w.flags.writeable
        with pytest.raises(ValueError, match=READ_ONLY):
            v[...] = 0
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
            v.flags.writeable = True
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
            w.flags.writeable = True
    assert_same(x, n)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64", "int8", "float32", "complex64", "bool"])
def test_read_only_holds_for_every_dtype_and_its_dtype_views(dtype):
    """torch's dtype view (which the unsigned dtypes move through) of a read-only tensor is writable: not here."""
    x, n = _pair((6,), dtype)
    x.flags.writeable = False
    for write in (
        lambda a: a.__setitem__(0, 1),
        lambda a: a[::-1].__setitem__(0, 1),
        lambda a: a.__setitem__([0, 2], 1),
        lambda a: a.view(a.dtype).__setitem__(0, 1),
        lambda a: a[None, ...].__setitem__(0, 1),
    ):
        with pytest.raises(ValueError, match=READ_ONLY):
            write(x)
    assert_same(x, n)


def test_dtype_view_of_a_read_only_array_is_read_only():
    x, n = _pair((4,), "float64")
    x.flags.writeable = False
    v = x.view(xp.int64)
    assert not v.flags.writeable
    with pytest.raises(ValueError, match=READ_ONLY):
        v[0] = 1
    assert_same(x, n)


# --- every write route refuses, naming the operation, and nothing is written ---

WRITES = {
    "x[key] = value": lambda x: x.__setitem__(0, 9.0),
    "x[key] = value (mask)": lambda x: x.__setitem__(x > 3, 9.0),
    "x[key] = value (index array)": lambda x: x.__setitem__(xp.asarray([0, 1]), 9.0),
    "in-place add": lambda x: x.__iadd__(1.0),
    "in-place multiply": lambda x: x.__imul__(2),
    "in-place divide": lambda x: x.__itruediv__(2),
    "in-place pow": lambda x: x.__ipow__(xp.asarray(2.0)),
    "numpy.add(out=...)": lambda x: np.add(x, 1.0, out=x),
    "numpy.sum(out=...)": lambda x: np.sum(xp.ones((2,) + x.shape), axis=0, out=x),
    "numpy.copyto": lambda x: np.copyto(x, 5.0),
    "ufunc fmod": lambda x: np.fmod(x, 2.0, out=x),
    "ufunc add.at": lambda x: np.add.at(x, [0, 1], 1.0),
    "scipy.special.erf": lambda x: scipy.special.erf(x, out=x),
    "fill": lambda x: x.fill(3.0),
    "x.flat[key] = value": lambda x: x.flat.__setitem__(1, 3.0),
    "np.asarray(x)[...] =": lambda x: np.asarray(x).__setitem__(0, 1.0),
}


@pytest.mark.parametrize("route", WRITES)
@pytest.mark.parametrize("layout", ["whole", "reversed", "transposed"])
def test_every_write_route_refuses_a_read_only_array(route, layout):
    x, n = _pair((2, 3))
    view = {"whole": lambda a: a, "reversed": lambda a: a[::-1], "transposed": lambda a: a.T}[layout]
    x.flags.writeable = False
    with pytest.raises(ValueError, match=READ_ONLY):
        WRITES[route](view(x))
    assert_same(x, n)


@pytest.mark.parametrize("route", ["x[key] = value", "in-place add", "numpy.add(out=...)", "x.flat[key] = value"])
def test_the_error_names_the_operation(route):
    x, _ = _pair((2, 3))
    x.flags.writeable = False
    with pytest.raises(
        ValueError,
        match=route.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
        + ".*"
        + READ_ONLY
        + r".*flags\.writeable",
    ):
        WRITES[route](x)


def test_writes_are_refused_inside_torch_inference_mode_too():
    """The routes check before writing, so the caller's own inference_mode block does not let writes through."""
    x, n = _pair()
    x.flags.writeable = False
    with torch.inference_mode():
        for write in (lambda a: a.__setitem__(0, 1.0), lambda a: a.__iadd__(1.0), lambda a: np.add(a, 1, out=a)):
            with pytest.raises(ValueError, match=READ_ONLY):
                write(x)
    assert_same(x, n)


def test_the_host_fallback_names_the_read_only_array():
    x, _ = _pair((4,))
    x.flags.writeable = False
    with pytest.raises(
        ValueError,
        match=r"numpy\.copyto: assignment destination is read-only.*shape \(4,\) is "
        r"read-only \(x\.flags\.writeable is False\)",
    ):
        np.copyto(x, 1.0)


# --- NumPy's read-only views ---


def test_broadcast_to_is_a_read_only_view_as_in_numpy():
    x, n = _pair((1, 4))
    b, c = np.broadcast_to(x, (3, 4)), np.broadcast_to(n, (3, 4))
    assert not b.flags.writeable and not c.flags.writeable
    with pytest.raises(ValueError, match=READ_ONLY):
        b[0, 0] = 100
    assert_same(x, n)
    assert not xp.broadcast_to(x, (2, 4)).flags.writeable  # the namespace's is NumPy's
    # NumPy lets a read-only view of writeable memory be made writeable; the write then shows in every row
    b.flags.writeable = True
    c.flags.writeable = True
    b[0, 0] = 100
    c[0, 0] = 100
    assert_same(b, c)
    assert_same(x, n)


@pytest.mark.parametrize(
    "call",
    [
        lambda a: np.diagonal(a),
        lambda a: a.diagonal(),
        lambda a: np.diagonal(a, 1),
        lambda a: np.diagonal(a, -1, 1, 0),
        lambda a: a[::-1].diagonal(),
        lambda a: np.diagonal(a.T[:, ::-1], 1),
    ],
)
def test_diagonal_is_a_read_only_view_as_in_numpy(call):
    x, n = _pair((3, 4))
    d, e = call(x), call(n)
    assert_same(d, e)
    assert not d.flags.writeable and not e.flags.writeable
    with pytest.raises(ValueError, match=READ_ONLY):
        d[...] = -1
    d.flags.writeable = True
    e.flags.writeable = True
    d[...] = -1
    e[...] = -1
    assert_same(x, n)


def test_diagonal_errors_name_the_function():
    x, _ = _pair((3, 4))
    with pytest.raises(
        ValueError,
        match=r"numpy\.diagonal\(\): needs an array of at least 2 dimensions, got "
        r"shape \(4,\)",
    ):
        np.diagonal(x[0])
    with pytest.raises(ValueError, match=r"numpy\.diagonal\(\): axis1 and axis2 cannot be the same"):
        np.diagonal(x, 0, 1, -1)
    with pytest.raises(IndexError, match=r"numpy\.diagonal\(\): axis 2 is out of bounds"):
        np.diagonal(x, 0, 0, 2)


def test_imag_of_a_real_array_is_read_only_for_good():
    x, n = _pair((3,))
    assert not x.imag.flags.writeable and not n.imag.flags.writeable
    with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
        x.imag.flags.writeable = True
    with pytest.raises(ValueError, match=READ_ONLY):
        scipy.special.erf(x, out=x.imag)
    assert_same(x, n)


def test_a_read_only_complex_array_has_read_only_parts():
    x = xp.asarray(np.arange(3) + 1j)
    x.flags.writeable = False
    for part in (x.real, x.imag):
        assert not part.flags.writeable
        with pytest.raises(ValueError, match=READ_ONLY):
            part[0] = 5
    assert_same(x, np.arange(3) + 1j)


# --- what NumPy is handed ---


def test_numpy_sees_a_read_only_array_as_read_only_memory():
    x, n = _pair()
    x.flags.writeable = False
    a = np.asarray(x)
    assert not a.flags.writeable and np.shares_memory(a, np.asarray(x))
    assert np.asarray(x, copy=True).flags.writeable
    assert np.array(x).flags.writeable
    assert not np.asarray(x[::-1]).flags.writeable


def _lazy_conjugate():
    t = torch.tensor([1 + 2j, 3 - 1j, -2 + 0.5j], dtype=torch.complex128)
    return t, xp.from_torch(t.conj())


def test_numpy_sees_a_lazy_conjugate_as_a_read_only_copy():
    t, c = _lazy_conjugate()
    a = np.asarray(c)
    np.testing.assert_array_equal(a, t.numpy().conj())
    assert not a.flags.writeable
    assert np.asarray(c, copy=True).flags.writeable
    with pytest.raises(ValueError, match="lazy conjugate"):
        np.asarray(c, copy=False)


@pytest.mark.parametrize(
    "write",
    [
        lambda c: np.copyto(c, 7.0),
        lambda c: np.add.at(c, [0], 1.0),
        lambda c: np.copyto(c, 7.0, where=np.array([True, False, True])),
        lambda c: scipy.special.wofz(c, out=c),
    ],
)
def test_numpy_writes_into_a_lazy_conjugate_are_refused_not_lost(write):
    t, c = _lazy_conjugate()
    before = t.clone()
    with pytest.raises(ValueError, match="lazy conjugate"):
        write(c)
    assert torch.equal(t, before)


# --- copies ---


@pytest.mark.parametrize(
    "make", [lambda a: a, lambda a: a[::-1], lambda a: a.T, lambda a: np.broadcast_to(a[0], a.shape)]
)
@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_copy_and_deepcopy_copy_as_in_numpy(make, copier):
    x, n = _pair()
    c, d = copier(make(x)), copier(make(n))
    assert_same(c, d)
    assert c.flags.writeable and d.flags.writeable
    c[...] = -1
    d[...] = -1
    assert_same(x, n)


def test_copies_of_a_read_only_array_are_writeable():
    x, n = _pair()
    x.flags.writeable = False
    for c in (copy.copy(x), copy.deepcopy(x), x.copy(), xp.asarray(x, copy=True)):
        assert c.flags.writeable
        c[0, 0] = 42
    assert_same(x, n)


def test_sharded_arrays_take_the_writeable_flag():
    from tests.distributed_support import spmd

    def body(rank):
        import trn_backend.distributed as td

        x = td.shard(xp.asarray(np.arange(8.0)), 0)
        x.flags.writeable = False
        refused = []
        for write in (
            lambda: x.__setitem__(0, 1.0),
            lambda: x.__iadd__(1.0),
            lambda: np.add(x, 1, out=x),
            lambda: x[2:].__setitem__(0, 5.0),
        ):
            try:
                write()
            except ValueError as e:
                refused.append(READ_ONLY in str(e))
        s = x[2:]
        try:
            s.flags.writeable = True
            lifted_view = True
        except ValueError:
            lifted_view = False
        x.flags.writeable = True
        x[0] = 100.0
        return refused, lifted_view, np.asarray(x.gather()).tolist()

    for refused, lifted_view, values in spmd(2, body):
        assert refused == [True] * 4
        assert not lifted_view
        assert values == [100.0, *range(1, 8)]
