"""multi_einsum (trn_backend/contraction/multi.py): a group of identical contractions runs as one bmm, exactly like
einsum, paths and batches grouped, one mode resolved per group from its K, and the error paths."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import trn_backend as xp
from tests.support import from_numpy, to_numpy
from trn_backend import kernels

CHAIN = "ij,jk,kl->il"


def _normal(*shape, dtype=np.float32, seed=0):
    return from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def _pair(seed, m=4, k=8, n=3, dtype=np.float64):
    return _normal(m, k, dtype=dtype, seed=seed), _normal(k, n, dtype=dtype, seed=seed + 100)


def test_multi_einsum_runs_a_group_of_identical_contractions_as_one_bmm():
    group = [("ij,jk->ik", *_pair(i)) for i in range(6)]
    rest = [
        ("ij,jk->ik", *_pair(10, m=5)),  # another shape
        ("ij,kj->ik", _normal(4, 8, seed=11), _normal(3, 8, seed=12)),  # other subscripts
        ("ij,jk->ik", *_pair(13, dtype=np.float32)),
    ]  # another dtype
    contractions = [group[0], rest[0], *group[1:4], rest[1], *group[4:], rest[2]]
    with kernels.count_calls() as calls:
        out = xp.multi_einsum(*contractions)
    assert calls == {("bmm", "native"): 1, ("matmul", "native"): 3}
    assert len(out) == len(contractions)
    for got, (subscripts, *ops) in zip(out, contractions, strict=True):
        expected = xp.einsum(subscripts, *ops)
        assert isinstance(got, xp.NeuronArray) and got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(to_numpy(got), to_numpy(expected), rtol=1e-5 if got.dtype == xp.float32 else 1e-13)


@pytest.mark.parametrize("dtype", [np.int64, np.uint16, np.uint32, np.uint64, np.int8, np.complex128])
def test_multi_einsum_is_exact_like_einsum(dtype):
    g = np.random.default_rng(4)
    ops = [
        (from_numpy(g.integers(0, 50, (3, 5)).astype(dtype)), from_numpy(g.integers(0, 50, (5, 2)).astype(dtype)))
        for _ in range(3)
    ]
    out = xp.multi_einsum(*(("ij,jk", a, b) for a, b in ops))
    for got, (a, b) in zip(out, ops, strict=True):
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(to_numpy(got), to_numpy(xp.einsum("ij,jk", a, b)))


def test_multi_einsum_groups_paths_batches_and_single_operands():
    chains = [(CHAIN, _normal(3, 4, seed=i), _normal(4, 5, seed=i + 1), _normal(5, 2, seed=i + 2)) for i in range(3)]
    batched = [("...ij,...jk->...ik", _normal(2, 4, 5, seed=i), _normal(2, 5, 3, seed=i + 7)) for i in range(3)]
    diagonals = [("ii->i", _normal(4, 4, seed=i)) for i in range(2)]
    with kernels.count_calls() as calls:
        out = xp.multi_einsum(*chains, *batched, *diagonals)
    assert calls == {("bmm", "native"): 3}  # two steps for the chains, one for the batched products
    for got, (subscripts, *ops) in zip(out, chains + batched + diagonals, strict=True):
        np.testing.assert_allclose(to_numpy(got), np.einsum(subscripts, *map(to_numpy, ops)), rtol=1e-5)
    assert xp.multi_einsum() == []


def test_multi_einsum_resolves_one_mode_per_group_from_its_K(basis):
    small = [("ij,jk->ik", *_pair(i, k=16, dtype=np.float32)) for i in range(3)]
    large = [("ij,jk->ik", *_pair(i, k=4096, dtype=np.float32)) for i in range(2)]
    lone = ("ij,jk->ik", *_pair(9, k=16, n=5, dtype=np.float32))
    with kernels.count_calls() as calls:
        xp.multi_einsum(*small, *large, lone, target_forward_error=1e-4)
        xp.multi_einsum(*small, precision="fast")
        with xp.precision("dd"):
            xp.multi_einsum(*large)
    first, second = {"calibration": ("native", "fp64"), "pass count": ("dd", "bf16x6")}[basis]
    expected = collections.Counter({("bmm", first): 1, ("bmm", second): 1, ("matmul", first): 1, ("bmm", "fast"): 1})
    expected["bmm", "dd"] += 1  # the large group under precision("dd")
    assert calls == expected
    with xp.precision(target_relative_error=0.5) as report:  # a group is checked as one product
        xp.multi_einsum(*small)
    assert [(c.subscripts[0], c.K) for c in report] == [("a", 16)] and report[0].met


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda a: xp.multi_einsum("ij", a), TypeError, r"each contraction as a tuple .*contraction 0 is a str"),
        (lambda a: xp.multi_einsum(()), TypeError, "contraction 0 is empty"),
        (
            lambda a: xp.multi_einsum(("ij", a), (a, "ij")),
            TypeError,
            "contraction 1 is a tuple starting with NeuronArray",
        ),
        (
            lambda a: xp.multi_einsum(["ij,jk", a, np.ones((3, 3))]),
            TypeError,
            r"multi_einsum\(\) expects operand 1 of contraction 0 to be a NeuronArray, got ndarray",
        ),
        (
            lambda a: xp.multi_einsum(("ij", a), ("ij,jk", a, _normal(2, 3))),
            ValueError,
            r"multi_einsum\(\): index 'j' has size 3 in operand 0 .* \(contraction 1\)",
        ),
        (
            lambda a: xp.multi_einsum(("ij", a), precision="dd", target_forward_error=1e-3),
            ValueError,
            r"multi_einsum\(\): give a precision mode or one target",
        ),
        (
            lambda a: xp.multi_einsum(("ij,jk", a, a), ("ij,jk", a, a), precision="quad"),
            ValueError,
            "unknown precision mode 'quad'",
        ),
    ],
)
def test_multi_einsum_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_normal(3, 3))
