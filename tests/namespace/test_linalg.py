"""The linalg extension against numpy.linalg: values, dtypes, shapes, stacks and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trn_backend as xp
from tests.support import DTYPE_NAMES, FLOAT_NAMES, assert_same, from_numpy, to_numpy
from trn_backend import kernels, linalg

FLOATING = ("float32", "float64", "complex64", "complex128")
REAL_OF = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
COMPLEX_OF = {"float32": "complex64", "float64": "complex128", "complex64": "complex64", "complex128": "complex128"}
TOL = {"float32": 2e-4, "float64": 1e-10, "complex64": 2e-4, "complex128": 1e-10}


def _random(shape, dtype_name: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, shape)
    if dtype_name.startswith("complex"):
        a = a + 1j * rng.uniform(-1, 1, shape)
    return a.astype(dtype_name)


def _well_conditioned(shape, dtype_name: str, seed: int = 0) -> np.ndarray:
    """Diagonally dominant (so invertible) square matrices."""
    n = shape[-1]
    return (_random(shape, dtype_name, seed) + (n + 1) * np.eye(n)).astype(dtype_name)


def _hermitian_pd(shape, dtype_name: str, seed: int = 0) -> np.ndarray:
    a = _random(shape, dtype_name, seed)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype_name)


def _close(actual: xp.NeuronArray, expected: np.ndarray, dtype_name: str) -> None:
    """Values within the dtype's tolerance of a float64/complex128 reference, and exactly the given dtype."""
    tol = TOL[dtype_name if dtype_name in TOL else "float64"]
    assert_same(actual, expected, dtype=dtype_name, rtol=tol, atol=tol)


square_shapes = st.tuples(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), st.integers(1, 4)).map(
    lambda t: t[0] + (t[1], t[1])
)
matrix_shapes = st.tuples(
    hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), st.integers(1, 4), st.integers(1, 4)
).map(lambda t: t[0] + (t[1], t[2]))


# ---------------------------------------------------------------- determinants, inverses, solvers


@settings(max_examples=30)
@given(shape=square_shapes, dtype=st.sampled_from(FLOATING), seed=st.integers(0, 2**16))
def test_det_inv_slogdet(shape, dtype, seed):
    a = _well_conditioned(shape, dtype, seed)
    ref = a.astype(COMPLEX_OF[dtype] if dtype.startswith("complex") else "float64")
    x = from_numpy(a)
    _close(linalg.det(x), np.linalg.det(ref), dtype)
    _close(linalg.inv(x), np.linalg.inv(ref), dtype)
    sign, logabsdet = linalg.slogdet(x)
    ref_sign, ref_log = np.linalg.slogdet(ref)
    _close(sign, ref_sign, dtype)
    _close(logabsdet, ref_log, REAL_OF[dtype])


def test_slogdet_of_singular_matrix_and_fields():
    result = linalg.slogdet(from_numpy(np.zeros((2, 2))))
    assert result._fields == ("sign", "logabsdet")
    assert float(result.sign) == 0.0 and float(result.logabsdet) == -math.inf


@settings(max_examples=30)
@given(
    batch1=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
    ones=st.lists(st.booleans(), max_size=2),
    n=st.integers(1, 4),
    k=st.integers(1, 3),
    dtype=st.sampled_from(FLOATING),
    vector=st.booleans(),
)
def test_solve_matches_numpy_with_broadcast_batches(batch1, ones, n, k, dtype, vector):
    # x2's batch: a suffix of x1's with some sizes set to 1 (so the two broadcast)
    ones = ones[: len(batch1)]
    batch2 = tuple(1 if one else b for one, b in zip(ones, batch1[len(batch1) - len(ones) :], strict=True))
    a = _well_conditioned(batch1 + (n, n), dtype)
    b = _random((n,) if vector else batch2 + (n, k), dtype, seed=1)
    got = linalg.solve(from_numpy(a), from_numpy(b))
    expected = np.linalg.solve(
        a.astype(complex) if dtype.startswith("complex") else a.astype(float), b[:, None] if vector else b
    )
    _close(got, expected[..., 0] if vector else expected, dtype)


