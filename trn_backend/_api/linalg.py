"""The implementations behind ``trn_backend.linalg`` (see there); the namespace exports them as its public
functions."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from .. import _dtypes
from .._helpers import NeuronArray, check_same_device, normalize_axes, tensor, wrap
from . import statistical as _stat
from .linear_algebra import matmul, matrix_transpose, tensordot, vecdot

# matmul, matrix_transpose, tensordot and vecdot are the top-level functions (the contraction planner's)
__all__ = [
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]

Tensor = torch.Tensor
inf = math.inf


class EighResult(NamedTuple):
    eigenvalues: NeuronArray
    eigenvectors: NeuronArray


class EigResult(NamedTuple):
    eigenvalues: NeuronArray
    eigenvectors: NeuronArray


class QRResult(NamedTuple):
    Q: NeuronArray
    R: NeuronArray


class SlogdetResult(NamedTuple):
    sign: NeuronArray
    logabsdet: NeuronArray


class SVDResult(NamedTuple):
    U: NeuronArray
    S: NeuronArray
    Vh: NeuronArray


# ---------------------------------------------------------------- argument checks


def _as_floating(t: Tensor, func: str, arg: str) -> Tensor:
    _dtypes.check(t.dtype, "numeric", func, arg)
    return t if t.dtype in _dtypes.FLOATING else _dtypes.cast(t, _dtypes.default_float(t.device))


def _floating(x: object, func: str, arg: str = "x") -> Tensor:
    """The tensor of a floating-point argument; integer input promotes to the default floating dtype."""
    return _as_floating(tensor(x, func, arg), func, arg)


def _matrices(t: Tensor, func: str, *, square: bool = False, arg: str = "x") -> Tensor:
    """Check that ``t`` is a (stack of) matrices, square ones when asked."""
    if t.dim() < 2:
        raise ValueError(
            f"{func}() needs {arg} of shape (..., M, N) with at least 2 dimensions, got shape {tuple(t.shape)}"
        )
    if square and t.shape[-1] != t.shape[-2]:
        raise ValueError(f"{func}() needs square matrices, {arg} of shape (..., M, M); got shape {tuple(t.shape)}")
    return t


def _half_refused(t: Tensor, func: str, arg: str = "x") -> Tensor:
    """``t`` unless it is float16 or bfloat16, which the LAPACK-backed functions refuse as NumPy's linalg refuses
    float16 (torch has no half-precision kernels for them): a TypeError saying how to cast."""
    if t.dtype in _dtypes.EXTENSION_FLOAT:
        raise TypeError(
            f"linalg.{func}() does not take {arg} of dtype {_dtypes.name(t.dtype)} (NumPy's linalg "
            f"refuses half precision too); cast it first: xp.astype({arg}, xp.float32)"
        )
    return t


def _lapack(x: object, func: str, *, square: bool = False) -> Tensor:
    """The floating (stack of) matrices of a decomposition or solver (LAPACK-backed on the CPU)."""
    return _half_refused(_matrices(_floating(x, func), func, square=square), func)


def _int_arg(value: object, func: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{func}(): {arg} must be an int, got {type(value).__name__}")
    return int(value)


def _numpy_errors(func: Callable[..., object]) -> Callable[..., object]:
    """``func`` with torch's LinAlgError (singular, not positive-definite, or non-converging input) raised as
    numpy.linalg.LinAlgError naming the function: the error NumPy raises in those cases (a ValueError too), on
    the namespace and on NumPy's entry points alike, which both run the functions of this module."""
    name = func.__name__

    @functools.wraps(func)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return func(*args, **kwargs)
        except torch.linalg.LinAlgError as e:
            # torch's message names its own kernel ("torch.linalg.solve: ..."); ours names the public function
            detail = re.sub(r"^(torch\.)?linalg\.\w+: ", "", str(e))
            raise np.linalg.LinAlgError(f"linalg.{name}(): {detail}") from None

    return wrapper


# ---------------------------------------------------------------- decompositions and solvers


def cholesky(x: NeuronArray, /, *, upper: bool = False) -> NeuronArray:
    """Cholesky factor (lower, or upper with upper=True) of Hermitian positive-definite matrices."""
    t = _lapack(x, "cholesky", square=True)
    return wrap(torch.linalg.cholesky(t, upper=bool(upper)))


def det(x: NeuronArray, /) -> NeuronArray:
    """Determinant of square matrices, in x's floating dtype."""
    return wrap(torch.linalg.det(_lapack(x, "det", square=True)))


def slogdet(x: NeuronArray, /) -> SlogdetResult:
    """Sign and log of the absolute determinant; a singular matrix gives sign 0 and logabsdet -inf."""
    t = _lapack(x, "slogdet", square=True)
    sign, logabsdet = torch.linalg.slogdet(t)
    return SlogdetResult(wrap(sign), wrap(logabsdet))


