"""opt_einsum with backend="trn" and backend="auto" on NeuronArrays: conversions, expressions, constants,
sharing, optimize=False, precision, and the kernel-call counter that proves no step bypasses the planner."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import opt_einsum as oe
import opt_einsum.testing
import pytest
import tomllib
import torch

import trn_backend as xp
from tests.support import from_numpy, to_numpy
from trn_backend import kernels, testing
from trn_backend.contraction import COMPILED, opt_einsum_backend

EQ = "ij,jk,kl->il"


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in ((3, 4), (4, 5), (5, 2))]


def _expected(arrays):
    return np.einsum(EQ, *arrays)


def test_opt_einsum_version_is_the_pinned_series():
    """The backend writes into opt_einsum's private dispatch tables: the installed version must be the series
    this was written against, and pyproject must pin the same one."""
    assert oe.__version__.startswith(opt_einsum_backend.OPT_EINSUM_SERIES + ".")
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    pin = next(d for d in pyproject["project"]["dependencies"] if d.startswith("opt_einsum"))
    low, high = re.match(r"opt_einsum>=([\d.]+),<([\d.]+)", pin).groups()
    assert low == opt_einsum_backend.OPT_EINSUM_SERIES and high.startswith("3.5")
    from opt_einsum.backends import dispatch

    assert dispatch._aliases["trn"] == dispatch._aliases["trn_backend"] == opt_einsum_backend.__name__
    assert dispatch.has_backend("trn")


def test_the_replaced_opt_einsum_functions_have_the_signatures_they_are_replaced_for():
    """The replacements of opt_einsum's code (docs/contractions.md): the private functions they stand in for
    still take what the replacements forward, on the installed opt_einsum."""
    import inspect

    from opt_einsum import sharing
    from opt_einsum.contract import ContractExpression

    assert list(inspect.signature(opt_einsum_backend._opt_einsum_memoize).parameters) == ["key", "fn", "args", "kwargs"]
    assert list(inspect.signature(opt_einsum_backend._opt_einsum_constants).parameters) == ["self", "backend"]
    assert list(inspect.signature(opt_einsum_backend._opt_einsum_core_contract).parameters) == [
        "operands_",
        "contraction_list",
        "backend",
        "evaluate_constants",
        "out",
        "kwargs",
    ]
    assert callable(sharing.get_sharing_cache) and "_evaluated_constants" in inspect.getsource(
        ContractExpression.evaluate_constants
    )


# Run in a fresh interpreter: importing trn_backend leaves opt_einsum's memo, constants folding and contraction loop
# alone; another backend's call keeps them, and so do trn_backend's own contract and contract_expression, which run
# opt_einsum's path themselves; the first use of "trn" by opt_einsum's own loop (FIRST_USE) replaces all three.
FRESH = """
import sys

import numpy as np
import opt_einsum as oe
from opt_einsum import sharing
from opt_einsum.contract import ContractExpression

memo, fold = sharing._memoize, ContractExpression._get_evaluated_constants
loop = sys.modules["opt_einsum.contract"]._core_contract
import trn_backend as xp
from opt_einsum.backends import dispatch

assert dispatch._aliases["trn"] == "trn_backend.contraction.opt_einsum_backend" and dispatch.has_backend("trn")
a = np.ones((2, 3))
oe.contract("ij,jk->ik", a, a.T)
oe.contract_expression("ij,jk->ik", (2, 3), a.T, constants=[1])(a)
xp.contract("ij,jk->ik", a, a.T)
xp.contract_expression("ij,jk->ik", (2, 3), a.T, constants=[1])(a)
with oe.shared_intermediates():
    xp.contract_expression("ij,jk->ik", (2, 3), (3, 2))(a, a.T)
