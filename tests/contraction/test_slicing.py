"""Sliced contractions (``contract(..., memory_limit=...)``, one process): results against numpy.einsum in
float64 and exact integers, steps shared between slices (kernel calls counted), the caller's cotengra tree, the
progress bar's on/off rule, and the error paths. The slices over ranks: tests/distributed/test_distributed.py."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import cotengra as ctg
import numpy as np
import opt_einsum as oe
import opt_einsum.testing
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from trn_backend import kernels
from trn_backend.contraction import runner as _runner
from trn_backend.contraction import slicing as _slicing

RNG = np.random.default_rng(11)
# a chain of four: slicing d leaves the first step (ab,bc) the same in every slice
A, B, C, D = (RNG.normal(size=s) for s in ((3, 5), (5, 4), (4, 3), (3, 6)))
CHAIN = "ab,bc,cd,de->ae"
LEFT_TO_RIGHT = ((0, 1), (0, 1), (0, 1))


def tree(eq: str, shapes, path, sliced=(), outer: bool = False) -> ctg.ContractionTree:
    """cotengra's tree for ``eq`` along ``path`` with ``sliced`` indices removed (outer: the output's may be)."""
    inputs, output = eq.split("->")
    sizes = {}
    for term, shape in zip(inputs.split(","), shapes, strict=True):
        for c, d in zip(term, shape, strict=True):
            sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]
    t = ctg.ContractionTree.from_path([tuple(s) for s in inputs.split(",")], tuple(output), sizes, path=path)
    for c in sliced:
        assert outer or c not in output
        t = t.remove_ind(c)
    return t


def kernel_calls(counter) -> int:
    """Kernel calls, each once (an NKI-routed call is also counted under nki.*)."""
    return sum(n for (name, _), n in counter.items() if not name.startswith("nki."))


def contract(eq: str, *arrays, **kwargs) -> np.ndarray:
    return np.asarray(xp.contract(eq, *(xp.asarray(a) for a in arrays), **kwargs))


# --- results ---


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(2, 7), limit=st.sampled_from([3, 4, 8]))
def test_random_networks_against_numpy_einsum(seed, n, limit):
    eq, shapes = oe.testing.rand_equation(n, 3, n_out=1, d_min=1, d_max=4, seed=seed)
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=s) for s in shapes]
    try:
        _slicing.slicing(_slicing.parse(eq, tuple(shapes)), shapes, limit)
    except ValueError as e:  # the limit is below the output or no inner slicing gets there
        assert "no slicing of contracted indices" in str(e)
        return
    expected = np.einsum(eq, *arrays)
    np.testing.assert_allclose(
        contract(eq, *arrays, memory_limit=limit),
        expected,
        rtol=1e-10,
        atol=1e-10 * max(1.0, float(np.abs(expected).max(initial=0.0))),
    )


def test_steps_above_no_sliced_index_run_once():
    sliced_d = tree(CHAIN, [A.shape, B.shape, C.shape, D.shape], LEFT_TO_RIGHT, "d")
    with kernels.count_calls() as calls:
        r = contract(CHAIN, A, B, C, D, memory_limit=10**6, optimize=sliced_d)
    np.testing.assert_allclose(r, np.einsum(CHAIN, A, B, C, D), rtol=1e-12)
    # ab,bc once; then per value of d (3): ac,c->a (d sliced away) and a,e->ae
    assert kernel_calls(calls) == 1 + 2 * 3


def test_odometer_shares_steps_between_slices():
    both = tree(CHAIN, [A.shape, B.shape, C.shape, D.shape], LEFT_TO_RIGHT, "cd")
    with kernels.count_calls() as calls:
        r = contract(CHAIN, A, B, C, D, memory_limit=10**6, optimize=both)
    np.testing.assert_allclose(r, np.einsum(CHAIN, A, B, C, D), rtol=1e-12)
    # steps: ab,bc varies along c, then ac,cd and ad,de along c and d (through their operands). d, which fewer
    # steps vary along, turns fastest: the first step runs once per value of c (4), the others once per slice
    assert kernel_calls(calls) == 4 + 12 + 12 < 3 * 12


def test_operand_broadcasting_a_sliced_index_from_size_one():
    y = RNG.normal(size=(1, 4))  # b broadcast: A's 5 values of b meet y's one row
    t = tree(CHAIN, [A.shape, y.shape, C.shape, D.shape], LEFT_TO_RIGHT, "b")
    r = contract(CHAIN, A, y, C, D, memory_limit=10**6, optimize=t)
    np.testing.assert_allclose(r, np.einsum(CHAIN, A, np.broadcast_to(y, (5, 4)), C, D), rtol=1e-12)


def test_repeated_index_in_an_operand():
    m = RNG.normal(size=(4, 4, 3))
    eq = "bba,bc,cd->ad"
    y, z = RNG.normal(size=(4, 5)), RNG.normal(size=(5, 2))
    t = tree(eq, [m.shape, y.shape, z.shape], ((0, 1), (0, 1)), "b")
    np.testing.assert_allclose(
        contract(eq, m, y, z, memory_limit=10**6, optimize=t), np.einsum(eq, m, y, z), rtol=1e-12
    )


def test_sliced_output_indices_fill_their_part():
    t = tree(CHAIN, [A.shape, B.shape, C.shape, D.shape], LEFT_TO_RIGHT, "ae", outer=True)
    r = contract(CHAIN, A, B, C, D, memory_limit=10**6, optimize=t)
    np.testing.assert_allclose(r, np.einsum(CHAIN, A, B, C, D), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "uint32", "uint64", "bool", "complex128", "float32"])
def test_dtypes_exact_and_modular(dtype):
    shapes = [(3, 5), (5, 4), (4, 3), (3, 6)]
    arrays = [
        RNG.integers(0, 200, size=s).astype(dtype) if dtype != "bool" else RNG.integers(0, 2, size=s) > 0
        for s in shapes
    ]
    if dtype == "complex128":
        arrays = [a + 1j * RNG.normal(size=a.shape) for a in arrays]
    t = tree(CHAIN, shapes, LEFT_TO_RIGHT, "cd")
    r = contract(CHAIN, *arrays, memory_limit=10**6, optimize=t)
    expected = np.einsum(CHAIN, *arrays)
    assert r.dtype == expected.dtype
    if dtype in ("float32", "complex128"):
        np.testing.assert_allclose(r, expected, rtol=1e-5 if dtype == "float32" else 1e-12)
    else:  # integers wrap modulo 2**bits in any order; bool is or-of-ands
        np.testing.assert_array_equal(r, expected)


def test_unsliced_and_one_operand_contractions():
    r = contract("ab,bc->ac", A, B, memory_limit=10**6)  # within the limit: one slice
    np.testing.assert_allclose(r, A @ B, rtol=1e-12)
    r = contract("abc->a", RNG.normal(size=(2, 3, 4)).round(3), memory_limit=2)
    assert r.shape == (2,)
    with pytest.raises(ValueError, match=r"no slicing of contracted indices .* the output has 2"):
        contract("abc->a", RNG.normal(size=(2, 3, 4)), memory_limit=1)


def test_the_default_path_under_the_smallest_limit():
    x, y, z = RNG.normal(size=(2, 12)), RNG.normal(size=(12, 12)), RNG.normal(size=(12, 2))
    r = contract("ab,bc,cd->ad", x, y, z, memory_limit=4)  # the output's size: every intermediate is sliced
    np.testing.assert_allclose(r, x @ y @ z, rtol=1e-12)


# --- the caller's tree ---


def test_a_tree_is_used_as_given_and_sliced_further_when_the_limit_needs_it():
    x, y, z = RNG.normal(size=(2, 12)), RNG.normal(size=(12, 12)), RNG.normal(size=(12, 2))
    t = tree("ab,bc,cd->ad", [x.shape, y.shape, z.shape], ((0, 1), (0, 1)), "b")
    spec = _slicing.parse("ab,bc,cd->ad", (x.shape, y.shape, z.shape))
    assert _slicing.slicing(spec, [x.shape, y.shape, z.shape], 24, t) == (((0, 1), (0, 1)), ("b",))
    path, sliced = _slicing.slicing(spec, [x.shape, y.shape, z.shape], 4, t)  # ac (24) must be sliced too
    assert path == ((0, 1), (0, 1)) and set(sliced) == {"b", "c"}
    np.testing.assert_allclose(contract("ab,bc,cd->ad", x, y, z, memory_limit=4, optimize=t), x @ y @ z, rtol=1e-12)
    with pytest.raises(ValueError, match=r"no slicing of contracted indices .* the output has 4"):
        contract("ab,bc,cd->ad", x, y, z, memory_limit=3, optimize=t)


def test_a_tree_of_another_contraction_or_with_projections_is_an_error():
    other = tree("ab,bc->ac", [A.shape, B.shape], ((0, 1),))
    with pytest.raises(ValueError, match=r"optimize= is a cotengra ContractionTree of another contraction"):
        contract(CHAIN, A, B, C, D, memory_limit=8, optimize=other)
    projected = tree(CHAIN, [A.shape, B.shape, C.shape, D.shape], LEFT_TO_RIGHT).remove_ind("c", project=0)
    with pytest.raises(ValueError, match=r"projected indices"):
        contract(CHAIN, A, B, C, D, memory_limit=8, optimize=projected)


# --- the progress bar ---


def sliced_run(capsys, **kwargs) -> str:
    """What a sliced contraction (12 slices) writes to stderr."""
    capsys.readouterr()
    t = tree(CHAIN, [A.shape, B.shape, C.shape, D.shape], LEFT_TO_RIGHT, "cd")
    r = contract(CHAIN, A, B, C, D, memory_limit=10**6, optimize=t, **kwargs)
    np.testing.assert_allclose(r, np.einsum(CHAIN, A, B, C, D), rtol=1e-12)
    return capsys.readouterr().err


def test_no_bar_for_a_quick_contraction(capsys):
    assert sliced_run(capsys) == ""


def test_a_bar_on_stderr_when_the_first_slices_predict_a_long_run(capsys, monkeypatch):
    monkeypatch.setattr(_runner, "PROGRESS_DECIDE_S", 0.0)  # decide after the first slice
    monkeypatch.setattr(_runner, "PROGRESS_MIN_S", 0.0)  # any estimate is long
    err = sliced_run(capsys)
    assert "contract" in err and "/12" in err and "slice" in err
    assert sliced_run(capsys, progress=False) == ""
    monkeypatch.setattr(_runner, "PROGRESS_MIN_S", math.inf)  # no estimate is long
    assert sliced_run(capsys) == ""
    assert "/12" in sliced_run(capsys, progress=True)  # asked for: shown whatever the estimate


def test_progress_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match=r"progress must be True, False or None"):
        contract(CHAIN, A, B, C, D, memory_limit=8, progress="yes")


def test_without_tqdm_no_automatic_bar_and_asking_for_one_is_an_error(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    monkeypatch.setattr(_runner, "PROGRESS_DECIDE_S", 0.0)
    monkeypatch.setattr(_runner, "PROGRESS_MIN_S", 0.0)
    assert sliced_run(capsys) == ""
    with pytest.raises(ImportError, match=r"progress=True\) shows its bar with tqdm, which is not installed"):
        contract(CHAIN, A, B, C, D, memory_limit=18, progress=True)


@pytest.mark.heavy
def test_tqdm_disable_in_the_environment_turns_the_bar_off():
    # tqdm reads TQDM_DISABLE when it is imported: a fresh process
    code = (
        "import numpy as np, trn_backend as xp\n"
        "a = [xp.asarray(np.ones(s)) for s in ((3, 5), (5, 4), (4, 3), (3, 6))]\n"
        "r = xp.contract('ab,bc,cd,de->ae', *a, memory_limit=18, progress=True)\n"
        "print(float(xp.sum(r)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TQDM_DISABLE": "1"},
    )
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) == 3 * 5 * 4 * 3 * 6 and "slice" not in run.stderr
