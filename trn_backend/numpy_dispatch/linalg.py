"""NumPy's "Linear algebra" section (numpy.linalg and the products NumPy lists there: dot, vdot, inner, outer,
tensordot, kron, matrix_power; einsum is in ``einsum``, numpy.diagonal in ``indexing``).

Where NumPy's semantics differ from the standard's (norm's ord and axis, eigh's UPLO, qr's mode 'r', pinv's rcond,
matrix_rank's tol, lstsq's rcond, residuals and rank), the NumPy meaning is implemented here; the functions NumPy 2
took from the standard (numpy.linalg.matmul, vector_norm, svdvals, ...) are the namespace's own, called with the
same signature. Integer and boolean input of the floating-point functions computes in the device's default float:
float64 as in NumPy, float32 on Neuron.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import torch

from .. import _dtypes
from .._helpers import normalize_axes
from ._common import A, _as, _direct, _flat, _float_for, _floating, _to_end
from ._registry import implements, xp

# ---------------------------------------------------------------- matrix and vector products


@implements(np.dot, arrays="a b")
def dot(a: A, b: A) -> A:
    """numpy.dot: a product for 0-d operands, else the last axis of a with the second-to-last of b."""
    if a.ndim == 0 or b.ndim == 0:
        return xp.multiply(a, b)
    return xp.tensordot(a, b, axes=((a.ndim - 1,), (builtins.max(b.ndim - 2, 0),)))


@implements(np.vdot, arrays="a b")
def vdot(a: A, b: A) -> A:
    """numpy.vdot: the conjugated dot product of the flattened arrays."""
    if a.size != b.size:
        raise ValueError(f"numpy.vdot(): a has {a.size} elements but b has {b.size}; they must be equal")
    return xp.vecdot(_flat(a), _flat(b))


@implements(np.inner, arrays="a b")
def inner(a: A, b: A) -> A:
    """numpy.inner: the last axes of a and b contracted (a product for 0-d operands)."""
    if a.ndim == 0 or b.ndim == 0:
        return xp.multiply(a, b)
    return xp.tensordot(a, b, axes=((-1,), (-1,)))


@implements(np.outer, arrays="a b")
def outer(a: A, b: A) -> A:
    """numpy.outer: every element of flattened a times every element of flattened b."""
    return xp.multiply(xp.reshape(a, (-1, 1)), xp.reshape(b, (1, -1)))


@implements(np.tensordot, arrays="a b")
def tensordot(a: A, b: A, axes: Any = 2) -> A:
    """numpy.tensordot on the engine."""
    return xp.tensordot(a, b, axes=axes)


@implements(np.kron, arrays="a b")
def kron(a: A, b: A) -> A:
    """numpy.kron: the Kronecker product, ranks aligned at the right."""
    nd = builtins.max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    spread_a = xp.reshape(a, tuple(d for s in sa for d in (s, 1)))
    spread_b = xp.reshape(b, tuple(d for s in sb for d in (1, s)))
    return xp.reshape(xp.multiply(spread_a, spread_b), tuple(i * j for i, j in zip(sa, sb, strict=True)))


@implements(np.linalg.matrix_power, arrays="a")
def matrix_power(a: A, n: int) -> A:
    """numpy.linalg.matrix_power."""
    return xp.linalg.matrix_power(a, n)


# ---------------------------------------------------------------- decompositions


@implements(np.linalg.cholesky, arrays="a")
def cholesky(a: A, upper: bool = False) -> A:
    """numpy.linalg.cholesky."""
    return xp.linalg.cholesky(_floating(a), upper=upper)


@implements(np.linalg.qr, arrays="a")
def qr(a: A, mode: str = "reduced") -> Any:
    """numpy.linalg.qr for modes 'reduced', 'complete' and 'r' (R alone)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(
            f"numpy.linalg.qr(): mode={mode!r} is not supported on NeuronArray; use 'reduced', 'complete' or 'r'"
        )
    result = xp.linalg.qr(_floating(a), mode="reduced" if mode == "r" else mode)
    return result.R if mode == "r" else result