assert sharing._memoize is memo and ContractExpression._get_evaluated_constants is fold, "replaced too early"
assert sys.modules["opt_einsum.contract"]._core_contract is loop, "replaced too early"
{first_use}
assert sharing._memoize is not memo and ContractExpression._get_evaluated_constants is not fold, "not replaced"
assert sys.modules["opt_einsum.contract"]._core_contract is not loop, "not replaced"
"""
FIRST_USE = [
    'oe.contract("ij,jk->ik", a, a.T, backend="trn")',
    'oe.contract("ij,jk->ik", xp.asarray(a), xp.asarray(a.T))',  # "auto" on NeuronArrays
    'oe.contract_expression("ij,jk->ik", (2, 3), (3, 2))(a, a.T, backend="trn")',  # NumPy arrays: converted
    'oe.contract_expression("ij,jk->ik", (2, 3), a.T, constants=[1])(a, backend="trn")',
]


@pytest.mark.heavy
@pytest.mark.parametrize("first_use", FIRST_USE)
def test_opt_einsum_internals_are_replaced_on_the_first_use_of_trn(first_use):
    done = subprocess.run(
        [sys.executable, "-c", FRESH.format(first_use=first_use)],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", ["numpy", "torch", "trn"])
def test_backend_trn_converts_inputs(arrays, kind):
    ops = {"numpy": arrays, "torch": [torch.from_numpy(a) for a in arrays], "trn": [xp.asarray(a) for a in arrays]}[
        kind
    ]
    with kernels.count_calls() as calls:
        out = oe.contract(EQ, *ops, backend="trn")
    assert isinstance(out, xp.NeuronArray)
    np.testing.assert_allclose(to_numpy(out), _expected(arrays), rtol=1e-12)
    assert calls == {("matmul", "native"): 2}


def test_backend_auto_on_neuron_arrays(arrays):
    with kernels.count_calls() as calls:
        out = oe.contract(EQ, *map(xp.asarray, arrays))
    assert isinstance(out, xp.NeuronArray) and calls == {("matmul", "native"): 2}
    np.testing.assert_allclose(to_numpy(out), _expected(arrays), rtol=1e-12)


def test_batched_steps_reach_bmm():
    a, b = (xp.NeuronArray(torch.randn(s, dtype=torch.float64)) for s in ((2, 3, 4), (2, 4, 5)))
    with kernels.count_calls() as calls:
        out = oe.contract("bij,bjk->bik", a, b, backend="trn")
    assert calls == {("bmm", "native"): 1}
    np.testing.assert_allclose(to_numpy(out), np.einsum("bij,bjk->bik", to_numpy(a), to_numpy(b)), rtol=1e-12)


def test_contract_expression_with_numpy_converts_back(arrays):
    expr = oe.contract_expression(EQ, *(a.shape for a in arrays))
    out = expr(*arrays, backend="trn")
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, _expected(arrays), rtol=1e-12)


@pytest.mark.parametrize("kind", ["numpy", "trn"])
def test_contract_expression_constants(arrays, kind):
    ops = arrays if kind == "numpy" else [xp.asarray(a) for a in arrays]
    expr = oe.contract_expression(EQ, ops[0], ops[1], ops[2].shape, constants=[0, 1], optimize=[(0, 1), (0, 1)])
    with kernels.count_calls() as first:
        out = expr(ops[2], backend="trn")
    with kernels.count_calls() as again:
        out = expr(ops[2], backend="trn")
    # the constant part (0 @ 1) is contracted once; each call then does the one remaining step
    assert sum(first.values()) == 2 and sum(again.values()) == 1
    np.testing.assert_allclose(np.asarray(out), _expected(arrays), rtol=1e-12)


def test_shared_intermediates(arrays):
    ops = [xp.asarray(a) for a in arrays]
    with oe.shared_intermediates():
        with kernels.count_calls() as calls:
            first = oe.contract(EQ, *ops, backend="trn", optimize=[(0, 1), (0, 1)])
            second = oe.contract(EQ, *ops, backend="trn", optimize=[(0, 1), (0, 1)])
            third = oe.contract("ij,jk->ik", ops[0], ops[1], backend="trn")
    assert sum(calls.values()) == 2  # the repeats reuse the cached intermediates
    np.testing.assert_allclose(to_numpy(second), to_numpy(first))
    np.testing.assert_allclose(to_numpy(third), arrays[0] @ arrays[1], rtol=1e-12)


def test_optimize_false(arrays):
    with kernels.count_calls() as calls:
        out = xp.contract(EQ, *arrays, optimize=False)  # left to right, through the planner
    assert calls == {("matmul", "native"): 2}
    np.testing.assert_allclose(to_numpy(out), _expected(arrays), rtol=1e-12)
    # opt_einsum itself hands optimize=False to numpy.einsum whatever the backend (opt_einsum PR #252):
    # with NeuronArrays that arrives through NumPy dispatch, which runs it on the engine
    with kernels.count_calls() as calls:
        out = oe.contract(EQ, *map(xp.asarray, arrays), backend="trn", optimize=False)
    assert isinstance(out, xp.NeuronArray) and calls == {("matmul", "native"): 2}
    np.testing.assert_allclose(to_numpy(out), _expected(arrays), rtol=1e-12)


def test_contract_conveniences_and_precision(arrays):
    with kernels.count_calls() as calls:
        out = xp.contract(EQ, *arrays, precision="dd")
        expr = xp.contract_expression(EQ, *(a.shape for a in arrays), precision="fast")
        expr(*map(xp.asarray, arrays))
        xp.contract(EQ, *arrays)
    assert calls == {("matmul", "dd"): 2, ("matmul", "fast"): 2, ("matmul", "native"): 2}
    np.testing.assert_allclose(to_numpy(out), _expected(arrays), rtol=1e-4)
    assert "ij,jk,kl->il" in str(expr)
    with pytest.raises(TypeError, match="always uses backend='trn'"):
        xp.contract(EQ, *arrays, backend="numpy")


def test_every_binary_step_reaches_the_kernels(monkeypatch):
    """Count kernel calls on a 20-tensor random network (tensordot and einsum steps) while torch's own
    contraction routines are disabled: every binary step of the path is one matmul or bmm."""
    eq, shapes = oe.testing.rand_equation(20, 3, n_out=2, d_min=2, d_max=3, seed=3, global_dim=True)
    ops = [xp.NeuronArray(torch.randn(s, dtype=torch.float64)) for s in shapes]
    path, info = oe.contract_path(eq, *shapes, shapes=True)
    binary = sum(len(step[0]) == 2 for step in info.contraction_list)
    for name in ("einsum", "tensordot", "bmm", "mm", "bilinear"):
        monkeypatch.setattr(torch, name, _forbidden(name))
    with kernels.count_calls() as calls:
        out = oe.contract(eq, *ops, backend="trn", optimize=path)
    assert sum(calls.values()) == binary and set(calls) <= {("matmul", "native"), ("bmm", "native")}
    assert calls[("bmm", "native")] > 0  # the global dimension makes batched steps
    monkeypatch.undo()
    expected = oe.contract(eq, *(o._t for o in ops), backend="torch", optimize=path)
    np.testing.assert_allclose(to_numpy(out), expected.numpy(), rtol=1e-10)


def _forbidden(name):
    def f(*args, **kwargs):
        raise AssertionError(f"torch.{name} called outside the kernel layer")

    return f


def test_bad_operands():
    with pytest.raises(TypeError, match="backend 'trn' got an operand of type list"):
        oe.contract("ij,jk->ik", [[1.0]], [[1.0]], backend="trn")


def test_python_scalar_operands_are_weak_scalars():
    """opt_einsum's own test expressions pass Python scalars; with "trn" they adopt the arrays' dtype (NEP 50)."""
    x, ones = xp.asarray([1.0, 2.0, 3.0], dtype=xp.float32), xp.ones(2, dtype=xp.float32)
    for got in (
        oe.contract("a,->a", x, 0.5, backend="trn"),
        xp.contract("a,->a", x, 0.5),
        oe.contract("a,,b->ab", x, 2, ones, backend="trn")[:, 0],
    ):
        assert got.dtype == xp.float32
    np.testing.assert_array_equal(to_numpy(oe.contract("a,->a", x, 0.5, backend="trn")), [0.5, 1.0, 1.5])
    np.testing.assert_array_equal(
        to_numpy(oe.contract("a,,b->ab", x, 2, ones, backend="trn")), np.outer([2.0, 4.0, 6.0], [1.0, 1.0])
    )


@pytest.mark.parametrize(
    ("contract", "subscripts"),
    [
        (lambda *a, **k: xp.contract(*a, optimize=False, **k), "ij,jk->ik"),
        (xp.contract, "ij,jk->ik"),
        (lambda *a, **k: oe.contract(*a, backend="trn", **k), "ij,ij->ij"),  # opt_einsum's einsum step gets out=
    ],
)
def test_out_is_checked_before_any_work(contract, subscripts):
    a = xp.ones((3, 4), dtype=xp.float32)
    b = xp.ones((4, 5) if subscripts == "ij,jk->ik" else (3, 4), dtype=xp.float32)
    shape = (3, 5) if subscripts == "ij,jk->ik" else (3, 4)
    with pytest.raises(
        ValueError,
        match=rf"out= has shape \(5, 3\), but the result of '{subscripts}' has shape "
        rf"\({shape[0]}, {shape[1]}\)",
    ):
        contract(subscripts, a, b, out=xp.zeros((5, 3)))
    with pytest.raises(TypeError, match="cannot write the float32 result into out= of dtype int32 .*'safe'"):
        contract(subscripts, a, b, out=xp.zeros(shape, dtype=xp.int32))
    wide = xp.zeros(shape, dtype=xp.float64)  # a safe cast is fine
    assert contract(subscripts, a, b, out=wide) is wide
    np.testing.assert_array_equal(to_numpy(wide), np.full(shape, 4.0 if subscripts == "ij,jk->ik" else 1.0))


def test_contract_checks_out_on_every_path():
    a, b, c = xp.ones((3, 4)), xp.ones((4, 5)), xp.ones((5, 2))
    with pytest.raises(ValueError, match=r"contract\(\): out= has shape \(2, 2\)"):
        xp.contract("ij,jk,kl->il", a, b, c, out=xp.zeros((2, 2)))
    with pytest.raises(TypeError, match="into out= of dtype int64"):
        xp.contract("ij,jk,kl->il", a, b, c, out=xp.zeros((3, 2), dtype=xp.int64))
    out = xp.zeros((3, 2))
    assert xp.contract("ij,jk,kl->il", a, b, c, out=out) is out and float(out[0, 0]) == 20.0


def test_precision_errors_name_the_function_called():
    x = xp.ones((3, 3))
    with pytest.raises(ValueError, match=r"^contract\(\): no mode reaches target_forward_error=1e-30"):
        xp.contract("ij,jk->ik", x, x, target_forward_error=1e-30)
    with xp.precision(target_forward_error=1e-30):
        with pytest.raises(ValueError, match=r"^opt_einsum.contract\(backend='trn'\): no mode reaches"):
            oe.contract("ij,jk->ik", x, x, backend="trn")
        with pytest.raises(ValueError, match=r"^contract_expression\(\.\.\.\)\(\): no mode reaches"):
            xp.contract_expression("ij,jk->ik", (3, 3), (3, 3))(x, x)


def test_repeated_network_steps_reuse_their_plans_under_the_default_precision_only():
    """Steps of a network are compiled once per shapes, dtypes, axes or subscripts, device and request (the fast
    path); a precision block still reaches every step, and results do not change between calls."""
    eq, shapes = oe.testing.rand_equation(12, 3, n_out=2, d_min=2, d_max=3, seed=5, global_dim=True)
    ops = [xp.NeuronArray(torch.randn(s, dtype=torch.float64)) for s in shapes]
    expr = oe.contract_expression(eq, *shapes)
    binary = sum(len(c[0]) == 2 for c in expr.contraction_list)
    testing.reset_caches()
    with kernels.count_calls() as calls:
        first = expr(*ops, backend="trn")
    cached = len(COMPILED)
    assert 0 < cached <= binary + len(expr.contraction_list)
    with kernels.count_calls() as again:
        assert torch.equal(expr(*ops, backend="trn")._t, first._t)
    assert again == calls and len(COMPILED) == cached
    with xp.precision("dd"), kernels.count_calls() as dd:
        expr(*ops, backend="trn")
    assert sum(dd.values()) == binary and {mode for _, mode in dd} == {"dd"}
    expected = oe.contract(eq, *(o._t for o in ops), backend="torch")
    np.testing.assert_allclose(to_numpy(first), expected.numpy(), rtol=1e-10)


@pytest.mark.parametrize("axes", [((True,), (0,)), ((1.0,), (0,)), ([1], [0])])
def test_backend_tensordot_validates_axes_even_after_a_cached_step(axes):
    g = torch.Generator().manual_seed(0)
    x, y = xp.NeuronArray(torch.randn(2, 3, generator=g)), xp.NeuronArray(torch.randn(3, 4, generator=g))
    opt_einsum_backend.tensordot(x, y, ((1,), (0,)))  # cached: True and 1.0 hash and compare like 1
    if isinstance(axes[0], list):  # a list pair is valid (made canonical), just not cached
        # float32 sums of 3 products: within a few ulp of |x||y| (an entry may cancel), not of the entry
        np.testing.assert_allclose(
            to_numpy(opt_einsum_backend.tensordot(x, y, axes)), to_numpy(x) @ to_numpy(y), rtol=1e-6, atol=1e-6
        )
        return
    with pytest.raises(TypeError, match="axes must be an int or a pair of sequences of ints"):
        opt_einsum_backend.tensordot(x, y, axes)


def test_backend_einsum_step_errors_are_the_einsum_errors():
    x, y = xp.NeuronArray(torch.randn(2, 3)), xp.NeuronArray(torch.randn(4, 5))
    with pytest.raises(ValueError, match="einsum"):
        opt_einsum_backend.einsum("ij,jk->ik", x, y)  # j is 3 in one operand and 4 in the other
    with pytest.raises(ValueError, match="einsum"):
        opt_einsum_backend.einsum("ij,jk->ik", x, y)  # not cached as a plan


# (size, regularity, global dimension, dtype) of ``_network``'s networks: tensordot, batched, matrix-vector,
# single-operand and transposed steps, complex and exact integer data among them
NETWORKS = [
    (16, 3, False, torch.float64),
    (16, 3, True, torch.float64),
    (30, 2, False, torch.float32),
    (12, 3, True, torch.complex64),
    (10, 3, False, torch.int64),
    (0, 0, False, torch.float64),
]


def _network(n, regularity, global_dim):
    if n == 0:  # a trace, a tensordot whose result opt_einsum transposes, an outer product
        return "abc,cd,ii,e->dbea", [(2, 3, 4), (4, 5), (3, 3), (2,)]
    return oe.testing.rand_equation(n, regularity, n_out=2, d_min=2, d_max=3, seed=n, global_dim=global_dim)


@pytest.mark.parametrize("n, regularity, global_dim, dtype", NETWORKS)
def test_expression_program_runs_opt_einsums_path(n, regularity, global_dim, dtype):
    """``trn_backend.contract_expression`` runs opt_einsum's path as one compiled program on NeuronArrays (each
    intermediate in the order its kernel produces it, where opt_einsum's loop transposes some): one kernel call
    per step of the path, as the loop makes, and the result of the contraction, against NumPy (exact integers;
    floating point within a few units of |A||B| of the whole expression); the second call reuses the program and
    gives the same bits (tensordot, batched, matrix-vector, single-operand and transposed steps)."""
    eq, shapes = _network(n, regularity, global_dim)
    g = torch.Generator().manual_seed(n)
    ops = [xp.NeuronArray((torch.randn(s, generator=g, dtype=torch.float64) * 3).to(dtype)) for s in shapes]
    expr = xp.contract_expression(eq, *shapes)
    with kernels.count_calls() as via_opt_einsum:
        _loop(expr.expression.contraction_list, ops)
    results = []
    for _ in range(2):  # compiled on the first call, reused on the second
        with kernels.count_calls() as via_program:
            results.append(expr(*ops))
        assert type(results[-1]) is xp.NeuronArray and sum(via_program.values()) == sum(via_opt_einsum.values())
    assert torch.equal(results[0]._t, results[1]._t) and len(expr._programs) == 1
    (program,) = expr._programs.values()
    assert program.path == tuple(tuple(sorted(step[0])) for step in expr.expression.contraction_list)
    wide = [to_numpy(op).astype(np.complex128 if dtype.is_complex else np.float64) for op in ops]
    if dtype is torch.int64:
        assert np.array_equal(to_numpy(results[0]), np.einsum(eq, *map(to_numpy, ops), optimize=True))
        return
    expected = np.einsum(eq, *wide, optimize=True)
    scale = np.einsum(eq, *map(np.abs, wide), optimize=True)  # the expression on |operands|
    unit = float(torch.finfo(dtype).eps)
    assert np.all(np.abs(to_numpy(results[0]) - expected) <= 8 * len(shapes) * unit * scale)


def _loop(contraction_list, ops):
    """opt_einsum's own loop with backend "trn": one call of the backend per step, as opt_einsum runs it for
    every other backend (the reference the one-program routes must match)."""
    return opt_einsum_backend._opt_einsum_core_contract(list(ops), contraction_list, backend="trn")


@pytest.mark.parametrize("n, regularity, global_dim, dtype", NETWORKS)
def test_opt_einsum_loop_on_trn_runs_as_one_program_with_the_loops_bits(monkeypatch, n, regularity, global_dim, dtype):
    """Once adapted, ``opt_einsum.contract(..., backend="trn")`` and an opt_einsum expression called with it run
    the contraction list as one program: the same kernel calls and the same bits as opt_einsum's own loop making
    one call of this backend per step (tensordot, batched, matrix-vector, single-operand and transposed steps)."""
    eq, shapes = _network(n, regularity, global_dim)
    g = torch.Generator().manual_seed(n)
    ops = [xp.NeuronArray((torch.randn(s, generator=g, dtype=torch.float64) * 3).to(dtype)) for s in shapes]
    oe.contract(eq, *ops, backend="trn")  # the first use adapts opt_einsum
    expr = oe.contract_expression(eq, *shapes)
    with kernels.count_calls() as via_loop:
        want = _loop(expr.contraction_list, ops)
    programs = []
    real = opt_einsum_backend._as_one_program
    monkeypatch.setattr(opt_einsum_backend, "_as_one_program", lambda *a: programs.append(real(*a)) or programs[-1])
    for call in (lambda: oe.contract(eq, *ops, backend="trn"), lambda: expr(*ops), lambda: expr(*ops)):
        with kernels.count_calls() as via_program:
            got = call()
        assert type(got) is xp.NeuronArray and torch.equal(got._t, want._t) and via_program == via_loop
    assert len(programs) == 3 and all(p is not None for p in programs)


@pytest.mark.parametrize(
    "case",
    ["mixed dtypes", "a forward target", "shared intermediates", "out=", "NumPy operands", "three operands in a step"],
)
def test_opt_einsum_loop_on_trn_stays_the_loop_where_a_program_would_differ(monkeypatch, case):
    """Where one program would not be the loop's arithmetic (each call computes in its own operands' promotion,
    meets its own share of a target, or is memoized by ``shared_intermediates``) or the loop has more to do
    (``out=``, conversions, a step whose einsum picks its own path), opt_einsum's loop runs."""
    g = np.random.default_rng(1)
    arrays = [g.standard_normal(s) for s in ((3, 4), (4, 5), (5, 2))]
    ops = [xp.asarray(a) for a in arrays]
    oe.contract(EQ, *ops, backend="trn")  # the first use adapts opt_einsum
    programs = []
    real = opt_einsum_backend._as_one_program
    monkeypatch.setattr(opt_einsum_backend, "_as_one_program", lambda *a: programs.append(real(*a)) or programs[-1])
    kwargs: dict = {"backend": "trn"}
    if case == "mixed dtypes":
        ops[1] = xp.asarray(arrays[1].astype(np.float32))
    elif case == "NumPy operands":
        ops = arrays
    elif case == "out=":
        kwargs["out"] = xp.zeros((3, 2))
    elif case == "three operands in a step":
        kwargs["optimize"] = [(0, 1, 2)]
    if case == "a forward target":
        with xp.precision(target_forward_error=1e-6):
            got = oe.contract(EQ, *ops, **kwargs)
    elif case == "shared intermediates":
        with oe.shared_intermediates():
            got = oe.contract(EQ, *ops, **kwargs)
    else:
        got = oe.contract(EQ, *ops, **kwargs)
    np.testing.assert_allclose(to_numpy(got), _expected(arrays), rtol=1e-6)
    assert all(p is None for p in programs)  # declined (or never asked): opt_einsum's loop ran


