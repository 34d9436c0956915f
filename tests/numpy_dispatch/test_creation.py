"""NumPy's array creation routines (trn_backend/numpy_dispatch/creation.py). NEP 35: NumPy's creation functions
called with ``like=`` a NeuronArray give NeuronArrays on that array's device, with NumPy's dtypes and values; the
``*_like`` functions take ``shape=`` and ``order=`` (dask passes both) and keep what a call does not override; the
table's cases against NumPy on the same data; astype of complex to real, and asfortranarray with ``like=``."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

import trn_backend as xp
from tests.numpy_dispatch.calls import T3, Case, I, M, V, W, _apply, _neuron, _numpy_tree, run_both
from tests.support import assert_same, assert_same_results, to_numpy
from trn_backend import _dtypes
from trn_backend.numpy_dispatch import creation

LIKE = xp.asarray(np.zeros(2, dtype=np.float32))

# (id, call): call(like) builds an array; like=None is NumPy's own answer
LIKE_CASES = [
    ("empty-dtype", lambda like: np.empty((2, 3), dtype=np.int16, like=like)),
    ("zeros", lambda like: np.zeros((2, 3), like=like)),
    ("zeros-int", lambda like: np.zeros(4, np.int32, like=like)),
    ("ones", lambda like: np.ones((3,), dtype="float32", like=like)),
    ("ones-bool", lambda like: np.ones((2, 2), dtype=bool, like=like)),
    ("full-int", lambda like: np.full((2, 2), 3, like=like)),
    ("full-float", lambda like: np.full(3, 2.5, like=like)),
    ("full-row", lambda like: np.full((2, 3), [1, 2, 3], like=like)),
    ("full-cast", lambda like: np.full(3, 1.7, dtype=np.int64, like=like)),
    ("full-complex", lambda like: np.full(2, 1 + 2j, like=like)),
    ("arange-int", lambda like: np.arange(5, like=like)),
    ("arange-float", lambda like: np.arange(0, 1, 0.125, like=like)),
    ("arange-float32-promotes", lambda like: np.arange(np.float32(1), 5, like=like)),
    ("arange-int8-promotes", lambda like: np.arange(np.int8(1), np.int8(6), np.int8(2), like=like)),
    ("arange-negative-step", lambda like: np.arange(5, 1, -1.5, like=like)),
    ("arange-dtype-positional", lambda like: np.arange(0, 6, 2, np.float32, like=like)),
    ("arange-by-name", lambda like: np.arange(stop=4, like=like)),
    ("arange-start-stop-by-name", lambda like: np.arange(1, stop=9, step=3, dtype="int32", like=like)),
    ("array-float", lambda like: np.array([1.0, 2.0], like=like)),
    ("array-int", lambda like: np.array([[1, 2], [3, 4]], like=like)),
    ("array-bool", lambda like: np.array([True, False], like=like)),
    ("array-ndmin", lambda like: np.array([1, 2], ndmin=3, like=like)),
    ("array-dtype", lambda like: np.array([1, 2], dtype=np.float32, like=like)),
    ("array-from-ndarray", lambda like: np.array(np.arange(6, dtype=np.uint8).reshape(2, 3), like=like)),
    ("asarray-list", lambda like: np.asarray([1.0], like=like)),
    ("asarray-ndarray", lambda like: np.asarray(np.arange(4, dtype=np.int16), like=like)),
    ("asarray-scalar", lambda like: np.asarray(7, like=like)),
    ("asanyarray", lambda like: np.asanyarray((1, 2.5), dtype=np.float32, like=like)),
    ("ascontiguousarray", lambda like: np.ascontiguousarray(np.arange(6.0).reshape(2, 3).T, like=like)),
    ("ascontiguousarray-0d", lambda like: np.ascontiguousarray(5.0, like=like)),
    ("require", lambda like: np.require([1, 2], dtype=np.float32, requirements=["C", "O", "W"], like=like)),
    ("eye", lambda like: np.eye(3, 4, k=1, like=like)),
    ("eye-int", lambda like: np.eye(2, dtype=int, like=like)),
    ("identity", lambda like: np.identity(3, like=like)),
    ("identity-complex", lambda like: np.identity(2, dtype=np.complex64, like=like)),
    ("tri", lambda like: np.tri(3, 4, -1, like=like)),
    ("tri-int", lambda like: np.tri(3, dtype=np.int8, like=like)),
    ("frombuffer", lambda like: np.frombuffer(np.arange(4.0).tobytes(), like=like)),
    (
        "frombuffer-count-offset",
        lambda like: np.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint8, count=2, offset=1, like=like),
    ),
    ("fromiter", lambda like: np.fromiter(iter(range(5)), dtype=np.int32, like=like)),
    ("fromiter-float", lambda like: np.fromiter((i / 2 for i in range(3)), float, like=like)),
    ("fromfunction", lambda like: np.fromfunction(lambda i, j: i * 10 + j, (2, 3), like=like)),
    ("fromfunction-int", lambda like: np.fromfunction(lambda i, j: i == j, (3, 3), dtype=int, like=like)),
    ("loadtxt", lambda like: np.loadtxt(io.StringIO("1 2\n3 4"), like=like)),
    (
        "loadtxt-int-usecols",
        lambda like: np.loadtxt(io.StringIO("1,2,3\n4,5,6"), dtype=int, delimiter=",", usecols=(0, 2), like=like),
    ),
    ("genfromtxt", lambda like: np.genfromtxt(io.StringIO("1,2\n3,nan"), delimiter=",", like=like)),
]


@pytest.mark.parametrize(("case", "call"), LIKE_CASES, ids=[case for case, _ in LIKE_CASES])
def test_creation_with_like_matches_numpy(case, call):
    result, expected = call(LIKE), call(None)
    assert isinstance(result, xp.NeuronArray) and result.device == LIKE.device
    if case.startswith("empty"):  # only the dtype and shape are defined
        assert to_numpy(result).dtype == expected.dtype and result.shape == expected.shape
    else:
        assert_same(result, expected)


def test_every_like_function_is_in_the_table_and_reached_only_through_like():
    from trn_backend.numpy_dispatch import handled_functions

    handled = set(handled_functions())
    for func in creation.LIKE:
        assert f"{func.__module__}.{func.__name__}" in handled
    # without like=, NumPy makes its own arrays: the table is never asked
    assert type(np.zeros(2)) is np.ndarray and type(np.asarray([1.0])) is np.ndarray


def test_dtype_spellings_are_numpys():
    for dtype in (np.float32, "float32", np.dtype("float32"), xp.float32):
        assert to_numpy(np.zeros(2, dtype=dtype, like=LIKE)).dtype == np.float32


def test_array_copies_and_asarray_shares_on_the_cpu():
    host = np.arange(4, dtype=np.float64)
    copied, shared = np.array(host, like=LIKE), np.asarray(host, like=LIKE)
    host[0] = 99.0
    assert to_numpy(copied)[0] == 0.0 and to_numpy(shared)[0] == 99.0
    x = xp.asarray(np.arange(3, dtype=np.int64))
    assert np.array(x, like=LIKE)._t.data_ptr() != x._t.data_ptr()
    assert np.asarray(x, like=LIKE)._t.data_ptr() == x._t.data_ptr()


def test_copy_false_refuses_what_numpy_refuses():
    with pytest.raises(ValueError):
        np.asarray([1, 2], copy=False, like=LIKE)
    with pytest.raises(ValueError):
        np.asarray(np.arange(3, dtype=np.int64), dtype=np.float32, copy=False, like=LIKE)


def test_results_are_writeable_and_contiguous():
    for result in (
        np.full((2, 3), [1.0, 2.0, 3.0], like=LIKE),
        np.ascontiguousarray(xp.asarray(np.arange(6.0).reshape(2, 3)).mT, like=LIKE),
        np.frombuffer(bytes(16), like=LIKE),
    ):
        assert result._t.is_contiguous()
        result[0] = 5.0
        assert to_numpy(result).ravel()[0] == 5.0


def test_full_fill_value_may_be_a_neuron_array():
    fill = xp.asarray(np.array([1, 2, 3], dtype=np.int32))
    assert_same(np.full((2, 3), fill, like=LIKE), np.full((2, 3), np.array([1, 2, 3], dtype=np.int32)))


def test_require_owndata_copies_a_view_and_f_order_is_refused():
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    view = x[0]
    owned = np.require(view, requirements="O", like=LIKE)
    owned[0] = -1.0
    assert to_numpy(x)[0, 0] == 0.0
    host = np.arange(3.0)
    np.require(host, requirements="OWNDATA", like=LIKE)[0] = 7.0
    assert host[0] == 0.0
    assert_same(np.require([1.0, 2.0], requirements="F", like=LIKE), np.array([1.0, 2.0]))  # 1-d is F too
    with pytest.raises(ValueError, match="'F' cannot be met"):
        np.require(x, requirements=["F"], like=LIKE)
    with pytest.raises(KeyError, match="unknown requirement"):
        np.require(x, requirements=["Q"], like=LIKE)


def test_unmeetable_orders_and_arguments_are_errors():
    with pytest.raises(ValueError, match="C-ordered"):
        np.array([1.0], order="F", like=LIKE)
    with pytest.raises(TypeError, match="order='F'"):
        np.zeros(2, order="F", like=LIKE)
    with pytest.raises(TypeError, match="needs a stop"):
        np.arange(None, like=LIKE)
    with pytest.raises(TypeError, match="plain numeric arrays"):
        np.loadtxt(io.StringIO("1 2"), dtype=[("a", int), ("b", int)], like=LIKE)


def test_device_argument_and_like_device():
    assert np.zeros(2, device="cpu", like=LIKE).device == LIKE.device
    assert np.arange(3, like=LIKE).device == LIKE.device


def test_loadtxt_reads_a_file(tmp_path):
    path = tmp_path / "data.txt"
    np.savetxt(path, np.arange(6.0).reshape(2, 3))
    assert_same(np.loadtxt(path, like=LIKE), np.loadtxt(path))
    assert_same(np.fromfile(path, sep=" ", like=LIKE), np.fromfile(path, sep=" "))


@pytest.mark.parametrize("fill", ["empty", "zeros", "ones", "full"])
def test_like_functions_take_shape_and_order(fill):
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = xp.asarray(base)
    func = getattr(np, f"{fill}_like")
    extra = (7,) if fill == "full" else ()
    for kwargs in (
        {},
        {"shape": (4,)},
        {"shape": 2, "dtype": np.int64},
        {"order": "C", "shape": (1, 2)},
        {"order": "K"},
        {"order": "A", "dtype": "float64"},
    ):
        result, expected = func(x, *extra, **kwargs), func(base, *extra, **kwargs)
        assert result.shape == expected.shape and to_numpy(result).dtype == expected.dtype
        if fill != "empty":
            assert_same(result, expected)
    with pytest.raises(ValueError, match="C-ordered"):
        func(x, *extra, order="F")


ON_META = xp.NeuronArray(torch.empty((2,), dtype=torch.float32, device="meta"))


@pytest.mark.parametrize(("case", "call"), LIKE_CASES, ids=[case for case, _ in LIKE_CASES])
def test_results_land_on_likes_device(case, call):
    result, expected = call(ON_META), call(None)
    assert result.device.type == "meta"
    assert (result.shape, np.dtype(result.dtype)) == (expected.shape, expected.dtype)


def test_numpys_default_float_is_the_devices_where_no_dtype_is_given(monkeypatch):
    """On a device without float64 (Neuron's; stood in for here by torch's meta device) NumPy's default float64
    and complex128 become float32 and complex64; an explicit dtype is kept."""
    monkeypatch.setattr(_dtypes, "NO_FLOAT64_DEVICES", frozenset({"meta"}))
    for call in (
        lambda like: np.zeros(2, like=like),
        lambda like: np.asarray([1.5], like=like),
        lambda like: np.eye(2, like=like),
        lambda like: np.arange(0.0, 1.0, 0.5, like=like),
        lambda like: np.loadtxt(io.StringIO("1 2"), like=like),
        lambda like: np.tri(2, like=like),
        lambda like: np.identity(2, like=like),
        lambda like: np.fromfunction(lambda i: i, (2,), like=like),
        lambda like: np.frombuffer(bytes(8), like=like),
        lambda like: np.full(2, 0.5, like=like),
    ):
        assert call(ON_META).dtype == np.float32
    assert np.full(2, 1j, like=ON_META).dtype == np.complex64
    assert np.zeros(2, dtype=np.float64, like=ON_META).dtype == np.float64
    assert np.asarray(np.arange(2.0), dtype=np.float64, like=ON_META).dtype == np.float64
    assert np.arange(3, like=ON_META).dtype == np.int64


# ---------------------------------------------------------------- the table, and creation from a prototype

CASES = [
    Case(np.tril, (M,)),
    Case(np.triu, (T3, -1)),
    Case(np.meshgrid, (V, W[:3])),
    Case(np.meshgrid, (V, W[:3]), {"indexing": "ij"}),
    Case(np.zeros_like, (M,)),
    Case(np.zeros_like, (I,), {"dtype": np.float32, "shape": (2, 2)}),
    Case(np.ones_like, (I,), {"dtype": "uint16"}),
    Case(np.full_like, (M, 7.0)),
    Case(np.full_like, (I, 3), {"shape": 5}),
    Case(np.empty_like, (M,), post=np.shape),
    Case(np.copy, (T3,)),
    Case(np.astype, (M, np.int32)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, atol=case.atol)


def test_creation_from_a_prototype_keeps_what_is_not_overridden() -> None:
    on_meta = xp.NeuronArray(torch.empty((2, 3), dtype=torch.int32, device="meta"))
    for func, extra in ((np.zeros_like, ()), (np.ones_like, ()), (np.empty_like, ()), (np.full_like, (7,))):
        r = func(on_meta, *extra)
        assert (r.shape, r.dtype, r.device.type) == ((2, 3), xp.int32, "meta")
        r = func(on_meta, *extra, dtype=np.float32, shape=(4,))
        assert (r.shape, r.dtype, r.device.type) == ((4,), xp.float32, "meta")
        r = func(on_meta, *extra, dtype="int64", device="cpu")
        assert (r.shape, r.dtype, r.device.type) == ((2, 3), xp.int64, "cpu")


COMPLEX = np.array([[1 + 2j, 3 - 1j], [0.5j, 2.0]])


def test_ndarray_astype_and_np_astype_cast_complex_to_real_as_numpy() -> None:
    z = xp.asarray(COMPLEX)
    for cast in (lambda a: a.astype(np.float32), lambda a: np.astype(a, np.float32)):
        with pytest.warns(np.exceptions.ComplexWarning):
            ours = cast(z)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            theirs = cast(COMPLEX)
        np.testing.assert_array_equal(np.asarray(ours), theirs)
        assert ours.dtype == theirs.dtype
    with pytest.raises(TypeError, match="imaginary"):  # the standard's astype still refuses
        xp.astype(z, xp.float32)


@pytest.mark.parametrize(
    "data",
    [[[1, 2, 3], [4, 5, 6]], np.arange(24.0).reshape(2, 3, 4), 5, [1.5, 2.5], xp.asarray(np.arange(6).reshape(2, 3))],
)
def test_asfortranarray_with_like_is_a_fortran_ordered_neuron_array(data: object) -> None:
    like = xp.asarray(np.zeros(2))
    got = np.asfortranarray(data, like=like)
    expected = np.asfortranarray(np.asarray(data))
    assert isinstance(got, xp.NeuronArray) and got.device == like.device
    assert_same(got, expected)
    assert np.asarray(got).flags.f_contiguous
    assert np.asfortranarray([1, 2], dtype=np.float32, like=like).dtype == np.float32
