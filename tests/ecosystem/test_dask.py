"""dask.array on NeuronArray chunks (threaded scheduler): chunks, meta and results stay NeuronArrays, values match
NumPy on the same data, contractions reach the kernel layer, and tokens are deterministic without pickling. Also
the ndarray methods and the NumPy functions dask's chunk code calls on NeuronArrays."""

from __future__ import annotations

import pickle
import warnings

import cloudpickle
import dask
import dask.array as da
import numpy as np
import pytest
import torch
from dask.base import tokenize

import trn_backend as xp
from tests.support import assert_same, to_numpy
from trn_backend import kernels

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal((8, 6))


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def pair(data: np.ndarray = DATA, chunks=(3, 4)) -> tuple[da.Array, da.Array]:
    """The same data as a dask array of NeuronArray chunks and of ndarray chunks."""
    return da.from_array(xp.asarray(data.copy()), chunks=chunks), da.from_array(data, chunks=chunks)


def check(result: da.Array, expected: da.Array, rtol: float = 1e-12) -> None:
    assert type(result._meta) is xp.NeuronArray
    got = result.compute()
    assert_same(got, expected.compute(), rtol=rtol, atol=1e-12)


def test_from_array_keeps_neuron_array_chunks_and_meta():
    d, _ = pair()
    assert type(d._meta) is xp.NeuronArray and d._meta.ndim == 2 and d.dtype == np.float64
    blocks = [block.compute() for block in d.to_delayed().ravel()]
    assert len(blocks) == 6 and all(type(b) is xp.NeuronArray for b in blocks)
    assert_same(d.compute(), DATA)


OPS = {
    "add": lambda d: d + 1,
    "mul": lambda d: d * d,
    "div": lambda d: d / (abs(d) + 1),
    "pow": lambda d: d**2,
    "np.sin": lambda d: np.sin(d),
    "da.exp": lambda d: da.exp(d),
    "compare": lambda d: d > 0,
    "sum": lambda d: d.sum(),
    "sum0": lambda d: d.sum(axis=0),
    "sum1-keepdims": lambda d: d.sum(axis=1, keepdims=True),
    "mean": lambda d: d.mean(),
    "mean1": lambda d: d.mean(axis=1),
    "std": lambda d: d.std(),
    "std0": lambda d: d.std(axis=0),
    "var-ddof": lambda d: d.var(axis=1, ddof=1),
    "max": lambda d: d.max(),
    "max0": lambda d: d.max(axis=0),
    "min1": lambda d: d.min(axis=1),
    "prod0": lambda d: d.prod(axis=0),
    "any": lambda d: (d > 1).any(axis=0),
    "all": lambda d: (d > -5).all(),
    "argmax0": lambda d: d.argmax(axis=0),
    "argmin": lambda d: d.argmin(),
    "argmax": lambda d: d.argmax(),
    "cumsum": lambda d: d.cumsum(axis=0),
    "matmul": lambda d: d @ d.T,
    "dot": lambda d: da.dot(d.T, d),
    "einsum": lambda d: da.einsum("ij,kj->ik", d, d),
    "einsum-trace": lambda d: da.einsum("ij,ij->", d, d),
    "tensordot": lambda d: da.tensordot(d, d, axes=((1,), (1,))),
    "tensordot-int": lambda d: da.tensordot(d, d.T, axes=1),
    "slice": lambda d: d[1:7:2, ::-1],
    "index": lambda d: d[[0, 5, 2]],
    "mask": lambda d: d[d[:, 0] > 0],
    "concatenate": lambda d: da.concatenate([d, d], 1),
    "stack": lambda d: da.stack([d, d]),
    "transpose": lambda d: d.T,
    "rechunk": lambda d: d.rechunk((4, 6)),
    "where": lambda d: da.where(d > 0, d, 0),
    "astype": lambda d: d.astype(np.float32),
    "round": lambda d: d.round(2),
    "norm": lambda d: da.linalg.norm(d, axis=1),
    "topk": lambda d: da.topk(d, 2, axis=1),
    "argtopk": lambda d: da.argtopk(d, -3, axis=0),
    "tril": lambda d: da.tril(d),
    "map_blocks": lambda d: d.map_blocks(lambda b: b * 2),
    "vdot": lambda d: da.vdot(d, d),
}


@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
def test_operations_match_numpy(op):
    d, n = pair()
    check(op(d), op(n))


def test_reshape_that_merges_chunks():
    d, n = pair(chunks=(4, 6))
    check(d.reshape(48), n.reshape(48))


def test_contractions_run_in_the_kernel_layer():
    d, n = pair()
    for op in (lambda d: d @ d.T, lambda d: da.einsum("ij,kj->ik", d, d), lambda d: da.tensordot(d, d.T, axes=1)):
        with kernels.count_calls() as calls:
            result = op(d).compute()
        assert sum(calls.values()) > 0, "no contraction reached trn_backend.kernels"
        assert_same(result, op(n).compute(), rtol=1e-12)


