"""einsum against numpy.einsum: a hypothesis property test over random valid expressions, and the error paths."""

from __future__ import annotations

import os

import numpy as np
import opt_einsum
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import assert_same, from_numpy
from trn_backend import kernels, testing
from trn_backend.contraction import plan as planner

LETTERS = "abcdeAB"
DTYPES = ("int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool", "float64", "complex128")


@st.composite
def expressions(draw):
    """A random valid einsum: 1-4 operands, up to 5 dims each, repeated, broadcast (size-1) and summed-out
    indices, an optional ellipsis with right-aligned broadcasting, 0-size and size-1 dims, implicit or explicit
    output; returns (subscripts, shapes)."""
    sizes = {c: draw(st.sampled_from((0, 1, 2, 3, 3))) for c in LETTERS}
    n = draw(st.sampled_from((1, 2, 2, 3, 3, 4)))
    use_ellipsis = draw(st.booleans())
    ell_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2))) if use_ellipsis else ()
    terms, shapes = [], []
    for _ in range(n):
        labels = draw(st.lists(st.sampled_from(LETTERS), max_size=5 - (len(ell_shape) if use_ellipsis else 0)))
        # a size-1 dimension of an index that is larger elsewhere broadcasts (same size for a repeated index)
        own = {c: 1 if draw(st.booleans()) and draw(st.booleans()) else sizes[c] for c in set(labels)}
        shape = [own[c] for c in labels]
        term = "".join(labels)
        if use_ellipsis and draw(st.booleans()):
            k = draw(st.integers(0, len(ell_shape)))
            sub = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in ell_shape[len(ell_shape) - k :]]
            at = draw(st.integers(0, len(labels)))
            term = term[:at] + "..." + term[at:]
            shape = shape[:at] + sub + shape[at:]
        terms.append(term)
        shapes.append(tuple(shape))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        seen = list(dict.fromkeys(c for c in subscripts if c.isalpha()))
        out = draw(st.permutations(seen)).copy()[: draw(st.integers(0, len(seen)))]
        if "..." in subscripts:
            out.insert(draw(st.integers(0, len(out))), "...")
        subscripts += "->" + "".join(out)
    return subscripts, shapes


def _operand(data, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 200 if dtype.startswith("u") else 100, shape).astype(dtype) - (
            0 if dtype.startswith("u") else np.array(50, dtype)
        )
    if dtype.startswith("complex"):
        return rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)
    return rng.uniform(-2, 2, shape)


EXAMPLES = int(os.environ.get("TRN_EINSUM_EXAMPLES", "150"))
OPTIMIZE = st.sampled_from(("auto", "greedy", "optimal", False))


@pytest.mark.heavy
@settings(max_examples=EXAMPLES)
@given(expressions(), st.sampled_from(DTYPES), OPTIMIZE, st.data())
def test_matches_numpy(expr, dtype, optimize, data):
    _check(expr, dtype, optimize, data)