def inv(x: NeuronArray, /) -> NeuronArray:
    """Inverse of square matrices; a singular matrix is a numpy.linalg.LinAlgError."""
    t = _lapack(x, "inv", square=True)
    return wrap(torch.linalg.inv(t))


def solve(x1: NeuronArray, x2: NeuronArray, /) -> NeuronArray:
    """Solve A X = B. A 1-D x2 is one right-hand side (result shape x1.shape[:-2] + (M,)); otherwise x2 is a
    stack of (M, K) matrices whose batch broadcasts with x1's (never torch's batch-of-vectors reading)."""
    a, b = tensor(x1, "solve", "x1"), tensor(x2, "solve", "x2")
    check_same_device((a, b), "solve", "x1 and x2")
    dtype = _dtypes.promote(a.dtype, b.dtype)
    a = _half_refused(_as_floating(_dtypes.cast(a, dtype), "solve", "x1"), "solve", "x1")
    b = _half_refused(_as_floating(_dtypes.cast(b, dtype), "solve", "x2"), "solve", "x2")
    _matrices(a, "solve", square=True, arg="x1")
    vector = b.dim() == 1
    if vector:
        b = b.unsqueeze(-1)
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(
            f"solve(): x1 of shape {tuple(a.shape)} needs x2 of shape ({a.shape[-1]},) or "
            f"(..., {a.shape[-1]}, K), got shape {tuple(x2.shape)}"
        )
    try:
        batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"solve(): the batch shapes of x1 {tuple(a.shape)} and x2 {tuple(x2.shape)} do not broadcast"
        ) from None
    out = torch.linalg.solve(a.expand(batch + a.shape[-2:]), b.expand(batch + b.shape[-2:]))
    return wrap(out.squeeze(-1) if vector else out)


def qr(x: NeuronArray, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition; mode 'reduced' gives Q (..., M, K) and R (..., K, N) with K = min(M, N)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr(): mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = torch.linalg.qr(_lapack(x, "qr"), mode=mode)
    return QRResult(wrap(q), wrap(r))


def svd(x: NeuronArray, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition x = U diag(S) Vh, S real and in descending order."""
    u, s, vh = torch.linalg.svd(_lapack(x, "svd"), full_matrices=bool(full_matrices))
    return SVDResult(wrap(u), wrap(s), wrap(vh))


def svdvals(x: NeuronArray, /) -> NeuronArray:
    """Singular values in descending order, in the real dtype of x's precision."""
    return wrap(torch.linalg.svdvals(_lapack(x, "svdvals")))


def eigh(x: NeuronArray, /) -> EighResult:
    """Eigenvalues (real, ascending) and orthonormal eigenvectors of Hermitian matrices; only the lower
    triangle is read."""
    values, vectors = torch.linalg.eigh(_lapack(x, "eigh", square=True))
    return EighResult(wrap(values), wrap(vectors))


def eigvalsh(x: NeuronArray, /) -> NeuronArray:
    """Eigenvalues (real, ascending) of Hermitian matrices."""
    return wrap(torch.linalg.eigvalsh(_lapack(x, "eigvalsh", square=True)))


def eig(x: NeuronArray, /) -> EigResult:
    """Eigenvalues and eigenvectors of general square matrices, complex of x's precision; inf or nan in x is a
    numpy.linalg.LinAlgError, as in NumPy."""
    values, vectors = torch.linalg.eig(_finite(_lapack(x, "eig", square=True), "eig"))
    return EigResult(wrap(values), wrap(vectors))


def eigvals(x: NeuronArray, /) -> NeuronArray:
    """Eigenvalues of general square matrices, complex of x's precision; inf or nan in x is a
    numpy.linalg.LinAlgError, as in NumPy."""
    return wrap(torch.linalg.eigvals(_finite(_lapack(x, "eigvals", square=True), "eigvals")))


def _finite(t: Tensor, name: str) -> Tensor:
    """``t``, where every element is finite: torch's general eigensolver refuses inf and nan with a RuntimeError."""
    if not bool(torch.isfinite(t).all()):
        raise np.linalg.LinAlgError(f"linalg.{name}(): the matrix holds inf or nan")
    return t


def _rtol(rtol: float | NeuronArray | None, t: Tensor, func: str) -> float | Tensor | None:
    """A relative tolerance: a real number, or a real floating array that broadcasts with x's batch shape."""
    if rtol is None:
        return None  # torch's default is the standard's: max(M, N) * eps of x's precision
    if isinstance(rtol, NeuronArray):
        r = rtol._t
        check_same_device((t, r), func, "x and rtol")
        if r.dtype not in _dtypes.REAL_FLOAT:
            raise TypeError(f"{func}(): rtol must have a real floating dtype, got {_dtypes.name(r.dtype)}")
        try:
            torch.broadcast_shapes(r.shape, t.shape[:-2])
        except RuntimeError:
            raise ValueError(
                f"{func}(): rtol of shape {tuple(r.shape)} does not broadcast with the batch "
                f"shape {tuple(t.shape[:-2])} of x"
            ) from None
        return r
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)):
        raise TypeError(f"{func}(): rtol must be a float or a real floating array, got {type(rtol).__name__}")
    return float(rtol)