def test_solve_reads_a_2d_x2_as_a_matrix_not_a_batch_of_vectors():
    # torch.linalg.solve reads B of A's rank minus one as a batch of vectors; the standard does not
    a = _well_conditioned((3, 3, 3), "float64")
    b = _random((3, 3), "float64", seed=2)
    got = linalg.solve(from_numpy(a), from_numpy(b))
    assert got.shape == (3, 3, 3)
    _close(got, np.linalg.solve(a, np.broadcast_to(b, (3, 3, 3))), "float64")


def test_solve_promotes_mixed_dtypes():
    a, b = _well_conditioned((2, 2), "float32"), np.array([1, 2], dtype=np.int16)
    got = linalg.solve(from_numpy(a), from_numpy(b))
    assert got.dtype == xp.float32
    got = linalg.solve(from_numpy(np.eye(2, dtype=np.int64) * 2), from_numpy(b.astype(np.int64)))
    assert_same(got, np.array([0.5, 1.0], dtype=np.float64))  # integers solve in the default float (CPU: float64)


# ---------------------------------------------------------------- decompositions


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, upper):
    a = _hermitian_pd((2, 3, 3), dtype)
    factor = to_numpy(linalg.cholesky(from_numpy(a), upper=upper))
    assert factor.dtype == np.dtype(dtype)
    tri = np.triu if upper else np.tril
    np.testing.assert_array_equal(factor, tri(factor))
    h = np.conj(np.swapaxes(factor, -1, -2))
    np.testing.assert_allclose(h @ factor if upper else factor @ h, a, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATING)
def test_eigh_and_eigvalsh(dtype):
    a = _hermitian_pd((2, 4, 4), dtype)
    result = linalg.eigh(from_numpy(a))
    assert result._fields == ("eigenvalues", "eigenvectors")
    w, v = to_numpy(result.eigenvalues), to_numpy(result.eigenvectors)
    assert w.dtype == np.dtype(REAL_OF[dtype]) and v.dtype == np.dtype(dtype)
    expected = np.linalg.eigvalsh(a.astype(np.complex128))
    np.testing.assert_allclose(w, expected, rtol=TOL[dtype])
    reconstructed = (v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
    np.testing.assert_allclose(reconstructed, a, atol=10 * TOL[dtype])
    _close(linalg.eigvalsh(from_numpy(a)), expected, REAL_OF[dtype])


@pytest.mark.parametrize("dtype", FLOATING)
def test_eig_and_eigvals_are_complex(dtype):
    a = _random((2, 3, 3), dtype, seed=3)
    result = linalg.eig(from_numpy(a))
    assert result._fields == ("eigenvalues", "eigenvectors")
    w, v = to_numpy(result.eigenvalues), to_numpy(result.eigenvectors)
    assert w.dtype == v.dtype == np.dtype(COMPLEX_OF[dtype])
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=10 * TOL[dtype])
    values = to_numpy(linalg.eigvals(from_numpy(a)))
    assert values.dtype == np.dtype(COMPLEX_OF[dtype])
    expected = np.linalg.eigvals(a.astype(np.complex128))
    # eigenvalue order is unspecified: every expected value has a computed one next to it
    distance = np.abs(values[..., :, None] - expected[..., None, :]).min(axis=-2)
    assert distance.max() < 10 * TOL[dtype]