def test_expression_program_follows_the_precision_in_force_and_falls_back_where_it_must():
    eq, shapes = oe.testing.rand_equation(10, 3, n_out=2, d_min=2, d_max=3, seed=2)
    ops = [xp.NeuronArray(torch.randn(s)) for s in shapes]
    expr = xp.contract_expression(eq, *shapes)
    binary = sum(len(c[0]) == 2 for c in expr.expression.contraction_list)
    expr(*ops)
    with xp.precision("dd"), kernels.count_calls() as calls:  # the program resolves each step's mode per call
        dd = expr(*ops)
    assert {mode for _, mode in calls} == {"dd"} and sum(calls.values()) == binary
    assert torch.equal(xp.contract_expression(eq, *shapes, precision="dd")(*ops)._t, dd._t)
    # NumPy operands, out=, constants and shared intermediates go through opt_einsum
    got = expr(*map(to_numpy, ops))
    assert isinstance(got, np.ndarray)
    out = xp.zeros(dd.shape)
    assert expr(*ops, out=out) is out
    with oe.shared_intermediates():
        np.testing.assert_allclose(to_numpy(expr(*ops)), got, rtol=1e-5, atol=1e-5)
    assert len(expr._programs) == 1
    with pytest.raises(ValueError, match="takes exactly"):  # opt_einsum's own error for a wrong count
        expr(*ops[:-1])


