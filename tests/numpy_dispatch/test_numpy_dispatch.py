"""NumPy functions on NeuronArray (NEP 18) against NumPy on ndarrays; __array__, DLPack, and the generated docs.

Every function in the dispatch table has at least one case in CASES (test_every_handled_function_has_a_case),
each run on NeuronArrays and on the same ndarrays through NumPy. Hypothesis draws shapes and dtypes where the
answer depends on them. Integer input of floating-point functions (mean, var, std, linalg, fft) computes in the
default float, float64 on the CPU, as NumPy. Known difference from NumPy, pinned here: reductions to a scalar
give a 0-d NeuronArray where NumPy gives a NumPy scalar.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import pathlib
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import DTYPE_NAMES, INT_NAMES, REAL_NAMES, arrays, from_numpy, shapes, to_numpy
from trn_backend import kernels
from trn_backend.numpy_dispatch import BEGIN, END, handled_functions, markdown
from trn_backend.numpy_dispatch._registry import TABLE, Binder, qualname

ROOT = pathlib.Path(__file__).resolve().parents[2]
rng = np.random.default_rng(1234)

M = rng.standard_normal((3, 4))
N = rng.standard_normal((4, 5))
T3 = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(4)
W = rng.standard_normal(4)
SQ = rng.standard_normal((3, 3))
SPD = SQ @ SQ.T + 3 * np.eye(3)
STACK_SPD = np.stack([SPD, 2 * SPD])
I = rng.integers(-5, 6, (3, 4))
SORTED = np.sort(rng.standard_normal(6))
BOOL = rng.standard_normal((3, 4)) > 0
CPLX = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
F32 = rng.standard_normal((3, 4)).astype(np.float32)
WITH_NAN = np.array([3.0, np.nan, 1.0, np.nan, 1.0, -2.0])


# ---------------------------------------------------------------- comparison

def _neuron(value: Any) -> Any:
    """ndarrays (also inside lists and tuples) as NeuronArrays."""
    if isinstance(value, np.ndarray):
        return from_numpy(value)
    if isinstance(value, list):
        return [_neuron(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_neuron(v) for v in value)
    return value


def _rtol(dtype: np.dtype) -> float:
    return 2e-5 if dtype in (np.float32, np.complex64) else 1e-10


def check(ours: Any, theirs: Any, *, dtype: str | None = None, atol: float = 0.0) -> None:
    """ours (NeuronArrays) equals theirs (NumPy's answer): arrays by dtype (or the ``dtype`` we document
    instead), shape and values; tuples and lists element by element; Python values exactly."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)), type(ours)
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs, strict=True):
            check(o, t, dtype=dtype, atol=atol)
        return
    if not isinstance(theirs, (np.ndarray, np.generic)):
        assert not isinstance(ours, xp.NeuronArray) and ours == theirs, (ours, theirs)
        return
    assert isinstance(ours, xp.NeuronArray), type(ours)
    got, expected = to_numpy(ours), np.asarray(theirs)
    assert got.dtype == np.dtype(dtype or expected.dtype), (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=_rtol(got.dtype), atol=atol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def run_both(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            theirs = func(*args, **kwargs)
    return func(*_neuron(args), **_neuron(kwargs)), theirs


# ---------------------------------------------------------------- the table, case by case

@dataclasses.dataclass
class Case:
    func: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    dtype: str | None = None  # the dtype we document where it differs from NumPy's
    atol: float = 0.0
    post: Callable[[Any], Any] | None = None  # applied to both answers (e.g. sign-free parts of a decomposition)

    def __str__(self) -> str:
        return f"{self.func.__module__}.{self.func.__name__}"


def _abs_parts(result: Any) -> Any:
    """Decompositions up to signs: compare magnitudes."""
    return type(result)(*(np.abs(np.asarray(r)) for r in result)) if isinstance(result, tuple) else result


def _abs(result: Any) -> Any:
    return np.abs(np.asarray(result))


CASES = [
    # contractions
    Case(np.einsum, ("ij,jk->ik", M, N)),
    Case(np.einsum, ("ij,jk,kl->il", M, N, rng.standard_normal((5, 2))), {"optimize": True}),
    Case(np.einsum, (M, [0, 1], N, [1, 2], [0, 2])),
    Case(np.einsum, ("ii->i", SQ)),
    Case(np.einsum_path, ("ij,jk,kl->il", M, N, rng.standard_normal((5, 2))), {"optimize": "greedy"},
         post=lambda r: r[0]),
    Case(np.tensordot, (T3, rng.standard_normal((3, 4, 2))), {"axes": 2}),
    Case(np.tensordot, (M, N), {"axes": ([1], [0])}),
    Case(np.dot, (M, N)), Case(np.dot, (T3, V)), Case(np.dot, (V, W)), Case(np.dot, (M, 2.0)),
    Case(np.dot, (T3, rng.standard_normal((2, 4, 3)))),
    Case(np.vdot, (CPLX, CPLX[::-1])), Case(np.vdot, (M, M)),
    Case(np.inner, (M, rng.standard_normal((2, 4)))), Case(np.inner, (V, W)),
    Case(np.outer, (V, M)), Case(np.kron, (SQ, M)), Case(np.kron, (V, M)), Case(np.kron, (I, I[:2, :2])),
    Case(np.trace, (T3,), {"axis1": 1, "axis2": 2}), Case(np.trace, (I,), {"offset": 1}),
    Case(np.diagonal, (T3,), {"offset": -1, "axis1": 2, "axis2": 0}),
    Case(np.linalg.matmul, (M, N)), Case(np.linalg.tensordot, (M, N), {"axes": 1}),
    Case(np.linalg.vecdot, (M, M)), Case(np.linalg.outer, (V, W)),
    Case(np.linalg.cross, (M[:, :3], N[:3, :3].T)),
    # shapes and joins
    Case(np.transpose, (T3,)), Case(np.transpose, (T3,), {"axes": (1, -1, 0)}),
    Case(np.moveaxis, (T3, 0, -1)), Case(np.swapaxes, (T3, 0, 2)),
    Case(np.reshape, (T3, (4, -1))), Case(np.reshape, (T3, 24)), Case(np.ravel, (T3,)),
    Case(np.concatenate, ([M, N.T[:2]],)), Case(np.concatenate, ([M, I],), {"axis": None}),
    Case(np.concatenate, ([I, I],), {"axis": 1, "dtype": "float32"}),
    Case(np.stack, ([V, W],), {"axis": 1}), Case(np.vstack, ([V, W],)), Case(np.vstack, ([M, I],)),
    Case(np.hstack, ([V, W],)), Case(np.hstack, ([M, I],)), Case(np.dstack, ([M, M],)),
    Case(np.column_stack, ([V, W],)), Case(np.atleast_1d, (M,)), Case(np.atleast_1d, (np.float64(2.0), V)),
    Case(np.atleast_2d, (V,)), Case(np.atleast_3d, (V, M)),
    Case(np.split, (T3, 2)), Case(np.split, (M, [1, 3]), {"axis": 1}),
    Case(np.array_split, (np.arange(7), 3)), Case(np.hsplit, (M, 2)), Case(np.vsplit, (M, [1])),
    Case(np.dsplit, (T3, [1, 3])),
    Case(np.squeeze, (M[None, :, None],)), Case(np.squeeze, (M[None],), {"axis": 0}),
    Case(np.expand_dims, (M, (0, 3))), Case(np.broadcast_to, (V, (3, 4))),
    Case(np.broadcast_arrays, (V, M[:, :1])), Case(np.flip, (T3,)), Case(np.flip, (T3,), {"axis": (0, 2)}),
    Case(np.unstack, (T3,), {"axis": 1}), Case(np.unstack, (V,)),
    Case(np.roll, (T3, 2)), Case(np.roll, (T3, (1, -1)), {"axis": (0, 2)}), Case(np.tile, (M, 2)),
    Case(np.tile, (V, (2, 1, 2))), Case(np.repeat, (M, 2)), Case(np.repeat, (M, [1, 0, 2]), {"axis": 0}),
    Case(np.tril, (M,)), Case(np.triu, (T3, -1)), Case(np.meshgrid, (V, W[:3])),
    Case(np.meshgrid, (V, W[:3]), {"indexing": "ij"}),
    Case(np.shape, (T3,)), Case(np.ndim, (T3,)), Case(np.size, (T3,)), Case(np.size, (T3, -1)),
    # indexing and searching
    Case(np.where, (M > 0, M, 0.0)), Case(np.where, (I, I, -I)), Case(np.where, (M > 0,)),
    Case(np.nonzero, (I,)), Case(np.flatnonzero, (I,)), Case(np.count_nonzero, (I,), {"axis": 0}),
    Case(np.searchsorted, (SORTED, V)), Case(np.searchsorted, (SORTED, 0.5), {"side": "right"}),
    Case(np.searchsorted, (SORTED[::-1], V), {"sorter": np.arange(5, -1, -1)}),
    Case(np.take, (M, [[0, 2], [1, 1]]), {"axis": 1}), Case(np.take, (M, [5, -1])),
    Case(np.take_along_axis, (M, np.argsort(M, axis=1)), {"axis": 1}),
    Case(np.take_along_axis, (V, np.argsort(V), None)),
    Case(np.isin, (I, [0, 1, 2])), Case(np.isin, (I, [0, 1]), {"invert": True}),
    Case(np.sort, (M,)), Case(np.sort, (M,), {"axis": None}), Case(np.sort, (WITH_NAN,), {"kind": "stable"}),
    Case(np.argsort, (I,), {"kind": "stable"}), Case(np.argsort, (M,), {"axis": 0, "stable": True}),
    Case(np.unique, (I,)), Case(np.unique, (WITH_NAN,)), Case(np.unique, (WITH_NAN,), {"equal_nan": False}),
    Case(np.unique, (I,), {"return_index": True, "return_inverse": True, "return_counts": True}),
    Case(np.unique_values, (np.array([3, 1, 1, 2]),), post=np.sort),
    Case(np.unique_counts, (np.array([3, 1, 1]),), post=lambda r: np.sort(np.stack(r), axis=1)),
    Case(np.unique_inverse, (np.array([[3, 1], [1, 2]]),), post=lambda r: tuple(r)),
    Case(np.unique_all, (np.array([3, 1, 1, 2]),), post=lambda r: tuple(r)),
    # reductions
    Case(np.sum, (I,)), Case(np.sum, (M,), {"axis": 1, "keepdims": True}), Case(np.sum, (M, 0, "float32")),
    Case(np.sum, (I,), {"initial": 10}),
    Case(np.prod, (I,), {"axis": 0}), Case(np.prod, (M,), {"initial": 2.0}),
    Case(np.max, (M,)), Case(np.max, (M,), {"axis": 0, "initial": 0.5}), Case(np.amax, (I,), {"axis": 1}),
    Case(np.min, (T3,), {"axis": (0, 2), "keepdims": True}), Case(np.amin, (WITH_NAN,)),
    Case(np.min, (np.zeros((0, 3)),), {"axis": 0, "initial": 7.0}),
    Case(np.ptp, (M,), {"axis": 1}), Case(np.argmax, (M,)), Case(np.argmax, (M,), {"axis": 1, "keepdims": True}),
    Case(np.argmin, (WITH_NAN,)), Case(np.argmin, (I,), {"axis": 0}),
    Case(np.mean, (M,)), Case(np.mean, (M,), {"axis": (0, 1), "keepdims": True}), Case(np.mean, (CPLX, 0)),
    Case(np.mean, (I,)), Case(np.mean, (I,), {"dtype": np.float64}),
    Case(np.var, (M,), {"ddof": 1}), Case(np.var, (M,), {"axis": 0, "correction": 1}),
    Case(np.std, (T3,), {"axis": 1}), Case(np.std, (I,)),
    Case(np.cumsum, (M,)), Case(np.cumsum, (I,), {"axis": 1}), Case(np.cumsum, (BOOL,), {"axis": 0}),
    Case(np.cumprod, (M,), {"axis": 0}), Case(np.cumprod, (I, None, np.float64)),
    Case(np.cumulative_sum, (I,), {"axis": 1, "include_initial": True}),
    Case(np.cumulative_prod, (V,)),
    Case(np.all, (BOOL,), {"axis": 0}), Case(np.all, (I,)), Case(np.any, (BOOL,), {"axis": 1, "keepdims": True}),
    Case(np.any, (I,)), Case(np.diff, (M,)), Case(np.diff, (M,), {"n": 2, "axis": 0}),
    Case(np.diff, (M,), {"prepend": 0.0, "append": M[:, :1]}),
    # element-wise functions
    Case(np.clip, (M, -0.5, 0.5)), Case(np.clip, (I,), {"min": -2}), Case(np.clip, (I, 0.5, 2.5)),
    Case(np.clip, (M, -M[0], None)),
    Case(np.round, (M * 100, 1)), Case(np.round, (M * 100, -1)), Case(np.round, (M,)),
    Case(np.round, (np.array([15, 25, -35, 44, 250]), -1)), Case(np.round, (I, 2)),
    Case(np.around, (np.array([0.5, 1.5, 2.5, -0.5]),)),
    Case(np.isclose, (M, M + 1e-9)), Case(np.isclose, (np.array([np.inf, np.nan, 1.0, 0.0]),
                                                       np.array([np.inf, np.nan, 1.1, 1e-9])),
                                          {"equal_nan": True}),
    Case(np.isclose, (I, I + 1), {"atol": 1.0}), Case(np.isclose, (M, 0.0), {"atol": 0.5}),
    Case(np.allclose, (M, M + 1e-9)), Case(np.allclose, (M, M + 1e-3)),
    Case(np.array_equal, (M, M)), Case(np.array_equal, (M, M[:2])),
    Case(np.array_equal, (WITH_NAN, WITH_NAN), {"equal_nan": True}), Case(np.array_equal, (WITH_NAN, WITH_NAN)),
    Case(np.real, (CPLX,)), Case(np.real, (M,)), Case(np.imag, (CPLX,)), Case(np.imag, (M,)),
    # creation from a prototype
    Case(np.zeros_like, (M,)), Case(np.zeros_like, (I,), {"dtype": np.float32, "shape": (2, 2)}),
    Case(np.ones_like, (I,), {"dtype": "uint16"}), Case(np.full_like, (M, 7.0)),
    Case(np.full_like, (I, 3), {"shape": 5}), Case(np.empty_like, (M,), post=np.shape),
    Case(np.copy, (T3,)), Case(np.astype, (M, np.int32)),
    # linalg
    Case(np.linalg.norm, (M,)), Case(np.linalg.norm, (V, 1)), Case(np.linalg.norm, (V, np.inf)),
    Case(np.linalg.norm, (M, "nuc")), Case(np.linalg.norm, (M, -2)), Case(np.linalg.norm, (T3,), {"axis": 1}),
    Case(np.linalg.norm, (T3, 1, (2, 0)), {"keepdims": True}), Case(np.linalg.norm, (T3,), {"keepdims": True}),
    Case(np.linalg.norm, (I,)), Case(np.linalg.norm, (CPLX, "fro")),
    Case(np.linalg.solve, (SPD, V[:3])), Case(np.linalg.solve, (SPD, M)),
    Case(np.linalg.solve, (STACK_SPD, M)), Case(np.linalg.inv, (SPD,)), Case(np.linalg.det, (STACK_SPD,)),
    Case(np.linalg.slogdet, (SQ,), post=lambda r: tuple(r)),
    Case(np.linalg.eigh, (SPD,), post=_abs_parts),
    Case(np.linalg.eigh, (np.triu(SQ),), {"UPLO": "U"}, post=_abs_parts),
    Case(np.linalg.eigvalsh, (np.tril(SQ),)), Case(np.linalg.eigvalsh, (np.triu(SQ), "U")),
    Case(np.linalg.svd, (M,), {"compute_uv": False}), Case(np.linalg.svd, (SQ,), post=_abs_parts),
    Case(np.linalg.svd, (M,), {"full_matrices": False}, post=_abs_parts),
    Case(np.linalg.svdvals, (M,)),
    Case(np.linalg.qr, (M.T,), post=_abs_parts), Case(np.linalg.qr, (M.T, "complete"), post=_abs_parts),
    Case(np.linalg.qr, (M.T, "r"), post=_abs),
    Case(np.linalg.cholesky, (SPD,)), Case(np.linalg.cholesky, (SPD,), {"upper": True}),
    Case(np.linalg.matrix_rank, (M,)), Case(np.linalg.matrix_rank, (np.outer(V, W),)),
    Case(np.linalg.matrix_rank, (SQ,), {"tol": 10.0}), Case(np.linalg.matrix_rank, (V,), post=np.asarray),
    Case(np.linalg.matrix_rank, (SPD,), {"hermitian": True}),
    Case(np.linalg.pinv, (M,)), Case(np.linalg.pinv, (M,), {"rtol": 0.5}), Case(np.linalg.pinv, (M, 0.5)),
    Case(np.linalg.matrix_power, (SQ, 3)), Case(np.linalg.matrix_power, (SPD, -1)),
    Case(np.linalg.matrix_transpose, (T3,)), Case(np.matrix_transpose, (T3,)),
    Case(np.linalg.trace, (T3,), {"offset": 1}), Case(np.linalg.diagonal, (T3,)),
    Case(np.linalg.vector_norm, (T3,), {"axis": (0, 1), "ord": 3}),
    Case(np.linalg.matrix_norm, (T3,), {"ord": 1}),
    # fft
    Case(np.fft.fft, (CPLX,)), Case(np.fft.fft, (M,), {"n": 6, "axis": 0, "norm": "ortho"}),
    Case(np.fft.fft, (F32,)), Case(np.fft.ifft, (CPLX,), {"norm": "forward"}), Case(np.fft.rfft, (M,)),
    Case(np.fft.irfft, (CPLX,), {"n": 6}), Case(np.fft.hfft, (CPLX,)), Case(np.fft.ihfft, (M,)),
    Case(np.fft.fftn, (T3,)), Case(np.fft.fftn, (T3,), {"s": (4, 4), "axes": (0, 2)}),
    Case(np.fft.ifftn, (CPLX,)), Case(np.fft.rfftn, (T3,)), Case(np.fft.irfftn, (CPLX,)),
    Case(np.fft.fft2, (T3,)), Case(np.fft.ifft2, (T3,)), Case(np.fft.rfft2, (T3,)),
    Case(np.fft.irfft2, (T3 + 1j,), {"s": (3, 6)}),
    Case(np.fft.fftshift, (T3,)), Case(np.fft.fftshift, (T3,), {"axes": 1}), Case(np.fft.ifftshift, (M,)),
]


def _apply(case: Case, result: Any) -> Any:
    return case.post(result) if case.post else result


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        check(_neuron(ours), theirs, dtype=case.dtype, atol=case.atol)
    else:
        check(ours, theirs, dtype=case.dtype, atol=case.atol)


def _numpy_tree(value: Any) -> Any:
    """Our answer as NumPy (for post-processing with NumPy functions), structure kept."""
    if isinstance(value, xp.NeuronArray):
        return to_numpy(value)
    if isinstance(value, tuple):
        return type(value)(*map(_numpy_tree, value)) if hasattr(value, "_fields") else \
            tuple(map(_numpy_tree, value))
    if isinstance(value, list):
        return [_numpy_tree(v) for v in value]
    return value


# Test files with their own NumPy-comparison tables for the entries they cover.
_OWN_TABLES = ("test_numpy_statistics.py", "test_numpy_routines.py", "test_like.py", "test_dask.py",
               "test_special_values.py", "test_fill_values.py")


def test_every_handled_function_has_a_case() -> None:
    covered = {str(case) for case in CASES}
    tests = pathlib.Path(__file__).parents[1]
    elsewhere = "\n".join(next(tests.rglob(name)).read_text() for name in _OWN_TABLES)
    missing = [f for f in set(handled_functions()) - covered if f"np.{f.removeprefix('numpy.')}" not in elsewhere]
    assert not missing, sorted(missing)


def test_results_stay_neuron_arrays() -> None:
    a = from_numpy(M)
    for result in (np.sum(a), np.einsum("ij->j", a), np.linalg.norm(a), np.sort(a), np.fft.fft(a)):
        assert isinstance(result, xp.NeuronArray)
    for part in np.linalg.svd(from_numpy(SQ)):
        assert isinstance(part, xp.NeuronArray)


# ---------------------------------------------------------------- hypothesis: shapes and dtypes

@st.composite
def array_and_axis(draw, dtype_names=DTYPE_NAMES, min_dims=0, elements=None):
    dtype_name = draw(st.sampled_from(dtype_names))
    a = draw(arrays(dtype_name, shapes(min_dims=min_dims), elements=elements and elements(dtype_name)))
    axis = draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    return a, axis


def _small(dtype_name: str) -> st.SearchStrategy:
    """Values whose sums and products stay in range, so only rounding separates us from NumPy."""
    kind = np.dtype(dtype_name).kind
    if kind == "b":
        return st.booleans()
    if kind in "iu":
        return st.integers(0 if kind == "u" else -3, 3)
    # multiples of 1/8: no subnormal products (whose rounding torch and NumPy may do differently)
    return st.integers(-32, 32).map(lambda i: i / 8)


@settings(max_examples=60)
@given(data=array_and_axis(elements=_small), keepdims=st.booleans(),
       func=st.sampled_from([np.sum, np.prod, np.all, np.any, np.count_nonzero]))
def test_reductions_match_numpy(data, keepdims, func) -> None:
    a, axis = data
    check(*run_both(func, a, axis=axis, keepdims=keepdims))


@settings(max_examples=60)
@given(data=array_and_axis(REAL_NAMES, min_dims=1, elements=_small), keepdims=st.booleans(),
       func=st.sampled_from([np.max, np.min, np.amax, np.amin, np.argmax, np.argmin, np.ptp]))
def test_extremes_match_numpy(data, keepdims, func) -> None:
    a, axis = data
    if a.size == 0:
        return
    check(*run_both(func, a, axis=axis, keepdims=keepdims))


@settings(max_examples=40)
@given(data=array_and_axis(("float32", "float64", "complex128"), elements=_small), ddof=st.integers(0, 1),
       func=st.sampled_from([np.mean, np.var, np.std]))
def test_moments_match_numpy(data, ddof, func) -> None:
    a, axis = data
    kwargs = {"axis": axis} if func is np.mean else {"axis": axis, "ddof": ddof}
    ours, theirs = run_both(func, a, **kwargs)
    check(ours, theirs, atol=1e-5)


@settings(max_examples=40)
@given(data=array_and_axis(DTYPE_NAMES, min_dims=1, elements=_small),
       func=st.sampled_from([np.cumsum, np.cumprod]))
def test_cumulative_match_numpy(data, func) -> None:
    a, axis = data
    check(*run_both(func, a, axis=axis))


@settings(max_examples=60)
@given(data=array_and_axis(DTYPE_NAMES, min_dims=1), shift=st.integers(-5, 5))
def test_manipulation_matches_numpy(data, shift) -> None:
    a, axis = data
    axis = 0 if axis is None else axis
    check(*run_both(np.transpose, a))
    check(*run_both(np.moveaxis, a, axis, 0))
    check(*run_both(np.swapaxes, a, axis, -1))
    check(*run_both(np.ravel, a))
    check(*run_both(np.reshape, a, (-1, 1)))
    check(*run_both(np.squeeze, a))
    check(*run_both(np.expand_dims, a, axis))
    check(*run_both(np.flip, a, axis))
    check(*run_both(np.roll, a, shift, axis))
    check(*run_both(np.stack, [a, a], axis))
    check(*run_both(np.concatenate, [a, a], axis))
    check(*run_both(np.tile, a, (2,)))


@settings(max_examples=40)
@given(n=st.integers(0, 9), sections=st.integers(1, 4), cuts=st.lists(st.integers(-10, 10), max_size=3))
def test_split_family_matches_numpy(n, sections, cuts) -> None:
    a = np.arange(2 * n).reshape(2, n)
    check(*run_both(np.array_split, a, sections, axis=1))
    check(*run_both(np.split, a, cuts, axis=1))
    if n % sections == 0:
        check(*run_both(np.split, a, sections, axis=1))
        check(*run_both(np.hsplit, a, sections))
    else:
        with pytest.raises(ValueError, match="equal sections"):
            np.split(from_numpy(a), sections, axis=1)


@settings(max_examples=60)
@given(data=array_and_axis(REAL_NAMES + ("bool",), min_dims=1))
def test_sorting_and_unique_match_numpy(data) -> None:
    a, axis = data
    axis = -1 if axis is None else axis
    check(*run_both(np.sort, a, axis=axis))
    check(*run_both(np.argsort, a, axis=axis, kind="stable"))
    check(*run_both(np.sort, a, axis=None))
    check(*run_both(np.unique, a, return_index=True, return_inverse=True, return_counts=True))


@settings(max_examples=40)
@given(a=arrays("float64", shapes(1, 1, 8)), v=arrays("float64", shapes(0, 2)), side=st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(a, v, side) -> None:
    check(*run_both(np.searchsorted, np.sort(a), v, side=side))


@st.composite
def contraction_operands(draw):
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2)).copy()
    dtype = draw(st.sampled_from(["float64", "complex128", "int32", "uint16"]))
    elements = st.integers(0, 5) if dtype in ("int32", "uint16") else st.floats(-4, 4)
    a = draw(arrays(dtype, (*batch, m, k), elements=elements))
    b = draw(arrays(dtype, (k, n), elements=elements))
    return a, b


@settings(max_examples=40)
@given(ops=contraction_operands())
def test_contractions_match_numpy(ops) -> None:
    a, b = ops
    check(*run_both(np.einsum, "...ij,jk->...ik", a, b))
    check(*run_both(np.dot, a, b))
    check(*run_both(np.tensordot, a, b, axes=1))
    check(*run_both(np.inner, a, b.T))
    check(*run_both(np.outer, a, b))
    check(*run_both(np.kron, b, b))
    check(*run_both(np.matmul, a, b))
    check(*run_both(np.vdot, b, b))


@settings(max_examples=40)
@given(a=arrays("float64", shapes(0, 3)), decimals=st.integers(-2, 3), lo=st.floats(-10, 0), hi=st.floats(0, 10))
def test_elementwise_functions_match_numpy(a, decimals, lo, hi) -> None:
    a = np.asarray(np.nan_to_num(a, nan=0.0, posinf=1e6, neginf=-1e6) % 1e6)
    check(*run_both(np.round, a, decimals))
    check(*run_both(np.clip, a, lo, hi))
    check(*run_both(np.isclose, a, a * (1 + 1e-6)))
    assert np.allclose(from_numpy(a), from_numpy(a)) is True


@st.composite
def _round_case(draw: st.DrawFn) -> tuple[str, int, list[int]]:
    """An integer dtype, decimals in [-20, -1], and values near the dtype's limits, at rounding ties and
    around zero as well as anywhere in range."""
    dtype = draw(st.sampled_from(INT_NAMES))
    decimals = draw(st.integers(-20, -1))
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    step = 10**-decimals
    near = st.integers(-3 * step, 3 * step)
    values = st.one_of(
        st.integers(lo, hi),
        near.map(lambda d: lo + abs(d)), near.map(lambda d: hi - abs(d)),  # near the limits
        st.integers(lo // step, hi // step).map(lambda q: q * step + step // 2),  # ties, half to even
        st.integers(-1000, 1000),
    ).map(lambda v: min(max(v, lo), hi))
    return dtype, decimals, draw(st.lists(values, min_size=1, max_size=12))


@settings(max_examples=200)
@given(case=_round_case())
def test_round_of_integers_is_exact(case: tuple[str, int, list[int]]) -> None:
    dtype, decimals, values = case
    info = np.iinfo(dtype)
    a = np.array(values, dtype=dtype)
    ours, expected = run_both(np.round, a, decimals)
    got = to_numpy(ours)
    assert got.dtype == a.dtype
    # Python's round of an int is exact and half to even; a result beyond the dtype wraps modulo 2**bits
    exact = [round(v, decimals) for v in values]
    assert got.tolist() == [(r - int(info.min)) % 2**info.bits + int(info.min) for r in exact]
    # NumPy rounds integers through float64, which is exact below 2**53 where the result fits the dtype
    for v, r, g, e in zip(values, exact, got.tolist(), expected.tolist(), strict=True):
        if abs(v) <= 2**53 and info.min <= r <= info.max:
            assert g == e, (v, decimals, g, e)


def test_round_of_integers_at_the_reported_cases() -> None:
    int8 = np.array([100, -50, 50, 127, -128, 150 - 256], dtype=np.int8)
    check(np.round(from_numpy(int8), -2), np.round(int8, -2))
    check(np.round(from_numpy(np.array([100], np.int8)), -3), np.zeros(1, np.int8))
    check(np.round(from_numpy(np.array([2**64 - 1], np.uint64)), -20), np.zeros(1, np.uint64))
    check(np.round(from_numpy(int8), np.int64(-1)), np.round(int8, np.int64(-1)))  # NumPy integer decimals


def test_where_with_python_scalars_follows_numpy() -> None:
    c = np.array([True, False, True])
    for x, y in ((1, 2), (1, 2.0), (True, 2), (1, 1j), (True, False), (0.5, 2)):
        check(np.where(from_numpy(c), x, y), np.where(c, x, y))
    check(np.where(from_numpy(np.array([0, 3, 0])), 1, 2), np.where(np.array([0, 3, 0]), 1, 2))
    i8 = np.array([1, 2, 3], np.int8)
    check(np.where(from_numpy(c), from_numpy(i8), 1), np.where(c, i8, 1))  # the scalar is weak beside an array
    check(np.where(from_numpy(c)), np.where(c))
    check(np.where(from_numpy(np.array([[0, 1], [2, 0]]))), np.where(np.array([[0, 1], [2, 0]])))


def test_incompatible_shapes_name_the_function_and_both_shapes() -> None:
    x, y = from_numpy(np.ones((2, 6))), from_numpy(np.ones(5))
    shapes_ = re.escape("shapes (2, 6) and (5,) cannot be broadcast together")
    for call, name in ((lambda: np.isclose(x, y), "numpy.isclose"), (lambda: np.allclose(x, y), "numpy.allclose"),
                       (lambda: np.isclose(x, np.ones(5)), "numpy.isclose"), (lambda: np.clip(x, y, 2.0), "clip"),
                       (lambda: np.where(x > 0, x, y), "where"), (lambda: np.where(x > 0, x, np.ones(5)), "where")):
        with pytest.raises(ValueError, match=f"{re.escape(name)}\\(\\): {shapes_}"):
            call()


# ---------------------------------------------------------------- dispatch rules

@pytest.mark.parametrize(("call", "argument"), [
    (lambda a: np.sum(a, where=np.ones(4, dtype=bool)), "where="),
    (lambda a: np.mean(a, where=a > 0), "where="),
    (lambda a: np.reshape(a, (4, 3), order="F"), "order='F'"),
    (lambda a: np.unique(a, axis=0), "axis=0"),
    (lambda a: np.linalg.svd(a, hermitian=True), "hermitian=True"),
    (lambda a: np.einsum("ij->", a, order="F"), "order='F'"),
    (lambda a: np.einsum_path("ij->", a, einsum_call=True), "einsum_call=True"),
    (lambda a: np.std(a, mean=np.mean(a)), "mean="),
    (lambda a: np.zeros_like(a, subok=False), "subok=False"),
])
def test_unsupported_arguments_raise_type_error_naming_them(call, argument) -> None:
    with pytest.raises(TypeError, match=re.escape(argument)):
        call(from_numpy(M))


def test_unsupported_argument_at_its_default_is_accepted() -> None:
    a = from_numpy(M)
    check(np.sum(a, where=True), np.sum(M))
    check(np.reshape(a, (4, 3), order="C"), np.reshape(M, (4, 3)))
    check(np.sort(a, kind="quicksort", order=None), np.sort(M))


def test_bad_values_raise() -> None:
    a = from_numpy(M)
    with pytest.raises(TypeError, match="dtype float128 is not supported on NeuronArray"):
        np.sum(a, dtype=np.longdouble)
    with pytest.raises(TypeError, match="cannot cast float64 to int32"):
        np.concatenate([a, a], dtype=np.int32)
    with pytest.raises(ValueError, match="both x and y"):
        np.where(a > 0, a)
    with pytest.raises(ValueError, match="ddof= or correction="):
        np.var(a, ddof=1, correction=1)
    with pytest.raises(ValueError, match="mode='raw'"):
        np.linalg.qr(a, mode="raw")
    with pytest.raises(ValueError, match="UPLO"):
        np.linalg.eigh(from_numpy(SPD), UPLO="X")
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        np.vsplit(from_numpy(V), 2)
    with pytest.raises(ValueError, match="a has 12 elements but b has 4"):
        np.vdot(a, from_numpy(V))
    with pytest.raises(ValueError, match="unknown kind"):
        np.sort(a, kind="bogo")


def _bind_outcome(bind: Callable[[], dict[str, Any]]) -> Any:
    try:
        return bind()
    except TypeError as e:
        return f"TypeError: {e}"


def _calls(signature: inspect.Signature) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Calls of every shape against ``signature``: 0 to 2 more positional arguments than it has positional
    parameters, with no, one or two keywords from its names and one it lacks; values are fresh objects, and
    some are NumPy's ``_NoValue`` placeholder (not given)."""
    names = [*signature.parameters, "not_a_parameter"]
    n_positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in signature.parameters.values())
    for n in range(n_positional + 3):
        args = tuple(object() for _ in range(n))
        for k in range(3):
            for keys in itertools.combinations(names, k):
                yield args, {key: object() for key in keys}
        if n:
            yield (np._NoValue, *args[1:]), {names[-2]: np._NoValue}


def test_prepared_binding_agrees_with_signature_bind() -> None:
    """The binding prepared at registration gives what ``inspect.Signature.bind`` gives (the reference), for
    every function in the table and calls of every shape, errors included."""
    checked = 0
    for func, entry in TABLE.items():
        for args, kwargs in _calls(inspect.signature(func)):
            fast = _bind_outcome(lambda: entry.binder(args, kwargs))  # noqa: B023 (called at once)
            reference = _bind_outcome(lambda: entry.binder.bind(args, kwargs))  # noqa: B023
            assert fast == reference, (qualname(func), args, kwargs)
            checked += 1
    assert checked > 10 * len(TABLE)


def _signature_shapes(a, /, b, c=None, *d, e, f=np._NoValue, **g): ...
def _no_star(a, b=1, /, *, c=2): ...
def _star_only(*operands, out=None): ...
def _reserved_names(_given, _unset=None, *, _novalue=None, _bind_call=None): ...
def _required_keyword(*, a, b=None): ...


@pytest.mark.parametrize("func", [_signature_shapes, _no_star, _star_only, _reserved_names, _required_keyword])
def test_the_generated_binding_agrees_with_signature_bind(func) -> None:
    """The binding function generated from a signature (Python's own argument binding, every default a "not
    given" placeholder) gives what ``inspect.Signature.bind`` gives for signatures of every parameter kind, and
    for parameter names the generated code uses itself (which keep ``Signature.bind``); errors included."""
    binder = Binder(inspect.signature(func))
    for args, kwargs in _calls(inspect.signature(func)):
        assert _bind_outcome(lambda: binder(args, kwargs)) == \
            _bind_outcome(lambda: binder.bind(args, kwargs)), (args, kwargs)  # noqa: B023 (called at once)


def test_binding_reaches_the_implementation_in_every_spelling() -> None:
    """Positional, keyword and mixed spellings of one call give one answer (also for functions registered
    straight from the namespace, whose parameters are positional-only there)."""
    a = from_numpy(M)
    for calls, expected in (
            ((lambda: np.sum(a, 1, None, None, True), lambda: np.sum(a, axis=1, keepdims=True),
              lambda: np.sum(keepdims=True, a=a, axis=1)), np.sum(M, axis=1, keepdims=True)),
            ((lambda: np.astype(a, np.float32), lambda: np.astype(a, "float32", copy=False)), M.astype(np.float32)),
            ((lambda: np.linalg.vector_norm(a, axis=1, ord=1),), np.linalg.vector_norm(M, axis=1, ord=1)),
            ((lambda: np.einsum("ij->j", a), lambda: np.einsum(a, [0, 1], [1]),
              lambda: np.einsum("ij->j", a, optimize=True)), M.sum(axis=0))):
        for call in calls:
            check(call(), expected)


def test_dtype_spellings_convert_the_same_every_time() -> None:
    """Converted dtype spellings are remembered; refused ones are refused every time."""
    a = from_numpy(I)
    for _ in range(2):
        for spelling in (np.float64, "float64", "f8", np.dtype("float64"), float):
            assert np.sum(a, dtype=spelling).dtype == xp.float64
        assert np.sum(a, dtype=int).dtype == xp.int64
        assert np.sum(a, dtype=np.float16).dtype == xp.float16  # an extension dtype
        for bad, message in ((np.longdouble, "float128 is not supported"), ("bogus", "'bogus' is not a dtype"),
                             ([("f", "f8")], "is not supported")):
            with pytest.raises(TypeError, match=re.escape(message)):
                np.sum(a, dtype=bad)


def test_creation_from_a_prototype_keeps_what_is_not_overridden() -> None:
    on_meta = xp.NeuronArray(torch.empty((2, 3), dtype=torch.int32, device="meta"))
    for func, extra in ((np.zeros_like, ()), (np.ones_like, ()), (np.empty_like, ()), (np.full_like, (7,))):
        r = func(on_meta, *extra)
        assert (r.shape, r.dtype, r.device.type) == ((2, 3), xp.int32, "meta")
        r = func(on_meta, *extra, dtype=np.float32, shape=(4,))
        assert (r.shape, r.dtype, r.device.type) == ((4,), xp.float32, "meta")
        r = func(on_meta, *extra, dtype="int64", device="cpu")
        assert (r.shape, r.dtype, r.device.type) == ((2, 3), xp.int64, "cpu")


def test_mixed_numpy_and_neuron_inputs_give_neuron_arrays() -> None:
    a = from_numpy(M)
    for result, expected in ((np.concatenate([a, N.T[:1]]), np.concatenate([M, N.T[:1]])),
                             (np.dot(M, from_numpy(N)), np.dot(M, N)),
                             (np.einsum("ij,jk->ik", M, from_numpy(N)), M @ N),
                             (np.where(M > 0, a, [1.0, 2.0, 3.0, 4.0]), np.where(M > 0, M, [1.0, 2, 3, 4])),
                             (np.stack([a, [[1, 2, 3, 4]] * 3]), np.stack([M, [[1, 2, 3, 4]] * 3]))):
        check(result, expected)


def test_numpy_inputs_move_to_the_neuron_arrays_device() -> None:
    # torch's meta device stands in for an accelerator: shapes and dtypes only, no host data
    on_device = xp.NeuronArray(torch.empty(3, dtype=torch.float64, device="meta"))
    for result in (np.concatenate([on_device, np.ones(2)]), np.einsum("i,i->", on_device, np.ones(3)),
                   np.where(np.array([True, False, True]), on_device, np.zeros(3))):
        assert isinstance(result, xp.NeuronArray) and result.device.type == "meta"


def test_python_scalars_promote_weakly_numpy_scalars_strongly() -> None:
    f = from_numpy(F32)
    assert np.where(f > 0, f, 0.0).dtype == xp.float32
    assert np.where(f > 0, f, np.float64(0.0)).dtype == xp.float64
    assert np.clip(f, 0.0, 1.0).dtype == xp.float32


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int16", "bool"])
@pytest.mark.parametrize("bounds", [(0, 1), (-0.5, None), (None, 2), (True, 3.5), (-1e300, 1e300),
                                    (np.float32(0.5), 1.0), (0.25, np.float64(0.75))])
def test_clip_with_python_bounds_keeps_numpy_2_promotion(dtype, bounds) -> None:
    """Python bounds are weak (a real floating array keeps its dtype, which the implementation takes without
    asking the promotion rules); NumPy scalar bounds and integer or boolean arrays promote as NumPy 2 does."""
    a = np.array([-2.0, -0.5, 0.0, 0.4, 1.0, 3.0, 7000.0]).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's overflow warnings of its own float16 conversions
        expected = np.clip(a, *bounds)
    got = np.clip(from_numpy(a), *bounds)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(to_numpy(got), expected)


def test_dtype_arguments_take_numpy_spellings() -> None:
    a = from_numpy(I)
    for spelling in (np.float64, "float64", np.dtype("float64"), float, xp.float64):
        assert np.sum(a, dtype=spelling).dtype == xp.float64
    assert np.cumsum(a, dtype="uint32").dtype == xp.uint32


def test_out_argument_of_functions() -> None:
    a = from_numpy(M)
    out = xp.zeros((4,), dtype=xp.float64)
    assert np.sum(a, axis=0, out=out) is out
    check(out, np.sum(M, axis=0))
    out = xp.zeros((3, 5), dtype=xp.float64)
    assert np.einsum("ij,jk->ik", a, from_numpy(N), out=out) is out
    check(out, M @ N)
    with pytest.raises(ValueError, match="out has shape"):
        np.sum(a, axis=1, out=xp.zeros((4,), dtype=xp.float64))
    with pytest.raises(TypeError, match="same_kind"):
        np.sum(a, axis=0, out=xp.zeros((4,), dtype=xp.int64))
    with pytest.raises(TypeError, match="out= must be a NeuronArray"):
        np.sum(a, axis=0, out=np.zeros(4))


# ---------------------------------------------------------------- einsum on the engine

def test_einsum_runs_on_the_kernel_layer() -> None:
    a, b = from_numpy(M), from_numpy(N)
    with kernels.count_calls() as calls:
        result = np.einsum("ij,jk->ik", a, b)
    assert isinstance(result, xp.NeuronArray)
    assert sum(calls.values()) == 1 and all(mode == "native" for _, mode in calls)
    check(result, M @ N)


def test_einsum_optimize_follows_the_path() -> None:
    ops = [from_numpy(rng.standard_normal(s)) for s in ((2, 30), (30, 30), (30, 1))]
    path, report = np.einsum_path("ij,jk,kl->il", *ops, optimize="optimal")
    assert path[0] == "einsum_path" and "Complete contraction" in report
    for optimize in (False, True, "greedy", "optimal", path):
        with kernels.count_calls() as calls:
            result = np.einsum("ij,jk,kl->il", *ops, optimize=optimize)
        assert sum(calls.values()) == 2
        check(result, np.einsum("ij,jk,kl->il", *map(to_numpy, ops)))


def test_einsum_per_call_precision_reaches_the_kernel() -> None:
    a, b = from_numpy(M.astype(np.float32)), from_numpy(N.astype(np.float32))
    with kernels.count_calls() as calls:
        np.einsum("ij,jk->ik", a, b, precision="dd")
    assert {mode for _, mode in calls} == {"dd"}


def test_einsum_respects_the_precision_context() -> None:
    a, b = from_numpy(M.astype(np.float32)), from_numpy(N.astype(np.float32))
    with xp.precision("dd"), kernels.count_calls() as calls:
        result = np.einsum("ij,jk->ik", a, b)
    assert {mode for _, mode in calls} == {"dd"}
    scale = (np.abs(M) @ np.abs(N)).max()
    np.testing.assert_allclose(to_numpy(result), M @ N, rtol=0, atol=1e-5 * scale)
    with xp.precision("fast"), kernels.count_calls() as calls:
        np.einsum("ij,jk->ik", a, b)
    assert {mode for _, mode in calls} == {"fast"}


def test_einsum_dtype_argument() -> None:
    a = from_numpy(I.astype(np.int32))
    check(np.einsum("ij->j", a, dtype=np.int64), np.einsum("ij->j", I.astype(np.int32), dtype=np.int64))
    with pytest.raises(TypeError, match="casting='safe'"):
        np.einsum("ij->j", from_numpy(M), dtype=np.float32)


# ---------------------------------------------------------------- __array__ and DLPack

def test_explicit_conversion_to_numpy() -> None:
    a = from_numpy(M)
    host = np.asarray(a)
    assert isinstance(host, np.ndarray) and np.shares_memory(host, to_numpy(a))
    np.testing.assert_array_equal(host, M)
    assert np.array(a).base is None or not np.shares_memory(np.array(a), to_numpy(a))
    assert np.asarray(a, copy=False).ctypes.data == a._t.data_ptr()
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(a, dtype=np.float32, copy=False)
    assert np.asarray(a, dtype=np.float32).dtype == np.float32
    for name in ("uint16", "uint32", "uint64", "bool", "complex64"):
        values = np.arange(3).astype(name)
        np.testing.assert_array_equal(np.asarray(from_numpy(values)), values)


def test_device_arrays_refuse_copy_false() -> None:
    on_device = xp.NeuronArray(torch.empty(3, device="meta"))
    with pytest.raises(ValueError, match="copies it to the host"):
        np.asarray(on_device, copy=False)


def test_dlpack_zero_copy_both_ways() -> None:
    a = from_numpy(M)
    host = np.from_dlpack(a)
    assert np.shares_memory(host, np.asarray(a))
    t = torch.from_dlpack(a)
    assert t.data_ptr() == a._t.data_ptr()
    back = xp.from_dlpack(M)
    assert back._t.data_ptr() == M.ctypes.data
    tensor = torch.arange(4.0)
    assert xp.from_dlpack(tensor)._t.data_ptr() == tensor.data_ptr()
    host[0, 0] = 42.0
    assert float(a[0, 0]) == 42.0


def test_fftfreq_with_a_neuron_spacing_returns_a_neuron_array() -> None:
    # fftfreq takes no array, so NumPy never dispatches it; a NeuronArray spacing reaches us through ufuncs
    d = xp.asarray(0.25, dtype=xp.float64)
    check(np.fft.fftfreq(6, d), np.fft.fftfreq(6, 0.25))
    check(np.fft.rfftfreq(6, d), np.fft.rfftfreq(6, 0.25))


# ---------------------------------------------------------------- docs

def test_docs_list_is_generated_from_the_table() -> None:
    text = (ROOT / "docs" / "numpy.md").read_text()
    start, end = BEGIN, END
    assert start in text and end in text
    generated = text.split(start, 1)[1].split(end, 1)[0]
    assert generated == markdown(), "docs/numpy.md is out of date: regenerate it with " \
                                    "python -m trn_backend.numpy_dispatch --write"
