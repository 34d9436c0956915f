"""The ndarray attributes NumPy users reach for (``.real``, ``.imag``, ``.fill``, ``.view``, ``.strides``,
``.flat``, ``.nbytes``, ``.itemsize``), the zero-copy bridge to and from torch, and NumPy ufuncs from outside the
dispatch table (SciPy's), each against NumPy 2 on the same data."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.special
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import COMPLEX_NAMES, FLOAT_NAMES, INT_NAMES, arrays, from_numpy, shapes, to_numpy

SURFACE_DTYPES = INT_NAMES + FLOAT_NAMES + COMPLEX_NAMES + ("bool", "uint16", "uint32", "uint64")


def _equal(ours: xp.NeuronArray, theirs: np.ndarray) -> None:
    assert isinstance(ours, xp.NeuronArray)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(to_numpy(ours), theirs)


# slicings of a 3-d array whose NumPy views have the same strides as torch's (positive steps, transposes)
VIEWS = [
    lambda a: a,
    lambda a: a[1:],
    lambda a: a[:, ::2],
    lambda a: a[..., 1:3],
    lambda a: np.moveaxis(a, 0, -1) if isinstance(a, np.ndarray) else xp.moveaxis(a, 0, -1),
    lambda a: a[0],
]


# --- real and imag ---

@given(st.sampled_from(SURFACE_DTYPES).flatmap(lambda d: arrays(d, shapes())))
def test_real_and_imag_read_as_numpy(a):
    x = from_numpy(a)
    _equal(x.real, a.real)
    _equal(x.imag, a.imag)


@given(st.sampled_from(COMPLEX_NAMES).flatmap(lambda d: arrays(d, shapes(min_dims=2))), st.sampled_from(VIEWS[:4]))
def test_the_parts_of_a_complex_array_are_views_that_write_through(a, view):
    x, expected = from_numpy(a), a.copy()
    part_x, part_a = view(x).real, view(expected).real
    part_x[...] = 1.5
    part_a[...] = 1.5
    view(x).imag[...] = -2.0
    view(expected).imag[...] = -2.0
    _equal(x, expected)
    x.real = 3.0  # the setters, as NumPy's
    expected.real = 3.0
    x.imag = xp.asarray(4.0)
    expected.imag = 4.0
    _equal(x, expected)


def test_parts_of_a_view_with_negative_steps_write_into_its_base():
    a = np.array([1 + 2j, 3 + 4j, 5 + 6j], dtype=np.complex64)
    x, expected = from_numpy(a), a.copy()
    x[::-1].real[0] = 9.0
    expected[::-1].real[0] = 9.0
    x[::-1].imag[1] = 8.0
    expected[::-1].imag[1] = 8.0
    _equal(x, expected)
    assert x[::-1].real.strides == expected[::-1].real.strides


def test_the_real_part_of_a_real_array_is_the_array_and_its_imag_is_read_only():
    a = np.arange(4.0)
    x = from_numpy(a)
    assert x.real is x and a.real is a  # NumPy's answer
    x.real[1] = 7.0
    assert to_numpy(x)[1] == 7.0
    zeros = x.imag
    with pytest.raises(ValueError, match="read-only"):  # NumPy: "assignment destination is read-only"
        zeros[0] = 1.0
    with pytest.raises(ValueError):
        a.imag[0] = 1.0
    with pytest.raises(TypeError, match="float64 has no imaginary part"):
        x.imag = 1.0
    with pytest.raises(TypeError):
        a.imag = 1.0


# --- fill ---

FILL_VALUES = st.one_of(
    st.integers(-(2**65), 2**65), st.floats(-1e6, 1e6), st.booleans(),
    st.builds(complex, st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)),
)


@given(st.sampled_from(SURFACE_DTYPES), shapes(), FILL_VALUES)
def test_fill_converts_as_numpy_does(dtype, shape, value):
    a = np.zeros(shape, dtype=dtype)
    x = from_numpy(a)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy's ComplexWarning when a complex fills a real array
            a.fill(value)
    except (OverflowError, TypeError, ValueError) as e:  # NumPy refuses: so must we, with the same kind of error
        with pytest.raises(type(e)):
            x.fill(value)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x.fill(value) is None
    _equal(x, a)


def test_fill_writes_through_views_and_takes_0d_arrays():
    a = np.arange(6.0).reshape(2, 3)
    x, expected = from_numpy(a), a.copy()
    x[:, ::-1][0].fill(xp.asarray(5.0))
    expected[:, ::-1][0].fill(5.0)
    _equal(x, expected)
    with pytest.raises(ValueError, match=r"scalar or a 0-d array, got shape \(2,\)"):
        x.fill(xp.asarray([1.0, 2.0]))


# --- view ---

VIEW_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64",
               "complex64", "complex128", "bool")


@given(st.sampled_from(VIEW_DTYPES[:-1]), hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
       st.sampled_from(VIEW_DTYPES[:-1]), st.integers(0, 2**31))
def test_view_reinterprets_the_bytes_as_numpy_does(source, shape, target, seed):
    raw = np.random.default_rng(seed).integers(0, 256, size=int(np.prod(shape)) * np.dtype(source).itemsize,
                                               dtype=np.uint8)
    a = raw.view(source).reshape(shape)
    x = from_numpy(a)
    try:
        expected = a.view(target)
    except ValueError:  # NumPy refuses (a 0-d array, or a last axis the new size does not divide): so do we
        with pytest.raises(ValueError, match=f"x.view\\({target}\\)"):
            x.view(target)
        return
    ours = x.view(target)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    np.testing.assert_array_equal(_bytes(to_numpy(ours)), _bytes(expected))  # bit for bit (NaNs included)
    ours[...] = xp.zeros(ours.shape, dtype=ours.dtype)  # the same memory
    assert not _bytes(to_numpy(x)).any()


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


@pytest.mark.parametrize("view", VIEWS, ids=range(len(VIEWS)))
def test_view_of_a_strided_array_agrees_with_numpy_or_says_why_not(view):
    a = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    x = from_numpy(a)
    for target in ("int32", "float64", "complex64", "uint8"):
        try:
            expected = view(a).view(target)
        except ValueError:
            with pytest.raises(ValueError, match="x.view"):
                view(x).view(target)
            continue
        try:
            ours = view(x).view(target)
        except ValueError as e:  # torch's own alignment limit beyond NumPy's, stated
            assert "torch cannot view" in str(e)
            continue
        np.testing.assert_array_equal(to_numpy(ours), expected)


def test_view_errors_and_the_plain_view():
    x = from_numpy(np.arange(3.0))
    v = x.view()
    assert v is not x and v.shape == x.shape
    v[0] = 9.0
    assert to_numpy(x)[0] == 9.0
    with pytest.raises(ValueError, match=r"0-d array cannot change its item size \(8 -> 4 bytes\)"):
        from_numpy(np.array(1.0)).view(np.float32)
    with pytest.raises(ValueError, match=r"x.view\(complex128\) of a float64 array of shape \(3,\)"):
        x.view(xp.complex128)
    with pytest.raises(ValueError, match="runs backwards"):
        x[::-1].view(np.float32)
    with pytest.raises(TypeError, match="ndarray subclasses"):
        x.view(np.ndarray)
    with pytest.raises(TypeError):
        x.view("U4")


# --- strides, nbytes, itemsize ---

@given(st.sampled_from(SURFACE_DTYPES), hnp.array_shapes(min_dims=3, max_dims=3, min_side=1, max_side=5),
       st.sampled_from(VIEWS))
def test_strides_nbytes_and_itemsize_are_numpys(dtype, shape, view):
    a = np.zeros(shape, dtype=dtype)
    x, expected = view(from_numpy(a)), view(a)
    assert (x.strides, x.nbytes, x.itemsize) == (expected.strides, expected.nbytes, expected.itemsize)


def test_strides_of_broadcasts_and_negative_steps():
    a = np.arange(12.0).reshape(3, 4)
    x = from_numpy(a)
    assert xp.broadcast_to(x[0], (5, 4)).strides == np.broadcast_to(a[0], (5, 4)).strides
    r, expected = x[::-1, ::2], a[::-1, ::2]
    assert (r.strides, r.nbytes, r.itemsize) == (expected.strides, expected.nbytes, expected.itemsize)


# --- flat ---

@given(st.sampled_from(SURFACE_DTYPES).flatmap(lambda d: arrays(d, shapes(min_dims=1))), st.data())
def test_flat_reads_as_numpy(a, data):
    x = from_numpy(a)
    assert len(x.flat) == len(a.flat)
    _equal(x.flat.copy(), a.flat.copy())
    if a.size:
        i = data.draw(st.integers(-a.size, a.size - 1))
        _equal(x.flat[i], np.asarray(a.flat[i]))
        s = data.draw(st.slices(a.size))
        _equal(x.flat[s], a.flat[s])
    elements = list(x.flat)
    assert all(type(e) is xp.NeuronArray and e.shape == () for e in elements)
    np.testing.assert_array_equal(np.array([to_numpy(e) for e in elements], dtype=a.dtype).reshape(-1),
                                  a.reshape(-1))


def test_flat_reads_are_copies_and_writes_go_into_any_layout():
    a = np.arange(6.0).reshape(2, 3)
    x, expected = from_numpy(a), a.copy()
    part = x.flat[1:3]
    part[0] = -1.0
    assert to_numpy(x)[0, 1] == 1.0  # a copy, as NumPy's flatiter returns
    x.flat[[0, 5]] = 7.0
    expected.flat[[0, 5]] = 7.0
    _equal(x, expected)
    x.T.flat[1] = -3.0  # strided, and reversed: written through x's own indexing
    expected.T.flat[1] = -3.0
    x[:, ::-1].flat[1:3] = 4.0
    expected[:, ::-1].flat[1:3] = 4.0
    _equal(x, expected)
    with pytest.raises(IndexError):
        x.T.flat[6] = 1.0


# --- torch ---

@given(st.sampled_from(SURFACE_DTYPES).flatmap(lambda d: arrays(d, shapes(min_dims=1))))
def test_from_torch_and_to_torch_share_memory(a):
    t = torch.from_numpy(a.copy())
    x = xp.from_torch(t)
    assert x.to_torch() is t and x.dtype == a.dtype and x.shape == a.shape
    if a.size:
        t[(0,) * t.dim()] = 0
        assert x[(0,) * t.dim()].item() == 0  # a write through the tensor is seen by the array
        x[...] = xp.ones(x.shape, dtype=x.dtype)
        assert bool((t == 1).all())  # and the other way
    _equal(xp.from_torch(torch.from_numpy(a)), a)


def test_the_torch_bridge_refuses_what_it_cannot_share():
    with pytest.raises(TypeError, match="from_torch\\(\\) wraps a torch.Tensor, got ndarray"):
        xp.from_torch(np.zeros(3))
    with pytest.raises(TypeError, match="from_torch\\(\\) does not support torch dtype torch.float8_e4m3fn"):
        xp.from_torch(torch.zeros(3, dtype=torch.float8_e4m3fn))
    with pytest.raises(ValueError, match="negative steps"):
        from_numpy(np.arange(3.0))[::-1].to_torch()
    assert torch.from_dlpack(from_numpy(np.arange(3.0))).tolist() == [0.0, 1.0, 2.0]  # DLPack, too


# --- NumPy ufuncs from outside the dispatch table ---

# SciPy's ufuncs themselves: with SCIPY_ARRAY_API=1 (set for the whole test run) scipy.special.erf is SciPy's
# array-API wrapper around them (test_scipy_ufuncs_without_the_array_api_switch covers the public names without it)
FOREIGN = [scipy.special._ufuncs.erf, scipy.special._ufuncs.gamma, scipy.special._ufuncs.expit,
           scipy.special._ufuncs.fresnel, np.cbrt, np.modf, np.frexp]


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
        _equal(o, np.asarray(t))


def test_foreign_ufunc_methods_out_and_unholdable_results():
    a = np.linspace(0.1, 2.0, 6)
    x = from_numpy(a)
    _equal(np.logaddexp2.reduce(x), np.asarray(np.logaddexp2.reduce(a)))
    out = from_numpy(np.zeros(6))
    assert scipy.special._ufuncs.erf(x, out=out) is out
    _equal(out, scipy.special._ufuncs.erf(a))
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
