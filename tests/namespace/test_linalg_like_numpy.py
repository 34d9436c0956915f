"""linalg cases where NumPy 2's answer is the oracle on the same data: the error NumPy raises for singular,
non-positive-definite or non-converging input (numpy.linalg.LinAlgError, on the namespace and on NumPy's entry
points alike), vecdot of 0-d operands, and the 2-norm of complex values with a non-finite part."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import trn_backend as xp
from tests.support import assert_same, from_numpy

SINGULAR = np.zeros((2, 2))
NOT_POSITIVE_DEFINITE = np.array([[0.0, -0.0], [1.0, -1.0]])
NON_FINITE = np.array([[np.inf, np.nan], [1.0, 2.0]])


def _numpy_raises_linalgerror(call) -> None:
    with pytest.raises(np.linalg.LinAlgError):
        call()


# (namespace call, NumPy call, input): each raises LinAlgError in NumPy on this input
NAMESPACE_CASES = {
    "inv": (lambda x: xp.linalg.inv(x), np.linalg.inv, SINGULAR),
    "cholesky": (lambda x: xp.linalg.cholesky(x), np.linalg.cholesky, NOT_POSITIVE_DEFINITE),
    "solve": (
        lambda x: xp.linalg.solve(x, xp.ones(2, dtype=xp.float64)),
        lambda a: np.linalg.solve(a, np.ones(2)),
        SINGULAR,
    ),
    "svd": (lambda x: xp.linalg.svd(x), np.linalg.svd, NON_FINITE),
    "svdvals": (lambda x: xp.linalg.svdvals(x), np.linalg.svdvals, NON_FINITE),
    "pinv": (lambda x: xp.linalg.pinv(x), np.linalg.pinv, NON_FINITE),
    "matrix_rank": (lambda x: xp.linalg.matrix_rank(x), np.linalg.matrix_rank, NON_FINITE),
}


@pytest.mark.parametrize("name", sorted(NAMESPACE_CASES))
def test_namespace_raises_numpys_linalgerror_where_numpy_does(name):
    ours, theirs, a = NAMESPACE_CASES[name]
    _numpy_raises_linalgerror(lambda: theirs(a))
    with pytest.raises(np.linalg.LinAlgError, match=rf"^linalg\.{name}\(\): "):
        ours(from_numpy(a))


@pytest.mark.parametrize("name", sorted(NAMESPACE_CASES))
def test_numpy_entry_points_raise_numpys_linalgerror_where_numpy_does(name):
    _, theirs, a = NAMESPACE_CASES[name]
    _numpy_raises_linalgerror(lambda: theirs(a))
    with pytest.raises(np.linalg.LinAlgError):
        theirs(from_numpy(a))


def test_lstsq_of_non_finite_input_raises_numpys_linalgerror():
    b = np.ones(2)
    _numpy_raises_linalgerror(lambda: np.linalg.lstsq(NON_FINITE, b))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.lstsq(from_numpy(NON_FINITE), from_numpy(b))


def test_linalgerror_is_still_a_value_error_and_singular_batches_name_the_function():
    a = np.stack([np.eye(3), np.zeros((3, 3))]).astype(np.float32)
    _numpy_raises_linalgerror(lambda: np.linalg.inv(a))
    with pytest.raises(ValueError, match=r"^linalg\.inv\(\): .*singular"):
        xp.linalg.inv(from_numpy(a))


@pytest.mark.parametrize("route", ["namespace", "numpy.vecdot", "numpy.linalg.vecdot"])
def test_vecdot_of_a_0d_operand_is_numpys_value_error(route):
    call = {"namespace": xp.vecdot, "numpy.vecdot": np.vecdot, "numpy.linalg.vecdot": np.linalg.vecdot}[route]
    one, vec = np.array(2.0), np.array([1.0, 2.0])
    for a, b, arg in ((one, vec, "x1"), (vec, one, "x2")):
        with pytest.raises(ValueError):
            np.vecdot(a, b)
        with pytest.raises(ValueError, match=rf"vecdot\(\): {arg} is 0-dimensional"):
            call(from_numpy(a), from_numpy(b))


def test_vecdot_axis_out_of_range_is_still_an_index_error():
    a = np.ones((2, 3))
    with pytest.raises(IndexError, match=r"in \[-2, -1\]"):
        xp.vecdot(from_numpy(a), from_numpy(a), axis=-3)


def _complex_with_non_finite_parts(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    z = rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))
    z[0, 0, 0] = complex(np.inf, np.nan)
    z[0, 1, 2] = complex(np.nan, np.inf)
    z[1, 1, 1] = complex(-np.inf, 0.0)
    z[1, 2, 3] = complex(np.nan, 1.0)
    return z.astype(dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_two_norm_with_non_finite_parts_is_numpys(dtype):
    # NumPy's 2-norm of complex values is sqrt(sum(re**2 + im**2)): inf+nanj gives nan, where a sum of
    # squared magnitudes (hypot(inf, nan) = inf) would give inf
    z = _complex_with_non_finite_parts(dtype)
    rtol = 1e-6 if dtype == "complex64" else 1e-14
    for axis, keepdims in itertools.product((None, 0, -1, (0, 2), (-1, -2), ()), (False, True)):
        with np.errstate(invalid="ignore"):  # the oracle's own nan
            want = np.linalg.vector_norm(z, axis=axis, keepdims=keepdims)
        assert_same(xp.linalg.vector_norm(from_numpy(z), axis=axis, keepdims=keepdims), want, rtol=rtol)
        assert_same(np.linalg.vector_norm(from_numpy(z), axis=axis, keepdims=keepdims), want, rtol=rtol)
    with np.errstate(invalid="ignore"):
        want = np.linalg.norm(z)
    assert_same(np.linalg.norm(from_numpy(z)), want, rtol=rtol)


@pytest.mark.parametrize("ord_", [1, 3, np.inf, -1, 0])
def test_other_orders_of_complex_norms_still_use_the_magnitude(ord_):
    # NumPy takes |z| = hypot(re, im) for every order but 2: inf+nanj counts as inf there
    z = _complex_with_non_finite_parts("complex128")
    want = np.linalg.vector_norm(z, axis=-1, ord=ord_)
    assert_same(xp.linalg.vector_norm(from_numpy(z), axis=-1, ord=ord_), want, rtol=1e-14)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, complex(0, np.inf), complex(np.nan, 1)])
def test_lstsq_raises_numpys_linalgerror_for_any_non_finite_a(bad):
    a = np.array([[-1 + 1j, -1 - 1j], [2.0, 6.5e16 - 1j], [1.0, -1 + 1j]])
    a[2, 0] = bad
    b = np.array([3e229, 2.0, -3.0])
    _numpy_raises_linalgerror(lambda: np.linalg.lstsq(a, b))
    with pytest.raises(np.linalg.LinAlgError, match=r"lstsq\(\): SVD did not converge"):
        np.linalg.lstsq(from_numpy(a), from_numpy(b))


def test_lstsq_of_non_finite_b_answers_as_numpy_does():
    # NumPy answers (no LinAlgError) when only b is non-finite; which outputs are inf or nan then depends on the
    # BLAS, so only the answer's dtype and shape are compared
    a, b = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]), np.array([np.inf, 1.0, 2.0])
    want = np.linalg.lstsq(a, b)
    got = np.linalg.lstsq(from_numpy(a), from_numpy(b))
    assert np.asarray(got[0]).dtype == want[0].dtype and np.asarray(got[0]).shape == want[0].shape
    assert got[2] == want[2]


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("name", ["eig", "eigvals"])
def test_general_eigensolvers_raise_numpys_linalgerror_for_non_finite_input(name, bad):
    a = np.array([[1.0, bad], [0.0, 2.0]])
    with pytest.raises(np.linalg.LinAlgError):
        getattr(np.linalg, name)(a)
    for run in (lambda: getattr(xp.linalg, name)(from_numpy(a)), lambda: getattr(np.linalg, name)(from_numpy(a))):
        with pytest.raises(np.linalg.LinAlgError, match=name):
            run()