def test_creation_with_meta_and_like():
    x = xp.asarray(np.zeros(2, dtype=np.float32))
    d, _ = pair()
    made = {
        "zeros": (da.zeros((4, 6), chunks=2, meta=x), np.zeros((4, 6))),
        "ones": (da.ones((4, 6), chunks=2, dtype=np.float32, meta=x), np.ones((4, 6), np.float32)),
        "full": (da.full((3, 5), 2.5, chunks=2, meta=x), np.full((3, 5), 2.5)),
        "zeros_like": (da.zeros_like(d), np.zeros_like(DATA)),
        "ones_like-shape": (da.ones_like(d, shape=(3, 4)), np.ones((3, 4))),
        "full_like": (da.full_like(d, 7), np.full_like(DATA, 7)),
        "arange": (da.arange(10, chunks=3, like=x), np.arange(10)),
        "tri": (da.tri(4, chunks=2, like=x), np.tri(4)),
        "asarray": (da.asarray([1.0, 2.0], like=x), np.asarray([1.0, 2.0])),
    }
    for name, (result, expected) in made.items():
        assert type(result._meta) is xp.NeuronArray, name
        assert_same(result.compute(), expected)
    empty = da.empty((4, 6), chunks=2, meta=x).compute()
    assert type(empty) is xp.NeuronArray and empty.shape == (4, 6)


def test_tokens_are_deterministic_and_follow_the_data(monkeypatch):
    def no_pickling(*args, **kwargs):
        raise AssertionError("a NeuronArray was pickled to be tokenized")

    monkeypatch.setattr(pickle, "dumps", no_pickling)
    monkeypatch.setattr(cloudpickle, "dumps", no_pickling)
    x = xp.asarray(DATA.copy())
    with dask.config.set({"tokenize.ensure-deterministic": True}):
        token = tokenize(x)
        assert token == tokenize(x) == tokenize(xp.asarray(DATA.copy()))
        others = [xp.asarray(DATA.astype(np.float32)), xp.asarray(DATA + 1), xp.reshape(x, (6, 8)), x[::2], x.mT]
        assert len({tokenize(o) for o in others} | {token}) == len(others) + 1
        x[0, 0] = 100.0
        assert tokenize(x) != token
        assert tokenize(xp.asarray(np.float64(2.0))) != tokenize(xp.asarray(np.float64(3.0)))


def test_from_array_names_are_deterministic():
    a, b = xp.asarray(DATA.copy()), xp.asarray(DATA.copy())
    assert da.from_array(a, chunks=3).name == da.from_array(b, chunks=3).name
    assert da.from_array(a, chunks=3).name != da.from_array(xp.asarray(DATA * 2), chunks=3).name


# ---------------------------------------------------------------- ndarray methods (dask's chunk code calls them)

BASE = np.arange(12, dtype=np.float64).reshape(3, 4) - 5

METHODS = {
    "sum": lambda a: a.sum(0),
    "sum-keepdims": lambda a: a.sum(axis=1, keepdims=True),
    "mean": lambda a: a.mean(),
    "std": lambda a: a.std(ddof=1),
    "var": lambda a: a.var(axis=0),
    "max": lambda a: a.max(axis=0),
    "min": lambda a: a.min(),
    "prod": lambda a: a.prod(axis=1),
    "any": lambda a: a.any(axis=0),
    "all": lambda a: a.all(),
    "argmax": lambda a: a.argmax(),
    "argmin": lambda a: a.argmin(axis=1),
    "cumsum": lambda a: a.cumsum(),
    "cumprod": lambda a: a.cumprod(axis=1),
    "reshape-ints": lambda a: a.reshape(4, 3),
    "reshape-tuple": lambda a: a.reshape((2, -1)),
    "reshape-int": lambda a: a.reshape(12),
    "transpose": lambda a: a.transpose(),
    "transpose-ints": lambda a: a.transpose(1, 0),
    "transpose-tuple": lambda a: a.transpose((1, 0)),
    "astype": lambda a: a.astype(np.float32),
    "astype-int": lambda a: a.astype("int64"),
    "astype-nocopy": lambda a: a.astype(np.float64, copy=False),
    "copy": lambda a: a.copy(),
    "flatten": lambda a: a.flatten(),
    "ravel": lambda a: a.ravel(),
    "squeeze": lambda a: a[:1].squeeze(),
    "conj": lambda a: a.conj(),
    "conjugate": lambda a: a.conjugate(),
    "dot": lambda a: a.dot(a.T),
    "clip": lambda a: a.clip(-1, 3),
    "round": lambda a: (a / 3).round(2),
    "swapaxes": lambda a: a.swapaxes(0, 1),
    "take": lambda a: a.take([0, 2], axis=1),
    "repeat": lambda a: a.repeat(2),
    "trace": lambda a: a.trace(),
    "diagonal": lambda a: a.diagonal(1),
    "argsort": lambda a: a.argsort(axis=0),
    "searchsorted": lambda a: a[0].searchsorted(-3.5),
}


@pytest.mark.parametrize("method", METHODS.values(), ids=METHODS.keys())
def test_ndarray_methods_match_numpy(method):
    assert_same(method(xp.asarray(BASE.copy())), method(BASE.copy()))