@settings(max_examples=25)
@given(shape=matrix_shapes, dtype=st.sampled_from(FLOATING), mode=st.sampled_from(["reduced", "complete"]))
def test_qr(shape, dtype, mode):
    a = _random(shape, dtype)
    result = linalg.qr(from_numpy(a), mode=mode)
    assert result._fields == ("Q", "R")
    q, r = to_numpy(result.Q), to_numpy(result.R)
    m, n = shape[-2:]
    k = m if mode == "complete" else min(m, n)
    assert q.shape == shape[:-2] + (m, k) and r.shape == shape[:-2] + (k, n)
    assert q.dtype == r.dtype == np.dtype(dtype)
    np.testing.assert_allclose(q @ r, a, atol=10 * TOL[dtype])
    np.testing.assert_array_equal(r, np.triu(r))
    gram = np.conj(np.swapaxes(q, -1, -2)) @ q
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(k), gram.shape), atol=10 * TOL[dtype])


@settings(max_examples=25)
@given(shape=matrix_shapes, dtype=st.sampled_from(FLOATING), full=st.booleans())
def test_svd_and_svdvals(shape, dtype, full):
    a = _random(shape, dtype)
    result = linalg.svd(from_numpy(a), full_matrices=full)
    assert result._fields == ("U", "S", "Vh")
    u, s, vh = (to_numpy(r) for r in result)
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape == shape[:-2] + ((m, m) if full else (m, k))
    assert vh.shape == shape[:-2] + ((n, n) if full else (k, n))
    assert u.dtype == vh.dtype == np.dtype(dtype) and s.dtype == np.dtype(REAL_OF[dtype])
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=10 * TOL[dtype])
    expected = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    _close(linalg.svdvals(from_numpy(a)), expected, REAL_OF[dtype])


def test_matrix_rank_and_pinv_with_rtol():
    a = np.array([[[1.0, 0.0], [0.0, 1e-3]], [[2.0, 0.0], [0.0, 0.5]]])
    x = from_numpy(a)
    assert_same(linalg.matrix_rank(x), np.array([2, 2]))
    assert_same(linalg.matrix_rank(x, rtol=1e-2), np.array([1, 2]))
    assert_same(linalg.matrix_rank(x, rtol=from_numpy(np.array([1e-4, 0.9]))), np.array([2, 1]))
    for rtol in (None, 1e-2):
        expected = np.linalg.pinv(a) if rtol is None else np.linalg.pinv(a, rtol=rtol)
        _close(linalg.pinv(x, rtol=rtol), expected, "float64")
    wide = _random((2, 3, 5), "float64")
    _close(linalg.pinv(from_numpy(wide.astype(np.float32))), np.linalg.pinv(wide), "float32")
    assert linalg.pinv(from_numpy(np.zeros((2, 0, 3)))).shape == (2, 3, 0)


def test_rank_deficient_matrix_rank():
    a = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5])
    assert_same(linalg.matrix_rank(from_numpy(a)), np.array(1))
    assert_same(linalg.matrix_rank(from_numpy(a.astype(np.float32))), np.array(1))


# ---------------------------------------------------------------- products through matmul


def test_reexports_are_the_top_level_functions():
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(linalg, name) is getattr(xp, name)


@pytest.mark.parametrize(
    "d1, d2",
    [
        ("float32", "float32"),
        ("float64", "float32"),
        ("int8", "int16"),
        ("uint8", "uint8"),
        ("complex64", "float64"),
        ("uint16", "uint16"),
    ],
)
def test_outer(d1, d2):
    a = np.arange(1, 4).astype(d1) if d1 != "complex64" else np.array([1 + 2j, 3j], dtype=d1)
    b = np.arange(2, 4).astype(d2)
    with kernels.count_calls() as calls:
        got = linalg.outer(from_numpy(a), from_numpy(b))
    assert sum(calls.values()) >= 1, "outer must reach the kernel layer"
    assert_same(got, np.outer(a, b).astype(np.result_type(a.dtype, b.dtype)))