@pytest.mark.parametrize(
    ("eq", "shapes"), [("ij,ij,j->i", [(3, 4), (3, 4), (4,)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 6)])]
)
def test_expression_steps_of_three_operands_are_folded_left_to_right(eq, shapes):
    """An explicit path may join three operands in one step; the program folds it into binary steps, left to
    right, as einsum folds a path entry of three operands."""
    g = np.random.default_rng(0)
    arrays = [g.standard_normal(s) for s in shapes]
    expr = xp.contract_expression(eq, *shapes, optimize=[(0, 1, 2)])
    with kernels.count_calls() as calls:
        got = expr(*map(xp.asarray, arrays))
    np.testing.assert_allclose(to_numpy(got), np.einsum(eq, *arrays), rtol=1e-12)
    (program,) = expr._programs.values()
    assert len(program.steps) == 2 and all(len(step.operands) == 2 for step in program.steps)
    assert sum(calls.values()) == 2


def test_expression_with_einsum_keywords_runs_through_opt_einsum():
    # opt_einsum passes einsum keywords (order=...) on to the backend's functions, which refuse them: the
    # compiled program must not quietly ignore them
    expr = xp.contract_expression("ij,jk->ik", (2, 3), (3, 4), order="F")
    with pytest.raises(TypeError, match="order"):
        expr(xp.ones((2, 3)), xp.ones((3, 4)))


