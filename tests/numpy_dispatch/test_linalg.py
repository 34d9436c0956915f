"""NumPy's products and numpy.linalg (trn_backend/numpy_dispatch/linalg.py) against NumPy on the same data: the
table's cases, hypothesis-drawn contractions, numpy.linalg.lstsq (values, residuals, rank and singular values),
and numpy.linalg.eig and eigvals, which stay NeuronArrays on the input's device, follow NumPy's rule for real
results and refuse inf and nan as NumPy does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.numpy_dispatch.calls import (
    CPLX,
    M24,
    OTHER_ORDER,
    SPD,
    SQ,
    STACK_SPD,
    T3,
    T243,
    T342,
    Case,
    I,
    M,
    N,
    V,
    W,
    _abs,
    _abs_parts,
    _apply,
    _neuron,
    _numpy_tree,
    assert_on_device,
    both,
    raises_like_numpy,
    run_both,
)
from tests.support import arrays, assert_same_array, assert_same_results

rng = np.random.default_rng(7)


CASES = [
    Case(np.tensordot, (T3, T342), {"axes": 2}),
    Case(np.tensordot, (M, N), {"axes": ([1], [0])}),
    Case(np.dot, (M, N)),
    Case(np.dot, (T3, V)),
    Case(np.dot, (V, W)),
    Case(np.dot, (M, 2.0)),
    Case(np.dot, (T3, T243)),
    Case(np.vdot, (CPLX, CPLX[::-1])),
    Case(np.vdot, (M, M)),
    Case(np.inner, (M, M24)),
    Case(np.inner, (V, W)),
    Case(np.outer, (V, M)),
    Case(np.kron, (SQ, M)),
    Case(np.kron, (V, M)),
    Case(np.kron, (I, I[:2, :2])),
    Case(np.trace, (T3,), {"axis1": 1, "axis2": 2}),
    Case(np.trace, (I,), {"offset": 1}),
    Case(np.linalg.matmul, (M, N)),
    Case(np.linalg.tensordot, (M, N), {"axes": 1}),
    Case(np.linalg.vecdot, (M, M)),
    Case(np.linalg.outer, (V, W)),
    Case(np.linalg.cross, (M[:, :3], N[:3, :3].T)),
    Case(np.linalg.norm, (M,)),
    Case(np.linalg.norm, (V, 1)),
    Case(np.linalg.norm, (V, np.inf)),
    Case(np.linalg.norm, (M, "nuc")),
    Case(np.linalg.norm, (M, -2)),
    Case(np.linalg.norm, (T3,), {"axis": 1}),
    Case(np.linalg.norm, (T3, 1, (2, 0)), {"keepdims": True}),
    Case(np.linalg.norm, (T3,), {"keepdims": True}),
    Case(np.linalg.norm, (I,)),
    Case(np.linalg.norm, (CPLX, "fro")),
    Case(np.linalg.solve, (SPD, V[:3])),
    Case(np.linalg.solve, (SPD, M)),
    Case(np.linalg.solve, (STACK_SPD, M)),
    Case(np.linalg.inv, (SPD,)),
    Case(np.linalg.det, (STACK_SPD,)),
    Case(np.linalg.slogdet, (SQ,), post=lambda r: tuple(r)),
    Case(np.linalg.eigh, (SPD,), post=_abs_parts),
    Case(np.linalg.eigh, (np.triu(SQ),), {"UPLO": "U"}, post=_abs_parts),
    Case(np.linalg.eigvalsh, (np.tril(SQ),)),
    Case(np.linalg.eigvalsh, (np.triu(SQ), "U")),
    Case(np.linalg.svd, (M,), {"compute_uv": False}),
    Case(np.linalg.svd, (SQ,), post=_abs_parts),
    Case(np.linalg.svd, (M,), {"full_matrices": False}, post=_abs_parts),
    Case(np.linalg.svdvals, (M,)),
    Case(np.linalg.qr, (M.T,), post=_abs_parts),
    Case(np.linalg.qr, (M.T, "complete"), post=_abs_parts),
    Case(np.linalg.qr, (M.T, "r"), post=_abs),
    Case(np.linalg.cholesky, (SPD,)),
    Case(np.linalg.cholesky, (SPD,), {"upper": True}),
    Case(np.linalg.matrix_rank, (M,)),
    Case(np.linalg.matrix_rank, (np.outer(V, W),)),
    Case(np.linalg.matrix_rank, (SQ,), {"tol": 10.0}),
    Case(np.linalg.matrix_rank, (V,), post=np.asarray),
    Case(np.linalg.matrix_rank, (SPD,), {"hermitian": True}),
    Case(np.linalg.pinv, (M,)),
    Case(np.linalg.pinv, (M,), {"rtol": 0.5}),
    Case(np.linalg.pinv, (M, 0.5)),
    Case(np.linalg.matrix_power, (SQ, 3)),
    Case(np.linalg.matrix_power, (SPD, -1)),
    Case(np.linalg.matrix_transpose, (T3,)),
    Case(np.linalg.trace, (T3,), {"offset": 1}),
    Case(np.linalg.diagonal, (T3,)),
    Case(np.linalg.vector_norm, (T3,), {"axis": (0, 1), "ord": 3}),
    Case(np.linalg.matrix_norm, (T3,), {"ord": 1}),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, rtol=OTHER_ORDER, atol=case.atol)


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
    assert_same_results(*run_both(np.einsum, "...ij,jk->...ik", a, b), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.dot, a, b), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.tensordot, a, b, axes=1), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.inner, a, b.T), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.outer, a, b), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.kron, b, b), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.matmul, a, b), rtol=OTHER_ORDER)
    assert_same_results(*run_both(np.vdot, b, b), rtol=OTHER_ORDER)


# ---------------------------------------------------------------- lstsq

TALL = rng.standard_normal((6, 3))
WIDE = rng.standard_normal((3, 5))
DEFICIENT = np.outer(rng.standard_normal(5), rng.standard_normal(3))


@pytest.mark.parametrize(
    "case",
    [
        ((TALL, rng.standard_normal(6)), {}),
        ((TALL, rng.standard_normal((6, 2))), {}),
        ((WIDE, rng.standard_normal(3)), {}),
        ((DEFICIENT, rng.standard_normal(5)), {}),
        ((TALL, rng.standard_normal(6)), {"rcond": 0.5}),
        ((TALL, rng.standard_normal(6)), {"rcond": -1}),
        ((np.arange(12).reshape(6, 2), np.arange(6)), {}),
        ((TALL + 1j * TALL[::-1], rng.standard_normal((6, 2))), {}),
        ((np.zeros((3, 0)), np.ones(3)), {}),
        ((np.zeros((0, 2)), np.ones(0)), {}),
        ((np.zeros((4, 2)), np.ones(4)), {}),
        ((TALL, np.zeros((6, 0))), {}),
    ],
)
def test_lstsq(case: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    args, kwargs = case
    (x, residuals, rank, s), expected = both(np.linalg.lstsq, *args, **kwargs)
    assert_on_device((x, residuals, s))
    assert_same_results((x, residuals, s), (expected[0], expected[1], expected[3]), rtol=1e-9, atol=1e-12)
    assert type(rank) is type(expected[2]) and rank == expected[2]


def test_lstsq_in_float32() -> None:
    a, b = TALL.astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
    (x, residuals, rank, s), expected = both(np.linalg.lstsq, a, b)
    assert_on_device((x, residuals, s))
    assert_same_results((x, residuals, s), (expected[0], expected[1], expected[3]), rtol=2e-4, atol=1e-5)
    assert rank == expected[2]


def test_lstsq_errors() -> None:
    raises_like_numpy(np.linalg.LinAlgError, np.linalg.lstsq, np.ones(3), np.ones(3), match="two-dimensional")
    raises_like_numpy(np.linalg.LinAlgError, np.linalg.lstsq, np.ones((3, 2)), np.ones(4), match="incompatible")


# ---------------------------------------------------------------- eig and eigvals


def _sorted_values(w: np.ndarray) -> np.ndarray:
    """Eigenvalues in a fixed order (by real, then imaginary part), rounded where LAPACK's order may differ."""
    if w.ndim > 1:
        return np.stack([_sorted_values(row) for row in w]) if len(w) else w
    return w[np.lexsort((np.round(w.imag, 8), np.round(w.real, 8)))]