def matrix_rank(x: NeuronArray, /, *, rtol: float | NeuronArray | None = None) -> NeuronArray:
    """Number of singular values above rtol * the largest one (default int64)."""
    t = _lapack(x, "matrix_rank")
    return wrap(torch.linalg.matrix_rank(t, rtol=_rtol(rtol, t, "matrix_rank")))


def pinv(x: NeuronArray, /, *, rtol: float | NeuronArray | None = None) -> NeuronArray:
    """Moore-Penrose pseudo-inverse, singular values at or below rtol * the largest one treated as zero."""
    t = _lapack(x, "pinv")
    return wrap(torch.linalg.pinv(t, rtol=_rtol(rtol, t, "pinv")))


# ---------------------------------------------------------------- products built on matmul


def outer(x1: NeuronArray, x2: NeuronArray, /) -> NeuronArray:
    """Outer product of two vectors, computed as the (N, 1) @ (1, M) matmul so it reaches the kernel layer."""
    for x, arg in ((x1, "x1"), (x2, "x2")):
        t = tensor(x, "outer", arg)
        if t.dim() != 1:
            raise ValueError(f"outer() needs 1-dimensional {arg}, got shape {tuple(t.shape)}")
        _dtypes.check(t.dtype, "numeric", "outer", arg)
    return matmul(x1[:, None], x2[None, :])


def matrix_power(x: NeuronArray, n: int, /) -> NeuronArray:
    """x raised to the integer power n by repeated squaring through matmul; n = 0 gives the identity. Integer
    matrices stay in their dtype, exact with NumPy's wrap-around (float64 would lose digits beyond 2**53); a
    negative n inverts first, which makes an integer matrix the default float, as in NumPy."""
    t = _matrices(tensor(x, "matrix_power"), "matrix_power", square=True)
    n = _int_arg(n, "matrix_power", "n")
    if n == 0:
        eye = _dtypes.cast(torch.eye(t.shape[-1], dtype=torch.bool, device=t.device), t.dtype)
        return wrap(eye.expand(t.shape).clone())
    base = inv(wrap(_as_floating(t, "matrix_power", "x"))) if n < 0 else wrap(t)
    n = abs(n)
    result: NeuronArray | None = None
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    assert result is not None  # n >= 1 has a set bit, so the loop multiplied at least once
    # n = 1 would hand back x itself; the result is always a new array
    return result if result._t is not x._t else wrap(result._t.clone())


# ---------------------------------------------------------------- vectors, diagonals and norms


def cross(x1: NeuronArray, x2: NeuronArray, /, *, axis: int = -1) -> NeuronArray:
    """Cross product of 3-vectors along ``axis`` (negative, counted from the end); the other axes
    broadcast."""
    a, b = tensor(x1, "cross", "x1"), tensor(x2, "cross", "x2")
    check_same_device((a, b), "cross", "x1 and x2")
    dtype = _dtypes.promote(a.dtype, b.dtype)
    _dtypes.check(dtype, "numeric", "cross", "x1 and x2")
    axis = _cross_axis(_int_arg(axis, "cross", "axis"), a, b)
    for t, arg in ((a, "x1"), (b, "x2")):
        if t.shape[axis] != 3:
            raise ValueError(f"cross(): {arg} must have size 3 along axis {axis}, got shape {tuple(t.shape)}")
    try:  # torch.linalg.cross wants equal ranks
        a, b = torch.broadcast_tensors(*(_dtypes.compute(_dtypes.cast(t, dtype)) for t in (a, b)))
    except RuntimeError:
        raise ValueError(f"cross(): shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast") from None
    return wrap(_dtypes.restore(torch.linalg.cross(a, b, dim=axis), dtype))