# --- precision through opt_einsum: the context, folded constants, shared intermediates ---


def _uniform(m, k, n, dtype, seed=0):
    g = np.random.default_rng(seed)
    return g.uniform(0.5, 1, (m, k)).astype(dtype), g.uniform(0.5, 1, (k, n)).astype(dtype)


def test_opt_einsum_direct_calls_follow_the_context(basis):
    a, b = _uniform(8, 32, 8, np.float32)
    with xp.precision(target_relative_error=1e-3) as report:
        oe.contract("ij,jk->ik", from_numpy(a), from_numpy(b), backend="trn")
    assert [c.mode for c in report] == [{"calibration": "native", "pass count": "dd"}[basis]]


def _chain_operands():
    g = np.random.default_rng(7)
    return g.standard_normal((20, 300)), g.standard_normal((300, 20)), g.standard_normal((20, 300))


@pytest.mark.parametrize("call", ["opt_einsum", "trn_backend"])
def test_folded_constants_are_refolded_when_the_mode_changes(call):
    A, B, C = _chain_operands()
    a, b, c = (xp.asarray(x, dtype=xp.float64) for x in (A, B, C))
    make = oe.contract_expression if call == "opt_einsum" else xp.contract_expression
    expr = make("ij,jk,kl->il", a, b, c.shape, constants=[0, 1])
    kwargs = {"backend": "trn"} if call == "opt_einsum" else {}
    exact = A @ B @ C
    with xp.precision("fast"):
        fast = to_numpy(expr(c, **kwargs))
    with xp.precision("fp64"), kernels.count_calls() as calls:
        fp64 = to_numpy(expr(c, **kwargs))
    assert calls == {("matmul", "fp64"): 2}  # the constant step is folded again, under fp64
    assert np.max(np.abs(fast - exact)) > 1e-3 and np.max(np.abs(fp64 - exact)) < 1e-10
    with xp.precision("fast"), kernels.count_calls() as calls:
        assert np.array_equal(to_numpy(expr(c, **kwargs)), fast)  # and the fast fold is reused as it was
    assert calls == {("matmul", "fast"): 1}