@implements(np.linalg.svd, arrays="a")
def svd(a: A, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """numpy.linalg.svd (the singular values alone for compute_uv=False)."""
    a = _floating(a)
    return xp.linalg.svd(a, full_matrices=full_matrices) if compute_uv else xp.linalg.svdvals(a)


# ---------------------------------------------------------------- eigenvalues


def _hermitian_lower(a: A, uplo: str, func: str) -> A:
    """The matrix whose lower triangle holds the Hermitian matrix NumPy reads from ``UPLO``."""
    if uplo not in ("L", "U"):
        raise ValueError(f"{func}(): UPLO must be 'L' or 'U', got {uplo!r}")
    a = _floating(a)
    return a if uplo == "L" else xp.conj(xp.matrix_transpose(a))


@implements(np.linalg.eigh, arrays="a")
def eigh(a: A, UPLO: str = "L") -> Any:
    """numpy.linalg.eigh from the triangle UPLO names."""
    return xp.linalg.eigh(_hermitian_lower(a, UPLO, "numpy.linalg.eigh"))


@implements(np.linalg.eigvalsh, arrays="a")
def eigvalsh(a: A, UPLO: str = "L") -> A:
    """numpy.linalg.eigvalsh from the triangle UPLO names."""
    return xp.linalg.eigvalsh(_hermitian_lower(a, UPLO, "numpy.linalg.eigvalsh"))


def _general_eig(a: A, func: str, vectors: bool) -> Any:
    """numpy.linalg.eig's values (and vectors) of general square matrices. NumPy refuses inf and nan (LAPACK's
    geev does not converge on them; torch returns NaNs instead), and returns real arrays for real input whose
    eigenvalues all are real (their imaginary parts exactly zero), complex ones otherwise."""
    a = _floating(a)
    if not bool(xp.all(xp.isfinite(a))):
        raise np.linalg.LinAlgError(f"{func}(): the array must not contain infs or NaNs")
    result: Any = xp.linalg.eig(a) if vectors else xp.linalg.eigvals(a)  # an EigResult, or the eigenvalues alone
    values = result.eigenvalues if vectors else result
    if a._t.dtype in _dtypes.COMPLEX_FLOAT or bool(xp.any(xp.imag(values) != 0)):
        return result
    if not vectors:
        return xp.real(values)
    return result._replace(eigenvalues=xp.real(values), eigenvectors=xp.real(result.eigenvectors))


@implements(np.linalg.eig, arrays="a")
def eig(a: A) -> Any:
    """numpy.linalg.eig: eigenvalues and right eigenvectors (columns), real where every eigenvalue is real."""
    return _general_eig(a, "numpy.linalg.eig", True)


@implements(np.linalg.eigvals, arrays="a")
def eigvals(a: A) -> A:
    """numpy.linalg.eigvals: eigenvalues, real where every eigenvalue is real."""
    return _general_eig(a, "numpy.linalg.eigvals", False)


# ---------------------------------------------------------------- norms and other numbers


@implements(np.linalg.norm, arrays="x")
def norm(x: A, ord: Any = None, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.linalg.norm: a vector norm over one axis, a matrix norm over two, the 2-norm of the flattened
    array for ord=None and axis=None."""
    x = _floating(x)
    if axis is None:
        if ord is None:
            return xp.linalg.vector_norm(x, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError(f"numpy.linalg.norm(): ord={ord!r} needs a 1-d or 2-d array or axis=, got shape {x.shape}")
        axis = tuple(range(x.ndim))
    axes = normalize_axes(axis, x.ndim, "numpy.linalg.norm")
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"numpy.linalg.norm(): ord={ord!r} is a matrix norm; vectors take numbers")
        return xp.linalg.vector_norm(x, axis=axes, ord=2 if ord is None else ord, keepdims=keepdims)
    if len(axes) != 2:
        raise ValueError(f"numpy.linalg.norm(): axis must name one or two axes, got {axis!r}")
    m = xp.linalg.matrix_norm(xp.moveaxis(x, axes, (-2, -1)), ord="fro" if ord is None else ord)
    return xp.expand_dims(m, axis=tuple(sorted(axes))) if keepdims else m


@implements(np.linalg.det, arrays="a")
def det(a: A) -> A:
    """numpy.linalg.det."""
    return xp.linalg.det(_floating(a))


@implements(np.linalg.slogdet, arrays="a")
def slogdet(a: A) -> Any:
    """numpy.linalg.slogdet: (sign, logabsdet)."""
    return xp.linalg.slogdet(_floating(a))


@implements(np.linalg.matrix_rank, arrays="A tol rtol", weak="tol rtol")
def matrix_rank(A: A, tol: Any = None, hermitian: bool = False, rtol: Any = None) -> A:
    """numpy.linalg.matrix_rank: singular values above tol (absolute) or rtol times the largest; hermitian
    is a hint (a Hermitian matrix's singular values are its eigenvalues' magnitudes)."""
    A = _floating(A)
    if tol is not None and rtol is not None:
        raise ValueError("numpy.linalg.matrix_rank(): give tol= or rtol=, not both")
    if A.ndim < 2:
        return xp.astype(xp.any(A), _dtypes.int64)
    if tol is not None:
        return xp.count_nonzero(xp.greater(xp.linalg.svdvals(A), tol), axis=-1)
    return xp.linalg.matrix_rank(A, rtol=rtol)


@implements(np.trace, arrays="a")
def trace(a: A, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> A:
    """numpy.trace: sums of diagonals over any two axes (booleans sum as int64, as in NumPy)."""
    if a._t.dtype is _dtypes.bool and dtype is None:
        a = xp.astype(a, _dtypes.int64)
    return xp.linalg.trace(_to_end(a, axis1, axis2), offset=offset, dtype=dtype)


# ---------------------------------------------------------------- solving equations and inverting matrices


@implements(np.linalg.solve, arrays="a b")
def solve(a: A, b: A) -> A:
    """numpy.linalg.solve (b is a vector only when 1-d, as in NumPy 2)."""
    return xp.linalg.solve(_floating(a), _floating(b))


@implements(np.linalg.lstsq, arrays="a b")
def lstsq(a: A, b: A, rcond: Any = None) -> tuple[A, A, np.int32, A]:
    """numpy.linalg.lstsq through the SVD: (x, residuals, rank, s) with NumPy's conventions: singular values at
    or below rcond * max(s) count as zero (rcond=None: eps * max(M, N); negative: eps); residuals hold the
    squared 2-norm of each column of b - a @ x, and are empty when rank < N or M <= N; rank is np.int32."""
    func = "numpy.linalg.lstsq"
    if a.ndim != 2:
        raise np.linalg.LinAlgError(f"{func}(): a is {a.ndim}-dimensional; it must be two-dimensional")
    if b.ndim not in (1, 2):
        raise np.linalg.LinAlgError(f"{func}(): b must be 1-d or 2-d, got shape {b.shape}")
    m, n = a.shape
    if b.shape[0] != m:
        raise np.linalg.LinAlgError(f"{func}(): incompatible dimensions: a is {a.shape}, b is {b.shape}")
    dtype = _linalg_dtype(a, b, func)
    real = _dtypes.real_of(dtype)
    eps = float(torch.finfo(real).eps)
    cutoff_ratio = eps * builtins.max(m, n) if rcond is None else float(rcond)
    if cutoff_ratio < 0:
        cutoff_ratio = eps
    a, rhs = _as(a, dtype), _as(b if b.ndim == 2 else xp.reshape(b, (m, 1)), dtype)
    if not bool(xp.all(xp.isfinite(a))):
        # LAPACK's gelsd, NumPy's solver, never converges on inf or nan in a (the SVD's own scaling fails);
        # torch's SVD returns NaNs for some such inputs instead of raising
        raise np.linalg.LinAlgError(f"{func}(): SVD did not converge in Linear Least Squares: a contains infs or NaNs")
    x, s, rank = _svd_solve(a, rhs, cutoff_ratio)
    if rank == n and m > n:
        residuals = xp.sum(xp.square(xp.abs(rhs - xp.matmul(a, x))), axis=0)
    else:
        residuals = xp.zeros((0,), dtype=real, device=a.device)
    return (x if b.ndim == 2 else x[:, 0]), residuals, np.int32(rank), s


def _linalg_dtype(a: A, b: A, func: str) -> torch.dtype:
    """NumPy linalg's common dtype: integers and booleans as float64, float32 only if nothing needs more."""
    dtype: torch.dtype | None = None
    for x in (a, b):
        d = x._t.dtype
        if d in _dtypes.EXTENSION_FLOAT:
            raise TypeError(f"{func}(): array type {_dtypes.name(d)} is unsupported in linalg")
        d = d if d in _dtypes.FLOATING else _float_for(x.device)
        dtype = d if dtype is None else _dtypes.promote(dtype, d)
    assert dtype is not None  # the loop ran for a and b
    return dtype


def _svd_solve(a: A, rhs: A, cutoff_ratio: float) -> tuple[A, A, int]:
    """The minimum-norm least-squares solution, the singular values and the rank."""
    m, n = a.shape
    real = _dtypes.real_of(a._t.dtype)
    if m == 0 or n == 0:
        x = xp.zeros((n, rhs.shape[1]), dtype=a._t.dtype, device=a.device)
        return x, xp.zeros((0,), dtype=real, device=a.device), 0
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    kept = xp.greater(s, s[0] * cutoff_ratio)
    inverse = xp.where(kept, 1 / xp.where(kept, s, 1), 0)
    projected = xp.matmul(xp.conj(xp.matrix_transpose(u)), rhs) * xp.reshape(_as(inverse, a._t.dtype), (-1, 1))
    x = xp.matmul(xp.conj(xp.matrix_transpose(vh)), projected)
    return x, s, int(xp.count_nonzero(kept))


@implements(np.linalg.inv, arrays="a")
def inv(a: A) -> A:
    """numpy.linalg.inv."""
    return xp.linalg.inv(_floating(a))


@implements(np.linalg.pinv, arrays="a rcond rtol", weak="rcond rtol")
def pinv(a: A, rcond: Any = None, hermitian: bool = False, rtol: Any = np._NoValue) -> A:
    """numpy.linalg.pinv with NumPy's cutoff (1e-15 relative unless rcond or rtol is given); hermitian is a
    hint that does not change the result."""
    if rcond is not None and rtol is not np._NoValue:
        raise ValueError("numpy.linalg.pinv(): give rcond= or rtol=, not both")
    if rcond is None:
        rcond = 1e-15 if rtol is np._NoValue else rtol
    return xp.linalg.pinv(_floating(a), rtol=rcond)


# ---------------------------------------------------------------- the functions NumPy 2 took from the standard

for _np_func, _path, _arrays in (
    (np.linalg.matmul, "matmul", "x1 x2"),
    (np.linalg.tensordot, "tensordot", "x1 x2"),
    (np.linalg.vecdot, "vecdot", "x1 x2"),
    (np.linalg.outer, "linalg.outer", "x1 x2"),
    (np.linalg.cross, "linalg.cross", "x1 x2"),
    (np.linalg.matrix_transpose, "matrix_transpose", "x"),
    (np.linalg.trace, "linalg.trace", "x"),
    (np.linalg.diagonal, "linalg.diagonal", "x"),
    (np.linalg.vector_norm, "linalg.vector_norm", "x"),
    (np.linalg.matrix_norm, "linalg.matrix_norm", "x"),
    (np.linalg.svdvals, "linalg.svdvals", "x"),
):
    _direct(_np_func, _path, arrays=_arrays)