def _cross_axis(axis: int, a: Tensor, b: Tensor) -> int:
    """The standard counts the axis from the end; a non-negative axis is accepted only where it is unambiguous
    (both inputs of the same rank)."""
    ndim = min(a.dim(), b.dim())
    if axis >= 0:
        if a.dim() != b.dim():
            raise ValueError(
                f"cross(): axis={axis} is ambiguous for inputs of {a.dim()} and {b.dim()} "
                f"dimensions; pass a negative axis, e.g. axis={axis - a.dim()}"
            )
        axis -= a.dim()
    if not -ndim <= axis <= -1:
        raise IndexError(
            f"cross(): axis {axis} is out of bounds for inputs of shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    return axis


def diagonal(x: NeuronArray, /, *, offset: int = 0) -> NeuronArray:
    """The offset diagonal of each matrix, as a new array of x's dtype."""
    t = _matrices(tensor(x, "diagonal"), "diagonal")
    return wrap(torch.diagonal(t, _int_arg(offset, "diagonal", "offset"), -2, -1).clone())


def trace(x: NeuronArray, /, *, offset: int = 0, dtype: _dtypes.DType | None = None) -> NeuronArray:
    """Sum of the offset diagonal of each matrix, with sum's dtype rules (small integers accumulate in 64
    bits)."""
    t = _matrices(tensor(x, "trace"), "trace")
    _dtypes.check(t.dtype, "numeric", "trace")
    return _stat.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def _order(value: object, func: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{func}(): ord must be a real number, got {type(value).__name__}")
    if math.isnan(value):
        raise ValueError(f"{func}(): ord must not be nan")
    return value


def vector_norm(
    x: NeuronArray, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, ord: int | float = 2
) -> NeuronArray:  # noqa: A002
    """The ord-norm over ``axis`` (all axes when None; () takes each element alone), real-valued."""
    t = _floating(x, "vector_norm")
    p = _order(ord, "vector_norm")
    axes = normalize_axes(axis, t.dim(), "vector_norm")
    if p == 2 and t.is_complex():
        # NumPy's 2-norm of complex values is sqrt(sum(re**2 + im**2)), not a sum of squared hypot(re, im):
        # inf+nanj counts as nan there (hypot would make it inf); computed as the norm over axes and the (re, im)
        # axis of the real view (with axes=() too: each element alone)
        out = torch.linalg.vector_norm(torch.view_as_real(t), 2, dim=(*axes, t.dim()), keepdim=bool(keepdims))
        return wrap(out.squeeze(-1) if keepdims else out)
    if not axes:  # the norm of each element alone (torch would read dim=() as every axis)
        return wrap((t != 0).to(_dtypes.real_of(t.dtype)) if p == 0 else torch.abs(t))
    if math.prod(t.shape[a] for a in axes) == 0 and (p < 0 or p == inf):
        return wrap(_empty_vector_norm(t, axes, bool(keepdims), p))
    return wrap(torch.linalg.vector_norm(t, p, dim=axes, keepdim=bool(keepdims)))


def _empty_vector_norm(t: Tensor, axes: tuple[int, ...], keepdims: bool, p: float) -> Tensor:
    """torch refuses norms without an identity on empty input; NumPy's values: inf-norm 0 (a max of absolute
    values), negative orders inf (a power of an empty sum), -inf undefined (a min of nothing)."""
    if p == -inf:
        raise ValueError(
            f"vector_norm(): ord=-inf of an empty set of values (shape {tuple(t.shape)}, axes {axes}) is undefined"
        )
    shape = [1 if i in axes else n for i, n in enumerate(t.shape) if keepdims or i not in axes]
    return torch.full(shape, 0.0 if p == inf else inf, dtype=_dtypes.real_of(t.dtype), device=t.device)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, inf, -inf)


def matrix_norm(x: NeuronArray, /, *, keepdims: bool = False, ord: int | float | str | None = "fro") -> NeuronArray:  # noqa: A002
    """Frobenius, nuclear or induced 1/2/inf norm of each matrix (negative ords: the minimum-based
    variants)."""
    t = _matrices(_floating(x, "matrix_norm"), "matrix_norm")
    if ord is None:
        ord = "fro"
    if isinstance(ord, bool) or ord not in _MATRIX_ORDS:
        raise ValueError(f"matrix_norm(): ord must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf; got {ord!r}")
    if ord in (2, -2, "nuc"):  # singular values
        _half_refused(t, "matrix_norm")
    m, n = t.shape[-2], t.shape[-1]
    if {-1: n, -2: min(m, n), -inf: m}.get(ord) == 0:  # type: ignore[arg-type]  # a str ord is simply no key
        raise ValueError(f"matrix_norm(): ord={ord} takes a minimum over an empty set for shape {tuple(t.shape)}")
    return wrap(torch.linalg.matrix_norm(t, ord=ord, dim=(-2, -1), keepdim=bool(keepdims)))


# the one place torch's LinAlgError becomes NumPy's: every public function defined here (the products come from
# the contraction planner, which raises no LinAlgError)
for _name in __all__:
    if globals()[_name].__module__ == __name__:
        globals()[_name] = _numpy_errors(globals()[_name])
del _name