def test_reused_constant_steps_appear_in_every_precision_report():
    A, B, C = _chain_operands()
    a, b, c = (xp.asarray(x, dtype=xp.float64) for x in (A, B, C))
    expr = oe.contract_expression("ij,jk,kl->il", a, b, c.shape, constants=[0, 1])
    for _ in range(2):  # the first call folds the constants, the second reuses the fold
        with xp.precision(target_relative_error=1e-9) as report:
            expr(c, backend="trn")
        assert [check.K for check in report] == [300, 20] and all(check.met for check in report)


def test_shared_intermediates_are_shared_only_under_the_same_mode():
    A, B, _ = _chain_operands()
    a, b = xp.asarray(A, dtype=xp.float64), xp.asarray(B, dtype=xp.float64)
    with oe.shared_intermediates() as cache:
        with xp.precision("fast"):
            fast = to_numpy(oe.contract("ij,jk->ik", a, b, backend="trn"))
        with xp.precision("fp64"), kernels.count_calls() as calls:
            fp64 = to_numpy(oe.contract("ij,jk->ik", a, b, backend="trn"))
        assert calls == {("matmul", "fp64"): 1}
        with xp.precision("fp64"), kernels.count_calls() as calls:
            again = to_numpy(oe.contract("ij,jk->ik", a, b, backend="trn"))
        assert calls == {} and np.array_equal(again, fp64)  # shared within one mode
        with xp.precision(target_relative_error=1e-9) as report:
            oe.contract("ij,jk->ik", a, b, backend="trn")
        with xp.precision(target_relative_error=1e-9) as reused:
            oe.contract("ij,jk->ik", a, b, backend="trn")
        assert reused == report and len(report) == 1  # a shared result reports its check again
    assert oe.sharing.count_cached_ops(cache)["tensordot"] == 3
    assert np.max(np.abs(fast - A @ B)) > 1e-3 and np.max(np.abs(fp64 - A @ B)) < 1e-10


def test_other_backends_share_intermediates_as_opt_einsum_does():
    A, B, _ = _chain_operands()
    with oe.shared_intermediates() as cache:
        first = oe.contract("ij,jk->ik", A, B, backend="numpy")
        assert oe.contract("ij,jk->ik", A, B, backend="numpy") is first
    assert oe.sharing.count_cached_ops(cache)["tensordot"] == 1
