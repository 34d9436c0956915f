"""autoray and cotengra on NeuronArrays: autoray infers the backend "trn_backend", its NumPy-style calls run on the
namespace and return NeuronArrays that match NumPy, and cotengra's contractions (einsum, array_contract,
ContractionTree.contract with and without slicing) run through the planner into the kernel layer."""

from __future__ import annotations

import subprocess
import sys

import autoray as ar
import cotengra as ctg
import numpy as np
import opt_einsum as oe
import pytest

import trn_backend as xp
from tests.support import assert_same, to_numpy
from trn_backend import _autoray, kernels

RNG = np.random.default_rng(3)
A = RNG.standard_normal((2, 3, 4))
M = RNG.standard_normal((3, 3))


def test_backend_is_inferred():
    x = xp.asarray(A)
    assert ar.infer_backend(x) == "trn_backend"
    assert ar.infer_backend_multi(A, x) == "trn_backend"


def test_numpy_routed_names_are_in_the_dispatch_table():
    from trn_backend.numpy_dispatch import handled_functions, handled_ufuncs

    handled = set(handled_functions()) | set(handled_ufuncs())
    missing = [n for n in _autoray.NUMPY_NAMES if f"numpy.{n}" not in handled]
    missing += [n for n in _autoray.NUMPY_LINALG_NAMES if f"numpy.linalg.{n}" not in handled]
    assert not missing, f"autoray would call NumPy functions the table lacks: {missing}"


CALLS = {
    "transpose": (("transpose", A, (2, 0, 1)), {}),
    "transpose-default": (("transpose", A), {}),
    "transpose-negative": (("transpose", A, (-1, 0, 1)), {}),
    "reshape": (("reshape", A, (6, 4)), {}),
    "reshape-int": (("reshape", A, 24), {}),
    "tensordot-positional": (("tensordot", A, np.moveaxis(A, 0, 2), 2), {}),
    "tensordot-axes": (("tensordot", A, A, [(0, 1), (0, 1)]), {}),
    "einsum": (("einsum", "abc,abd->cd", A, A), {}),
    "conj": (("conj", A), {}),
    "count_nonzero": (("count_nonzero", A > 0), {}),
    "count_nonzero-axis": (("count_nonzero", A > 0, 1), {}),
    "trace": (("trace", M), {}),
    "linalg.norm": (("linalg.norm", A), {}),
    "linalg.norm-axis": (("linalg.norm", A, None, 2), {}),
    "sum-axis": (("sum", A, 1), {}),
    "sum-axes": (("sum", A, (0, 2)), {}),
    "max-axis": (("max", A, 0), {}),
    "mean": (("mean", A), {}),
    "std": (("std", A, -1), {}),
    "prod": (("prod", A, 2), {}),
    "squeeze": (("squeeze", A[:1]), {}),
    "take": (("take", A, [0, 2], 1), {}),
    "concatenate": (("concatenate", [A, A], 1), {}),
    "stack": (("stack", [A, A], 1), {}),
    "diag": (("diag", M), {}),
    "dot": (("dot", M, M), {}),
    "kron": (("kron", M, M), {}),
    "outer": (("outer", M[0], M[1]), {}),
    "where": (("where", A > 0, A, 0.0), {}),
    "clip": (("clip", A, -0.5, 0.5), {}),
    "flip": (("flip", A, 1), {}),
    "moveaxis": (("moveaxis", A, 0, 2), {}),
    "expand_dims": (("expand_dims", A, 0), {}),
    "real": (("real", A), {}),
    "imag": (("imag", A), {}),
    "copy": (("copy", A), {}),
    "sort": (("sort", A, 1), {}),
    "argmax": (("argmax", A, 2), {}),
    "cumsum": (("cumsum", A, 1), {}),
    "abs": (("abs", A), {}),
    "sqrt": (("sqrt", np.abs(A)), {}),
    "exp": (("exp", A), {}),
    "log10": (("log10", np.abs(A) + 1), {}),
    "tril": (("tril", M), {}),
    "matmul": (("matmul", M, M), {}),
    "complex": (("complex", A, A), {}),
    "power": (("power", A, 2), {}),
}


def _on_device(value):
    """NumPy arrays (also inside a list of arrays) as NeuronArrays; other arguments as they are."""
    if isinstance(value, np.ndarray):
        return xp.asarray(value)
    if isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
        return [xp.asarray(v) for v in value]
    return value


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_do_matches_numpy(call):
    (name, *args), kwargs = call
    result = ar.do(name, *[_on_device(a) for a in args], **kwargs)
    expected = ar.do(name, *args, **kwargs)
    assert_same(result, np.asarray(expected), rtol=1e-12)