@settings(max_examples=25)
@given(shape=square_shapes, dtype=st.sampled_from(FLOATING), n=st.integers(-3, 6))
def test_matrix_power(shape, dtype, n):
    a = _well_conditioned(shape, dtype) / shape[-1]
    ref = a.astype(np.complex128 if dtype.startswith("complex") else np.float64)
    with kernels.count_calls() as calls:
        got = linalg.matrix_power(from_numpy(a), n)
    if abs(n) > 1:
        assert sum(calls.values()) >= 1, "matrix_power must reach the kernel layer"
    _close(got, np.linalg.matrix_power(ref, n), dtype)


def test_matrix_power_returns_a_new_array_and_keeps_integers():
    x = from_numpy(np.eye(2))
    assert linalg.matrix_power(x, 1)._t is not x._t
    assert_same(
        linalg.matrix_power(from_numpy(np.array([[1, 1], [0, 1]])), 3), np.array([[1, 3], [0, 1]], dtype=np.int64)
    )  # exact in the integer dtype, as NumPy
    assert_same(
        linalg.matrix_power(from_numpy(np.ones((2, 0, 0), dtype=np.float32)), 0), np.ones((2, 0, 0), dtype=np.float32)
    )


# ---------------------------------------------------------------- cross, diagonal, trace


@pytest.mark.parametrize("dtype", DTYPE_NAMES[1:])  # every numeric dtype of the standard
def test_cross_all_numeric_dtypes(dtype):
    rng = np.random.default_rng(4)
    if dtype.startswith("uint"):
        info = np.iinfo(dtype)
        a, b = (rng.integers(0, info.max, (2, 3), dtype=dtype, endpoint=True) for _ in range(2))
    else:
        a, b = (rng.integers(-5, 6, (2, 3)).astype(dtype) for _ in range(2))
    with np.errstate(over="ignore"):  # unsigned results wrap modulo 2**bits, as in NumPy
        expected = np.cross(a, b)
    assert_same(linalg.cross(from_numpy(a), from_numpy(b)), expected)


@settings(max_examples=30)
@given(s1=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), axis=st.integers(-3, -1), data=st.data())
def test_cross_broadcasts_and_takes_an_axis(s1, axis, data):
    ndim = len(s1) + 1
    axis = max(axis, -ndim)
    shape1 = list(s1)
    shape1.insert(len(shape1) + 1 + axis, 3)
    shape2 = [1 if data.draw(st.booleans()) else n for n in shape1]
    shape2[axis] = 3
    shape2 = shape2[data.draw(st.integers(0, ndim + axis)) :]
    a, b = _random(tuple(shape1), "float64"), _random(tuple(shape2), "float64", seed=5)
    expected = np.cross(*np.broadcast_arrays(a, b), axis=axis)
    assert_same(linalg.cross(from_numpy(a), from_numpy(b), axis=axis), expected, rtol=1e-12)


def test_cross_errors():
    a3, b2 = from_numpy(np.ones(3)), from_numpy(np.ones((2, 2)))
    with pytest.raises(ValueError, match="size 3 along axis -1"):
        linalg.cross(a3, b2)
    with pytest.raises(IndexError, match="out of bounds"):
        linalg.cross(a3, a3, axis=-2)
    with pytest.raises(ValueError, match="ambiguous.*negative axis"):
        linalg.cross(a3, from_numpy(np.ones((2, 3))), axis=0)
    assert_same(
        linalg.cross(from_numpy(np.eye(3)), from_numpy(np.eye(3)[::-1].copy()), axis=0),
        np.cross(np.eye(3), np.eye(3)[::-1], axis=0),
    )
    with pytest.raises(ValueError, match="do not broadcast"):
        linalg.cross(from_numpy(np.ones((2, 3))), from_numpy(np.ones((4, 3))))
    with pytest.raises(TypeError, match="numeric"):
        linalg.cross(from_numpy(np.ones(3, bool)), from_numpy(np.ones(3, bool)))
    with pytest.raises(TypeError, match="x2 to be a NeuronArray"):
        linalg.cross(a3, np.ones(3))
    with pytest.raises(TypeError, match="axis must be an int"):
        linalg.cross(a3, a3, axis=1.0)