def test_ndarray_methods_with_python_results():
    x = xp.asarray(BASE.copy())
    assert x.item(5) == BASE.item(5) and x.item((2, 1)) == BASE.item((2, 1)) and x.item(1, 3) == BASE.item(1, 3)
    assert xp.asarray(np.array([4], dtype=np.uint64)).item() == 4
    assert x.tolist() == BASE.tolist()
    assert (x.nbytes, x.itemsize) == (BASE.nbytes, BASE.itemsize)
    assert all(type(i) is xp.NeuronArray for i in x.nonzero())
    assert x.flatten()._t.data_ptr() != x._t.data_ptr() and x.copy()._t.data_ptr() != x._t.data_ptr()
    with pytest.raises(TypeError, match="exactly one element"):
        x.item()


def test_ndarray_method_errors():
    x = xp.asarray(BASE.copy())
    with pytest.raises(TypeError, match="casting='safe'"):
        x.astype(np.float32, casting="safe")
    with pytest.raises(ValueError, match="C-ordered"):
        x.astype(np.float32, order="F")
    with pytest.raises(ValueError, match="C-ordered"):
        x.copy(order="F")


# ---------------------------------------------------------------- NumPy functions dask's chunk code calls


def test_unravel_index_and_ravel_multi_index_match_numpy():
    flat = np.array([0, 5, 23, 17], dtype=np.int64)
    for order in ("C", "F"):
        for got, want in zip(
            np.unravel_index(xp.asarray(flat), (2, 3, 4), order=order),
            np.unravel_index(flat, (2, 3, 4), order=order),
            strict=True,
        ):
            assert_same(got, want)
    coords = (np.array([0, 1, 1]), np.array([2, 0, 3]))
    device_coords = tuple(xp.asarray(c) for c in coords)
    for kwargs, dims in (
        ({}, (2, 4)),
        ({"order": "F"}, (2, 4)),
        ({"mode": "wrap"}, (2, 3)),
        ({"mode": ("clip", "wrap")}, (2, 3)),
    ):
        assert_same(np.ravel_multi_index(device_coords, dims, **kwargs), np.ravel_multi_index(coords, dims, **kwargs))
    assert_same(
        np.ravel_multi_index((xp.asarray(np.array([1])), xp.asarray(np.int64(2))), (3, 4)),
        np.ravel_multi_index((np.array([1]), np.int64(2)), (3, 4)),
    )


def test_unravel_and_ravel_errors():
    with pytest.raises(ValueError, match="out of bounds"):
        np.unravel_index(xp.asarray(np.array([24])), (2, 3, 4))
    with pytest.raises(TypeError, match="integer"):
        np.unravel_index(xp.asarray(np.array([1.0])), (2, 3))
    with pytest.raises(ValueError, match="dimension 1 of length 3"):
        np.ravel_multi_index((xp.asarray(np.array([0])), xp.asarray(np.array([3]))), (2, 3))


@pytest.mark.parametrize("kth", [0, 3, -1, [1, 4]])
@pytest.mark.parametrize("axis", [0, -1, None])
def test_partition_and_argpartition_are_valid_partitions(kth, axis):
    a = RNG.standard_normal((5, 6))
    x = xp.asarray(a)
    parted, order = to_numpy(np.partition(x, kth, axis=axis)), to_numpy(np.argpartition(x, kth, axis=axis))
    reference = np.sort(a, axis=axis)
    for k in np.atleast_1d(kth):
        assert np.array_equal(
            np.take(parted, k, axis=-1 if axis is None else axis),
            np.take(reference, k, axis=-1 if axis is None else axis),
        )
    gathered = np.take_along_axis(a.ravel() if axis is None else a, order, axis=-1 if axis is None else axis)
    assert np.array_equal(gathered, parted)


def test_partition_checks_kth():
    with pytest.raises(ValueError, match="out of bounds"):
        np.partition(xp.asarray(np.arange(4.0)), 4)
    with pytest.raises(TypeError, match="integer"):
        np.argpartition(xp.asarray(np.arange(4.0)), 1.5)


COMPLEX = np.array([[1 + 2j, 3 - 1j], [0.5j, 2.0]])


def test_dask_reductions_of_complex_chunks() -> None:
    d = da.from_array(xp.asarray(COMPLEX), chunks=1)
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.testing.assert_allclose(np.asarray(d.var().compute()), np.var(COMPLEX))
        np.testing.assert_allclose(np.asarray(d.std().compute()), np.std(COMPLEX))
        np.testing.assert_array_equal(np.asarray(da.tril(d).compute()), np.tril(COMPLEX))


def test_dask_tokens_of_device_arrays_do_not_copy_to_the_host() -> None:
    x = xp.NeuronArray(torch.empty(4, device="meta"))  # a device with no host copy at all
    token = x.__dask_tokenize__()
    assert token == x.__dask_tokenize__()
    x._t.add_(1)  # an in-place write bumps torch's version counter, and so the token
    assert token != x.__dask_tokenize__()