def test_compositions_and_attributes():
    x = xp.asarray(A)
    assert ar.shape(x) == A.shape and ar.ndim(x) == 3 and ar.size(x) == A.size
    assert ar.get_dtype_name(x) == "float64"
    assert_same(ar.astype(x, "float32"), A.astype(np.float32))
    assert_same(ar.do("astype", x, "complex128"), A.astype(np.complex128))
    numpy_copy = ar.to_numpy(x)
    assert type(numpy_copy) is np.ndarray and np.array_equal(numpy_copy, A)
    assert_same(ar.transpose(x), A.T)
    assert_same(ar.dag(xp.asarray(M + 1j * M)), (M + 1j * M).conj().T)
    assert_same(ar.reshape(x, (4, 6)), A.reshape(4, 6))
    solution, residuals, rank, _ = ar.do("linalg.lstsq", xp.asarray(M), xp.asarray(M[:, 0]), rcond=None)
    expected = np.linalg.lstsq(M, M[:, 0], rcond=None)
    assert type(solution) is xp.NeuronArray and int(rank) == expected[2]
    np.testing.assert_allclose(np.asarray(solution), expected[0], atol=1e-12)
    parts = ar.do("split", x, 3, 1)
    assert len(parts) == 3 and all(type(p) is xp.NeuronArray for p in parts)
    U, s, Vh = ar.do("linalg.svd", xp.asarray(A[0]))
    assert U.shape == (3, 3) and Vh.shape == (3, 4)  # reduced by default, as autoray's NumPy
    np.testing.assert_allclose(to_numpy(U * s @ Vh), A[0], atol=1e-12)


def test_creation_follows_like():
    x = xp.asarray(A.astype(np.float32))
    for name, args, expected in (
        ("zeros", ((2, 2),), np.zeros((2, 2), np.float32)),
        ("ones", ((3,),), np.ones(3, np.float32)),
        ("full", ((2,), 4.0), np.full(2, 4.0, np.float32)),
        ("eye", (3,), np.eye(3, dtype=np.float32)),
        ("identity", (2,), np.identity(2, dtype=np.float32)),
    ):
        result = ar.do(name, *args, like=x)
        assert result.device == x.device
        assert_same(result, expected)
    assert_same(ar.do("zeros", (2,), dtype="int32", like=x), np.zeros(2, np.int32))
    assert_same(ar.do("array", [1.0, 2.0], like=x), np.array([1.0, 2.0]))  # array takes the data's dtype
    assert_same(ar.do("asarray", [1, 2], like="trn_backend"), np.array([1, 2]))
    assert ar.do("empty", (2, 3), like=x).shape == (2, 3)
    host = np.arange(3.0)
    copied = ar.do("array", host, like=x)
    host[0] = 5.0
    assert to_numpy(copied)[0] == 0.0


# ---------------------------------------------------------------- cotengra

EQ = "abc,cde,efa,bdf->ab"


def _network(dtype=np.float64):
    inputs, output = ctg.utils.eq_to_inputs_output(EQ)
    sizes = dict(zip("abcdef", (2, 3, 4, 3, 2, 4), strict=True))
    arrays = [RNG.standard_normal([sizes[c] for c in term]).astype(dtype) for term in inputs]
    return inputs, output, sizes, arrays


def _contracted(run, arrays):
    with kernels.count_calls() as calls:
        result = run([xp.asarray(a) for a in arrays])
    assert type(result) is xp.NeuronArray
    assert sum(calls.values()) > 0, "no contraction reached trn_backend.kernels"
    return result


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_cotengra_einsum(dtype):
    *_, arrays = _network(dtype)
    result = _contracted(lambda ops: ctg.einsum(EQ, *ops), arrays)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    assert_same(result, oe.contract(EQ, *arrays), rtol=rtol)


def test_cotengra_array_contract():
    inputs, output, _, arrays = _network()
    result = _contracted(lambda ops: ctg.array_contract(ops, inputs, output), arrays)
    assert_same(result, np.einsum(EQ, *arrays), rtol=1e-12)


@pytest.mark.parametrize("slices", [1, 4])
def test_contraction_tree_contract_with_and_without_slicing(slices):
    inputs, output, sizes, arrays = _network()
    tree = ctg.array_contract_tree(inputs, output, sizes, optimize="greedy")
    if slices > 1:
        tree = tree.slice(target_slices=slices)
        assert tree.nslices >= slices
    result = _contracted(tree.contract, arrays)
    assert_same(result, np.einsum(EQ, *arrays), rtol=1e-12)
    mantissa, exponent = tree.contract([xp.asarray(a) for a in arrays], strip_exponent=True)
    np.testing.assert_allclose(to_numpy(mantissa) * 10 ** float(exponent), np.einsum(EQ, *arrays), rtol=1e-12)


def test_cotengra_hyper_optimizer_path():
    *_, arrays = _network()
    opt = ctg.HyperOptimizer(max_repeats=4, methods=["greedy"], progbar=False)
    result = _contracted(lambda ops: ctg.einsum(EQ, *ops, optimize=opt), arrays)
    assert_same(result, np.einsum(EQ, *arrays), rtol=1e-12)


@pytest.mark.heavy
def test_imports_without_autoray():
    code = "import sys; sys.modules['autoray'] = None; import trn_backend; print(trn_backend.NeuronArray.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "NeuronArray"