@settings(max_examples=30)
@given(
    shape=matrix_shapes,
    offset=st.integers(-4, 4),
    dtype=st.sampled_from(["bool", "int8", "uint16", "uint64", "float32", "complex128"]),
)
def test_diagonal(shape, offset, dtype):
    a = (np.arange(math.prod(shape)).reshape(shape) % 7).astype(dtype)
    got = linalg.diagonal(from_numpy(a), offset=offset)
    assert_same(got, np.diagonal(a, offset, -2, -1))


def test_diagonal_is_a_new_array():
    x = from_numpy(np.eye(3))
    d = linalg.diagonal(x)
    d[0] = 5.0
    assert float(x[0, 0]) == 1.0


TRACE_DTYPES = {
    "int8": "int64",
    "int32": "int64",
    "int64": "int64",
    "uint8": "uint64",
    "uint16": "uint64",
    "uint32": "uint64",
    "uint64": "uint64",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
}


@pytest.mark.parametrize("dtype", TRACE_DTYPES)
@pytest.mark.parametrize("offset", [-1, 0, 2])
def test_trace_accumulation_dtypes(dtype, offset):
    a = (np.arange(24).reshape(2, 3, 4) * 11 % 13).astype(dtype)
    got = linalg.trace(from_numpy(a), offset=offset)
    assert_same(got, np.trace(a, offset, -2, -1).astype(TRACE_DTYPES[dtype]))


def test_trace_with_dtype_and_large_unsigned_values():
    big = np.full((3, 3), 2**63 + 1, dtype=np.uint64)
    assert_same(linalg.trace(from_numpy(big)), np.array(np.trace(big), dtype=np.uint64))
    a = np.arange(9, dtype=np.int8).reshape(3, 3)
    assert_same(linalg.trace(from_numpy(a), dtype=xp.float64), np.array(12.0))
    assert_same(linalg.trace(from_numpy(a), dtype=xp.int16), np.array(12, dtype=np.int16))
    assert_same(linalg.trace(from_numpy(np.zeros((2, 0, 3), np.float32))), np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="numeric"):
        linalg.trace(from_numpy(np.eye(2, dtype=bool)))


# ---------------------------------------------------------------- norms

ORDS = [0, 1, 2, 3.5, 0.5, -0.5, -1, -2, math.inf, -math.inf]


@settings(max_examples=40)
@given(
    data=st.data(),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
    dtype=st.sampled_from(FLOATING),
    ord=st.sampled_from(ORDS),
    keepdims=st.booleans(),
)
def test_vector_norm(data, shape, dtype, ord, keepdims):  # noqa: A002
    ndim = len(shape)
    axis = data.draw(st.none() | st.integers(-ndim, ndim - 1) if ndim else st.none())
    if ndim and data.draw(st.booleans()):
        axis = tuple(data.draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)))
    a = _random(shape, dtype, seed=6)
    got = linalg.vector_norm(from_numpy(a), axis=axis, keepdims=keepdims, ord=ord)
    with np.errstate(divide="ignore"):
        expected = np.linalg.vector_norm(a.astype(np.complex128), axis=axis, keepdims=keepdims, ord=ord)
    _close(got, expected, REAL_OF[dtype])