@pytest.mark.heavy
@settings(max_examples=EXAMPLES // 2)
@given(expressions(), st.sampled_from(DTYPES), OPTIMIZE, st.data())
def test_matches_numpy_with_broadcast_batching_everywhere(expr, dtype, optimize, data):
    """The planner's broadcast batching (large operands only, by default) on every layout it applies to."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planner, "SPREAD_MIN_ELEMENTS", 0)
        mp.setattr(planner, "SPREAD_MIN_SLICE", 0)
        testing.reset_caches()
        try:
            _check(expr, dtype, optimize, data)
        finally:
            testing.reset_caches()


def _check(expr, dtype, optimize, data):
    subscripts, shapes = expr
    arrays = [_operand(data, dtype, s) for s in shapes]
    expected = np.einsum(subscripts, *arrays)
    with kernels.count_calls() as calls:
        got = xp.einsum(subscripts, *map(from_numpy, arrays), optimize=optimize)
    assert sum(calls.values()) <= max(len(arrays) - 1, 0)
    if dtype in ("float64", "complex128"):
        scale = np.einsum(subscripts, *map(np.abs, arrays)) if arrays else 1
        got_np = got._t.numpy()
        assert got_np.dtype == expected.dtype and got_np.shape == expected.shape
        np.testing.assert_allclose(got_np, expected, rtol=0, atol=1e-12 * (1 + np.max(scale, initial=0)))
    else:
        assert_same(got, expected)


@pytest.mark.parametrize(
    "subscripts, shapes",
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("ij,jk->ki", [(2, 3), (3, 4)]),  # second operand's free index first
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("bij,jbk->kbi", [(2, 3, 4), (4, 2, 5)]),
        ("ij,ij->ij", [(2, 3), (2, 3)]),  # Hadamard
        ("i,j->ij", [(2,), (3,)]),  # outer
        ("ij,j", [(2, 3), (3,)]),
        ("ii->i", [(3, 3)]),
        ("ii", [(3, 3)]),
        ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
        ("ij,jk->ik", [(2, 1), (3, 4)]),  # size-1 broadcast of a contracted index
        ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]),
        ("abc,cd->", [(2, 3, 4), (4, 5)]),
        ("i,i->", [(0,), (0,)]),
        ("ij,jk->ik", [(2, 0), (0, 3)]),
        ("", [()]),
        (",->", [(), ()]),
    ],
)
def test_cases(subscripts, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.integers(-5, 5, s) for s in shapes]
    with kernels.count_calls() as calls:
        got = xp.einsum(subscripts, *map(from_numpy, arrays))
    assert_same(got, np.einsum(subscripts, *arrays))
    assert sum(calls.values()) == (len(arrays) == 2)


def test_float32_and_mixed_dtypes():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.integers(-3, 3, (4, 2)).astype(np.int32)
    got = xp.einsum("ij,jk->ik", from_numpy(a), from_numpy(b))
    assert got.dtype == xp.float32
    np.testing.assert_allclose(got._t.numpy(), a @ b.astype(np.float32), rtol=1e-6)


def test_results_go_through_one_kernel_call_per_step():
    a, b, c, d = (xp.NeuronArray(torch.randn(4, 4)) for _ in range(4))
    with kernels.count_calls() as calls:
        xp.einsum("ij,jk,kl,lm->im", a, b, c, d)
    assert calls == {("matmul", "native"): 3}
    with kernels.count_calls() as calls:
        xp.einsum("bij,bjk->bik", xp.NeuronArray(torch.randn(2, 3, 4)), xp.NeuronArray(torch.randn(2, 4, 5)))
    assert calls == {("bmm", "native"): 1}


def test_optimize_forms():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in ((3, 4), (4, 5), (5, 6), (6, 2))]
    expected = np.einsum("ij,jk,kl,lm->im", *arrays)
    ops = [from_numpy(a) for a in arrays]
    import cotengra
    import opt_einsum

    for optimize in (
        "auto",
        "greedy",
        "dp",
        True,
        None,
        False,
        [(0, 1), (0, 1), (0, 1)],
        [(2, 3), (0, 1), (0, 1)],
        ["einsum_path", (0, 1), (0, 1), (0, 1)],
        [(0, 1, 2, 3)],
        opt_einsum.RandomGreedy(max_repeats=4),
        cotengra.HyperOptimizer(max_repeats=4, methods=["greedy"], progbar=False),
    ):
        got = xp.einsum("ij,jk,kl,lm->im", *ops, optimize=optimize)
        np.testing.assert_allclose(got._t.numpy(), expected, rtol=1e-12)


# opt_einsum's generated symbols: the 52 ASCII letters, then chr(i + 140) (the first non-letters at i = 75, 107:
# '×', '÷'; Unicode spaces such as U+2003 at i = 8055; surrogates from i = 55156), then chr(i + 2048) from
# i = 55296 (private-use characters from U+E000 on).
GENERATED = st.one_of(
    st.integers(0, 51), st.sampled_from([52, 75, 107, 8055, 12148, 55156, 55295, 55296]), st.integers(52, 60000)
)


@settings(max_examples=40)
@given(st.lists(GENERATED, min_size=4, max_size=4, unique_by=lambda i: opt_einsum.get_symbol(i)), st.booleans())
def test_every_symbol_opt_einsum_generates_is_a_label(indices, ellipsis):
    """An einsum written in any four of opt_einsum's symbols equals NumPy's on the same one in ASCII letters,
    through einsum, opt_einsum's backend and explain, also beside ellipsis dimensions (whose internal labels
    must not collide with any symbol)."""
    symbols = [opt_einsum.get_symbol(i) for i in indices]
    e = "..." if ellipsis else ""
    template = "{e}ab,bc,{e}cd->{e}ad"
    generated = template.format(e=e).translate(str.maketrans("abcd", "".join(symbols)))
    rng = np.random.default_rng(sum(indices))
    lead = (2, 3) if ellipsis else ()
    arrays = [rng.standard_normal(lead + (2, 3)), rng.standard_normal((3, 4)), rng.standard_normal(lead + (4, 2))]
    want = np.einsum(template.format(e=e), *arrays)
    ops = [xp.asarray(a) for a in arrays]
    # float64 sums of 3 and 4 terms in another order: within 1e-12 of NumPy's
    assert_same(xp.einsum(generated, *ops), want, rtol=1e-12, atol=1e-12)
    assert_same(opt_einsum.contract(generated, *ops, backend="trn"), want, rtol=1e-12, atol=1e-12)
    assert "total: 2 kernel call(s)" in str(xp.explain(generated, *ops))


def test_generated_symbols_past_fifty_two_indices_run_a_network():
    """A chain of 80 matrices: opt_einsum labels its indices with '×' (the 76th) and beyond."""
    n = 80
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 2)) / 2 for _ in range(n)]
    eq = ",".join(opt_einsum.get_symbol(i) + opt_einsum.get_symbol(i + 1) for i in range(n))
    eq += "->" + opt_einsum.get_symbol(0) + opt_einsum.get_symbol(n)
    assert "×" in eq and "÷" not in eq
    want = np.linalg.multi_dot(arrays)
    assert_same(xp.einsum(eq, *[xp.asarray(a) for a in arrays], optimize="greedy"), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda a, b: xp.einsum("ij,jk", a), ValueError, "describe 2 operand"),
        (lambda a, b: xp.einsum("ij", a, b), ValueError, "describe 1 operand"),
        (
            lambda a, b: xp.einsum("ij,jk->ik", a, xp.NeuronArray(torch.ones(4, 5))),
            ValueError,
            "index 'j' has size 3 in operand 0 .* and size 4 in operand 1",
        ),
        (lambda a, b: xp.einsum("i1,jk", a, b), ValueError, "invalid subscript '1'"),
        (lambda a, b: xp.einsum("i§,jk", a, b), ValueError, "invalid subscript '§'"),
        (lambda a, b: xp.einsum("i_,jk", a, b), ValueError, "invalid subscript '_'"),
        (lambda a, b: xp.einsum("ij,jk->ik->", a, b), ValueError, "stray '-'"),
        (lambda a, b: xp.einsum("ij,jk->ix", a, b), ValueError, "output index 'x'"),
        (lambda a, b: xp.einsum("ij,jk->ii", a, b), ValueError, "output index 'i' is repeated"),
        (lambda a, b: xp.einsum("i.j,jk", a, b), ValueError, "'.' that is not part of one '...'"),
        (lambda a, b: xp.einsum("......,jk", a, b), ValueError, "'.' that is not part of one '...'"),
        (lambda a, b: xp.einsum("...,jk->jk", a, b), ValueError, "ellipsis dimension.* no '...'"),
        (lambda a, b: xp.einsum("ijk,jk", a, b), ValueError, "operand 0 has 2 dimension.* name 3"),
        (lambda a, b: xp.einsum("ii", a), ValueError, "repeated in operand 0 with sizes 2 and 3"),
        (
            lambda a, b: xp.einsum("...i,...i", xp.NeuronArray(torch.ones(2, 3)), xp.NeuronArray(torch.ones(4, 3))),
            ValueError,
            "ellipsis",
        ),
        (lambda a, b: xp.einsum("ij,jk", a, np.ones((3, 4))), TypeError, r"operands\[1\].*ndarray"),
        (lambda a, b: xp.einsum(3, a), TypeError, "subscripts as a str"),
        (
            lambda a, b: xp.einsum("ij,jk,kl", a, b, xp.NeuronArray(torch.ones(4, 2)), optimize=42),
            TypeError,
            "optimize must be",
        ),
        (
            lambda a, b: xp.einsum("ij,jk,kl", a, b, xp.NeuronArray(torch.ones(4, 2)), optimize="nonsense"),
            ValueError,
            "unknown optimize='nonsense'",
        ),
        (
            lambda a, b: xp.einsum("ij,jk,kl", a, b, xp.NeuronArray(torch.ones(4, 2)), optimize=[(0, 1)]),
            ValueError,
            "leaves 2 operands",
        ),
        (
            lambda a, b: xp.einsum("ij,jk,kl", a, b, xp.NeuronArray(torch.ones(4, 2)), optimize=[(0, 5), (0, 1)]),
            ValueError,
            r"path step 0 \(0, 5\)",
        ),
        (
            lambda a, b: xp.einsum(
                "i,i",
                xp.NeuronArray(torch.ones(2, dtype=torch.uint64)),
                xp.NeuronArray(torch.ones(2, dtype=torch.int64)),
            ),
            TypeError,
            "einsum.*uint64",
        ),
    ],
)
def test_errors(call, exc, match):
    a, b = xp.NeuronArray(torch.ones(2, 3)), xp.NeuronArray(torch.ones(3, 4))
    with pytest.raises(exc, match=match):
        call(a, b)


def test_optimize_is_checked_whatever_the_number_of_operands():
    a, b = xp.NeuronArray(torch.ones(2, 3)), xp.NeuronArray(torch.ones(3, 4))
    for operands in ((a,), (a, b), (a, b, xp.NeuronArray(torch.ones(4, 2)))):
        subscripts = ",".join(["ij", "jk", "kl"][: len(operands)])
        with pytest.raises(ValueError, match="unknown optimize='bogus'; known: .*greedy"):
            xp.einsum(subscripts, *operands, optimize="bogus")
        with pytest.raises(TypeError, match=r"optimize must be .*got \['a', 'b'\]"):
            xp.einsum(subscripts, *operands, optimize=["a", "b"])
        xp.einsum(subscripts, *operands, optimize="greedy")


def test_python_scalars_are_weak_operands():
    """NEP 50: a Python scalar takes the dtype it combines to with the arrays (NumPy's einsum would promote); a
    NumPy scalar is a strong 0-d array of its dtype."""
    x = xp.asarray([1.0, 2.0, 3.0], dtype=xp.float32)
    assert_same(xp.einsum("a,->a", x, 0.5), np.array([0.5, 1.0, 1.5], np.float32))
    assert_same(xp.einsum("a,,->a", xp.asarray([1, 2], dtype=xp.int8), 3, True), np.array([3, 6], np.int8))
    assert_same(xp.einsum(",a->a", 2.0, x), np.array([2.0, 4.0, 6.0], np.float32))
    assert_same(xp.einsum(",a->a", np.float64(2.0), x), np.array([2.0, 4.0, 6.0], np.float64))
    assert_same(xp.einsum("a,->a", x, 1j), np.array([1j, 2j, 3j], np.complex64))
    assert_same(xp.einsum(",->", 2, 3.5), np.float64(7.0))  # scalars alone: the default float (CPU: float64)
    with pytest.raises(OverflowError, match="300 is out of range for int8"):
        xp.einsum("a,->a", xp.asarray([1], dtype=xp.int8), 300)
