"""Empty axes in the FFT and linear-algebra functions, against NumPy on the same shapes: an empty batch gives an
empty result of NumPy's shape and dtype (torch's CPU FFT refuses an empty batch), an empty matrix NumPy's value,
and an empty transform axis NumPy's error (a ValueError; LinAlgError is one)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import trn_backend as xp
from tests.support import assert_same

FFT_SHAPES = [(0, 4), (2, 0, 4), (0, 3, 3), (2, 0, 3, 3), (3, 0), (0,), (0, 0)]


def _numpy_or_error(f, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's RuntimeWarnings on empty reductions
        try:
            return f(*args, **kwargs)
        except ValueError as e:
            return e


def _check(ours, theirs) -> None:
    if isinstance(theirs, Exception):
        with pytest.raises(ValueError):
            ours()
        return
    # the inputs are zeros, whose transform is zeros: NumPy's shape and dtype, and zeros (NumPy's irfft and hfft
    # of an empty axis padded to n return uninitialized memory)
    assert_same(ours(), np.zeros_like(theirs))


ONE_D = {
    "fft": np.complex128,
    "ifft": np.complex128,
    "rfft": np.float64,
    "irfft": np.complex128,
    "hfft": np.complex128,
    "ihfft": np.float64,
}
N_D = {"fftn": np.complex128, "ifftn": np.complex128, "rfftn": np.float64, "irfftn": np.complex128}


@pytest.mark.parametrize("shape", FFT_SHAPES)
@pytest.mark.parametrize("name", sorted(ONE_D))
@pytest.mark.parametrize("n", [None, 6])
def test_one_dimensional_transforms_of_empty_arrays(name: str, shape: tuple[int, ...], n: int | None) -> None:
    a = np.zeros(shape, ONE_D[name])
    for axis in range(-len(shape), 0):
        theirs = _numpy_or_error(getattr(np.fft, name), a, n=n, axis=axis)
        _check(lambda: getattr(xp.fft, name)(xp.asarray(a), n=n, axis=axis), theirs)  # noqa: B023
        _check(lambda: getattr(np.fft, name)(xp.asarray(a), n=n, axis=axis), theirs)  # noqa: B023


@pytest.mark.parametrize("shape", FFT_SHAPES)
@pytest.mark.parametrize("name", sorted(N_D))
def test_n_dimensional_transforms_of_empty_arrays(name: str, shape: tuple[int, ...]) -> None:
    a = np.zeros(shape, N_D[name])
    for axes in ([-1], [0], list(range(-min(2, len(shape)), 0))):
        for s in (None, [4] * len(axes)):
            theirs = _numpy_or_error(getattr(np.fft, name), a, s=s, axes=axes)
            _check(lambda: getattr(xp.fft, name)(xp.asarray(a), s=s, axes=axes), theirs)  # noqa: B023
            _check(lambda: getattr(np.fft, name)(xp.asarray(a), s=s, axes=axes), theirs)  # noqa: B023
    if len(shape) >= 2:  # numpy.fft.fft2 and friends: the last two axes by default
        two = name.replace("n", "2")
        _check(lambda: getattr(np.fft, two)(xp.asarray(a)), _numpy_or_error(getattr(np.fft, two), a))


@pytest.mark.parametrize("shape", FFT_SHAPES)
def test_shifts_of_empty_arrays(shape: tuple[int, ...]) -> None:
    a = np.zeros(shape)
    for name in ("fftshift", "ifftshift"):
        assert_same(getattr(xp.fft, name)(xp.asarray(a)), getattr(np.fft, name)(a))
        assert_same(getattr(np.fft, name)(xp.asarray(a)), getattr(np.fft, name)(a))


MATRIX_SHAPES = [(0, 3, 3), (2, 0, 3, 3), (0, 0), (3, 0, 0), (0, 2, 3), (0, 3, 2), (2, 0, 0)]

# NumPy's linalg functions of one matrix argument (square ones refuse the others with NumPy's error)
LINALG = {
    "inv": lambda m, a: m.inv(a),
    "det": lambda m, a: m.det(a),
    "slogdet": lambda m, a: tuple(m.slogdet(a)),
    "solve": lambda m, a: m.solve(a, a),
    "cholesky": lambda m, a: m.cholesky(a),
    "qr": lambda m, a: tuple(m.qr(a)),
    "qr_r": lambda m, a: m.qr(a, mode="r"),
    "svd_values": lambda m, a: m.svd(a, compute_uv=False),
    "svd_shapes": lambda m, a: tuple(x.shape for x in m.svd(a)),
    "eigh_values": lambda m, a: m.eigh(a)[0],
    "eigh_shapes": lambda m, a: tuple(x.shape for x in m.eigh(a)),
    "eigvalsh": lambda m, a: m.eigvalsh(a),
    "eig_shapes": lambda m, a: tuple(x.shape for x in m.eig(a)),
    "eigvals": lambda m, a: m.eigvals(a),
    "pinv": lambda m, a: m.pinv(a),
    "matrix_rank": lambda m, a: m.matrix_rank(a),
    "norm": lambda m, a: m.norm(a),
    "norm_fro": lambda m, a: m.norm(a, axis=(-2, -1)),
    "norm_1": lambda m, a: m.norm(a, ord=1, axis=(-2, -1)),
    "norm_inf": lambda m, a: m.norm(a, ord=np.inf, axis=(-2, -1)),
    "norm_2": lambda m, a: m.norm(a, ord=2, axis=(-2, -1)),
    "norm_-2": lambda m, a: m.norm(a, ord=-2, axis=(-2, -1)),
    "norm_nuc": lambda m, a: m.norm(a, ord="nuc", axis=(-2, -1)),
    "matrix_power_0": lambda m, a: m.matrix_power(a, 0),
    "matrix_power_3": lambda m, a: m.matrix_power(a, 3),
    "matrix_power_-2": lambda m, a: m.matrix_power(a, -2),
    "cond": lambda m, a: m.cond(a),
}


def _as_numpy(r):
    if isinstance(r, tuple) and r and isinstance(r[0], tuple):
        return r  # shapes
    return tuple(np.asarray(x) for x in r) if isinstance(r, tuple) else np.asarray(r)


@pytest.mark.parametrize("shape", MATRIX_SHAPES)
@pytest.mark.parametrize("name", sorted(LINALG))
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_numpy_linalg_of_empty_batches_and_matrices(name: str, shape: tuple[int, ...], dtype: type) -> None:
    a = np.zeros(shape, dtype)
    if shape[-1] == shape[-2]:
        a = a + np.eye(shape[-1], dtype=dtype)
    f = LINALG[name]
    theirs = _numpy_or_error(f, np.linalg, a)
    if isinstance(theirs, Exception):
        with pytest.raises(ValueError):
            f(np.linalg, xp.asarray(a))
        return
    got = f(np.linalg, xp.asarray(a))
    if name.endswith("_shapes"):
        assert got == theirs
        return
    expected = _as_numpy(theirs)
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(got, expected, strict=True):
        g = g if isinstance(g, xp.NeuronArray) else xp.asarray(g)
        assert_same(g, e, rtol=1e-12)


NAMESPACE = {
    "inv": lambda a: xp.linalg.inv(a),
    "det": lambda a: xp.linalg.det(a),
    "slogdet": lambda a: tuple(xp.linalg.slogdet(a)),
    "solve": lambda a: xp.linalg.solve(a, a),
    "cholesky": lambda a: xp.linalg.cholesky(a),
    "qr": lambda a: tuple(xp.linalg.qr(a)),
    "svdvals": lambda a: xp.linalg.svdvals(a),
    "eigvalsh": lambda a: xp.linalg.eigvalsh(a),
    "pinv": lambda a: xp.linalg.pinv(a),
    "matrix_rank": lambda a: xp.linalg.matrix_rank(a),
    "matrix_norm": lambda a: xp.linalg.matrix_norm(a),
    "matrix_norm_nuc": lambda a: xp.linalg.matrix_norm(a, ord="nuc"),
    "matrix_norm_2": lambda a: xp.linalg.matrix_norm(a, ord=2),
    "matrix_power_2": lambda a: xp.linalg.matrix_power(a, 2),
    "matrix_power_-1": lambda a: xp.linalg.matrix_power(a, -1),
    "vector_norm": lambda a: xp.linalg.vector_norm(a),
}
NUMPY_OF = {
    "svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
    "matrix_norm": lambda a: np.linalg.norm(a, axis=(-2, -1)),
    "matrix_norm_nuc": lambda a: np.linalg.norm(a, ord="nuc", axis=(-2, -1)),
    "matrix_norm_2": lambda a: np.linalg.norm(a, ord=2, axis=(-2, -1)),
    "matrix_power_2": lambda a: np.linalg.matrix_power(a, 2),
    "matrix_power_-1": lambda a: np.linalg.matrix_power(a, -1),
    "vector_norm": lambda a: np.linalg.norm(a.reshape(-1)),
}


@pytest.mark.parametrize("shape", MATRIX_SHAPES)
@pytest.mark.parametrize("name", sorted(NAMESPACE))
def test_namespace_linalg_of_empty_batches_and_matrices(name: str, shape: tuple[int, ...]) -> None:
    a = np.zeros(shape)
    if shape[-1] == shape[-2]:
        a = a + np.eye(shape[-1])
    numpy_f = NUMPY_OF.get(name) or (lambda a: LINALG[name](np.linalg, a))
    theirs = _numpy_or_error(numpy_f, a)
    if isinstance(theirs, Exception):
        with pytest.raises(ValueError):
            NAMESPACE[name](xp.asarray(a))
        return
    got = NAMESPACE[name](xp.asarray(a))
    expected = _as_numpy(theirs)
    for g, e in zip(
        got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,), strict=True
    ):
        assert_same(g, e, rtol=1e-12)