@pytest.mark.parametrize(
    "matrix",
    [
        np.array([[2.0, 1.0], [1.0, 3.0]]),  # real eigenvalues: a real result
        np.array([[0.0, -1.0], [1.0, 0.0]]),  # a rotation: complex eigenvalues of real input
        np.array([[1 + 1j, 2.0], [0.5, -1j]]),  # complex input: complex results
        np.array([[1, 2], [3, 4]]),  # integers: in float64
        np.array([[[2.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [-1.0, 0.0]]]),  # a stack: one complex matrix makes all so
        np.array([[4.0, 1.0], [2.0, 3.0]], dtype=np.float32),
        np.zeros((0, 3, 3)),
    ],
)
def test_eig_and_eigvals_are_neuron_arrays_with_numpys_values(matrix: np.ndarray) -> None:
    a = xp.asarray(matrix)
    theirs = np.linalg.eigvals(matrix)
    values = np.linalg.eigvals(a)
    assert isinstance(values, xp.NeuronArray) and values.device == a.device
    assert values.dtype == theirs.dtype and values.shape == theirs.shape
    tol = 1e-5 if theirs.dtype in (np.float32, np.complex64) else 1e-12
    assert_same_array(_sorted_values(np.asarray(values)), _sorted_values(theirs), rtol=tol, atol=tol)
    w, v = np.linalg.eig(a)
    assert isinstance(w, xp.NeuronArray) and isinstance(v, xp.NeuronArray)
    assert w.dtype == theirs.dtype and v.dtype == np.linalg.eig(matrix).eigenvectors.dtype
    # A v = v diag(w): each column is an eigenvector of its eigenvalue
    av = np.asarray(matrix, dtype=v.dtype) @ np.asarray(v)
    np.testing.assert_allclose(av, np.asarray(v) * np.asarray(w)[..., None, :], rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("special", [np.nan, np.inf])
def test_eig_and_eigvals_refuse_inf_and_nan_as_numpy(special: float) -> None:
    matrix = np.array([[1.0, special], [0.0, 2.0]])
    for f in (np.linalg.eig, np.linalg.eigvals):
        with pytest.raises(np.linalg.LinAlgError):
            f(matrix)
        with pytest.raises(np.linalg.LinAlgError, match=f"numpy.linalg.{f.__name__}.*infs or NaNs"):
            f(xp.asarray(matrix))