def test_vector_norm_edge_cases():
    x = from_numpy(np.array([[3.0, -4.0], [0.0, 1.0]]))
    assert_same(linalg.vector_norm(x), np.array(math.sqrt(26.0)))
    assert_same(linalg.vector_norm(x, axis=()), np.array([[3.0, 4.0], [0.0, 1.0]]))
    assert_same(linalg.vector_norm(x, axis=(), ord=0), np.array([[1.0, 1.0], [0.0, 1.0]]))
    empty = from_numpy(np.zeros((3, 0), np.float32))
    assert_same(linalg.vector_norm(empty, axis=1, ord=math.inf), np.zeros(3, np.float32))
    assert_same(linalg.vector_norm(empty, axis=1, ord=-1, keepdims=True), np.full((3, 1), np.inf, np.float32))
    assert_same(linalg.vector_norm(empty, axis=0, ord=-math.inf), np.zeros(0, np.float32))
    assert_same(linalg.vector_norm(from_numpy(np.array([3, 4], np.int16))), np.array(5.0, np.float64))
    with pytest.raises(ValueError, match="ord=-inf of an empty"):
        linalg.vector_norm(empty, ord=-math.inf)
    with pytest.raises(TypeError, match="ord must be a real number"):
        linalg.vector_norm(x, ord="fro")
    with pytest.raises(IndexError, match="axis 2 is out of bounds"):
        linalg.vector_norm(x, axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        linalg.vector_norm(x, axis=(0, -2))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm(dtype, ord):  # noqa: A002
    a = _random((2, 3, 4), dtype, seed=7)
    expected = np.linalg.matrix_norm(a.astype(np.complex128), ord=ord)
    _close(linalg.matrix_norm(from_numpy(a), ord=ord), expected, REAL_OF[dtype])
    kept = linalg.matrix_norm(from_numpy(a), ord=ord, keepdims=True)
    _close(kept, expected[:, None, None], REAL_OF[dtype])


def test_matrix_norm_errors_and_empty_matrices():
    empty = from_numpy(np.zeros((0, 3)))
    assert_same(linalg.matrix_norm(empty, ord=1), np.array(0.0))
    assert_same(linalg.matrix_norm(empty, ord=-1), np.array(0.0))
    with pytest.raises(ValueError, match="minimum over an empty set"):
        linalg.matrix_norm(empty, ord=-2)
    with pytest.raises(ValueError, match="ord must be one of"):
        linalg.matrix_norm(from_numpy(np.eye(2)), ord=3)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        linalg.matrix_norm(from_numpy(np.ones(3)))


# ---------------------------------------------------------------- dtypes and errors common to all functions


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint16", "uint64"])
def test_integer_input_promotes_to_the_default_float(dtype):
    a = np.array([[2, 1], [1, 3]], dtype=dtype)
    # float64 on the CPU, as NumPy's linalg of integers
    assert_same(linalg.det(from_numpy(a)), np.array(5.0, np.float64), rtol=1e-14)
    assert_same(linalg.inv(from_numpy(a)), np.linalg.inv(a), rtol=1e-14)
    assert linalg.eigvalsh(from_numpy(a)).dtype == np.linalg.eigvalsh(a).dtype == xp.float64
    assert linalg.matrix_norm(from_numpy(a)).dtype == np.linalg.norm(a).dtype == xp.float64


SQUARE_FUNCS = ["cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "slogdet"]
MATRIX_FUNCS = ["matrix_norm", "matrix_rank", "pinv", "qr", "svd", "svdvals", "diagonal", "trace"]


@pytest.mark.parametrize("name", SQUARE_FUNCS + MATRIX_FUNCS)
def test_shape_and_type_errors(name):
    f = getattr(linalg, name)
    with pytest.raises(ValueError, match=rf"{name}\(\) needs .*at least 2 dimensions, got shape \(3,\)"):
        f(from_numpy(np.ones(3)))
    if name in SQUARE_FUNCS:
        with pytest.raises(ValueError, match=rf"{name}\(\) needs square matrices.*got shape \(2, 3\)"):
            f(from_numpy(np.ones((2, 3))))
    if name not in ("diagonal",):
        with pytest.raises(TypeError, match=rf"{name}\(\) needs x of a numeric dtype, got bool"):
            f(from_numpy(np.ones((2, 2), bool)))
    with pytest.raises(TypeError, match=rf"{name}\(\) expects x to be a NeuronArray.*asarray"):
        f(np.eye(2))


def test_singular_and_indefinite_input_are_value_errors():
    with pytest.raises(ValueError, match=r"inv\(\).*singular"):
        linalg.inv(from_numpy(np.zeros((2, 2))))
    with pytest.raises(ValueError, match=r"solve\(\).*singular"):
        linalg.solve(from_numpy(np.ones((2, 2))), from_numpy(np.ones(2)))
    with pytest.raises(ValueError, match=r"cholesky\(\).*positive-definite"):
        linalg.cholesky(from_numpy(-np.eye(2)))
    with pytest.raises(ValueError, match=r"matrix_power\(\).*singular|inv\(\).*singular"):
        linalg.matrix_power(from_numpy(np.zeros((2, 2))), -1)


def test_argument_errors():
    x = from_numpy(np.eye(2))
    with pytest.raises(ValueError, match="mode must be 'reduced' or 'complete'"):
        linalg.qr(x, mode="r")
    with pytest.raises(TypeError, match="n must be an int"):
        linalg.matrix_power(x, 2.0)
    with pytest.raises(TypeError, match="rtol must have a real floating dtype"):
        linalg.matrix_rank(x, rtol=from_numpy(np.array(1)))
    with pytest.raises(ValueError, match=r"rtol of shape \(3,\) does not broadcast"):
        linalg.pinv(from_numpy(np.ones((2, 2, 2))), rtol=from_numpy(np.ones(3)))
    with pytest.raises(ValueError, match=r"x2 of shape \(2,\) or \(\.\.\., 2, K\), got shape \(3,\)"):
        linalg.solve(x, from_numpy(np.ones(3)))
    with pytest.raises(ValueError, match="batch shapes .* do not broadcast"):
        linalg.solve(from_numpy(np.ones((2, 2, 2))), from_numpy(np.ones((3, 2, 1))))
    with pytest.raises(ValueError, match=r"outer\(\) needs 1-dimensional x2, got shape \(2, 2\)"):
        linalg.outer(from_numpy(np.ones(2)), x)
    with pytest.raises(TypeError, match=r"outer\(\) needs x1 of a numeric dtype"):
        linalg.outer(from_numpy(np.ones(2, bool)), from_numpy(np.ones(2)))
    with pytest.raises(TypeError, match="offset must be an int"):
        linalg.diagonal(x, offset=0.5)


@pytest.mark.parametrize("dtype", FLOAT_NAMES)
def test_stacks_of_empty_matrices(dtype):
    x = from_numpy(np.zeros((2, 0, 0), dtype))
    assert_same(linalg.det(x), np.ones(2, dtype))
    assert linalg.inv(x).shape == (2, 0, 0)
    assert linalg.eigh(x).eigenvalues.shape == (2, 0)
    assert_same(linalg.matrix_rank(x), np.zeros(2, np.int64))


def test_float32_results_stay_float32_on_the_device_of_x():
    x = from_numpy(_well_conditioned((3, 3), "float32"))
    for result in (linalg.inv(x), linalg.det(x), linalg.pinv(x), linalg.svdvals(x), linalg.vector_norm(x)):
        assert result.dtype == xp.float32 and result._t.dtype is torch.float32 and result.device == x.device


def test_inputs_on_different_devices_are_value_errors():
    here = from_numpy(np.eye(3))
    elsewhere = xp.NeuronArray(torch.empty((3, 3), dtype=torch.float64, device="meta"))
    with pytest.raises(ValueError, match=r"solve\(\): x1 and x2 are on different devices"):
        linalg.solve(here, elsewhere)
    with pytest.raises(ValueError, match=r"cross\(\): x1 and x2 are on different devices"):
        linalg.cross(here, elsewhere)
    with pytest.raises(ValueError, match=r"pinv\(\): x and rtol are on different devices"):
        linalg.pinv(here, rtol=xp.NeuronArray(torch.empty((), dtype=torch.float64, device="meta")))
