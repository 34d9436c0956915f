"""Sharded arrays on N-D meshes (2x2 on 4 ranks, 2x4 on 8, as threads of torch's threaded process group): values
against NumPy, the bytes the communication model predicts against the bytes torch.distributed moves (counted by
``td.count()``, a CommDebugMode that reads the buffers), the planner's choices, explain(), forced placements,
precision across ranks, and the errors for bad meshes and placements."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import trn_backend as xp
import trn_backend.distributed as td
from tests.distributed.conftest import TEST_LINK
from tests.distributed_support import raised, spmd
from trn_backend.distributed import _comm

pytestmark = pytest.mark.filterwarnings("ignore:Found a non-scalar tensor with numel=1")

RNG = np.random.default_rng(3)
A = RNG.normal(size=(7, 6))  # uneven over 2 and 4 ranks
B = RNG.normal(size=(6, 9))
C = RNG.normal(size=(9, 5))


def placements_2d(ndim: int) -> list[tuple]:
    """Every sharding of an ``ndim``-dimensional array on a 2-D mesh: per mesh dimension an axis or None, no
    axis twice."""
    options = [None, *range(ndim)]
    return [p for p in itertools.product(options, repeat=2) if p[0] is None or p[0] != p[1]]


def measured(call):
    """(result, modelled, counted): the planner's moves and torch's collectives on this rank, each as (kind,
    bytes) in the order they ran."""
    with td.record() as rec, td.count() as counted:
        result = call()
    return result, [(m.issued, m.nbytes) for m, _, _ in rec.moves if m.kind], [(c.kind, c.nbytes) for c in counted]


@pytest.mark.heavy
@pytest.mark.parametrize("shape", [(2, 2), (2, 4)])
def test_predicted_bytes_equal_counted_bytes_on_every_route(shape):
    """Every pair of placements of A and B on the mesh, through each contraction entry point, then gathered,
    redistributed and resolved: each collective torch runs is one the model predicted, with the same bytes on
    every rank (uneven blocks included), and the values are NumPy's."""
    world = math.prod(shape)
    routes = {
        "matmul": lambda a, b, c: a @ b,
        "einsum": lambda a, b, c: xp.einsum("ij,jk->ik", a, b),
        "tensordot": lambda a, b, c: xp.tensordot(a, b, axes=1),
        "contract": lambda a, b, c: xp.contract("ij,jk,kl->il", a, b, c),
    }
    expected = {"matmul": A @ B, "einsum": A @ B, "tensordot": A @ B, "contract": A @ B @ C}
    pairs = list(itertools.product(placements_2d(2), placements_2d(2)))[:: 3 if world == 8 else 1]

    def body(rank: int) -> list:
        mesh = td.mesh(shape)
        rows = []
        for (pa, pb), (name, route) in itertools.product(pairs, routes.items()):
            a, b, c = td.shard(xp.asarray(A), pa, mesh), td.shard(xp.asarray(B), pb, mesh), xp.asarray(C)
            r, modelled, counted = measured(lambda: route(a, b, c))  # noqa: B023 - called at once
            whole, m2, c2 = measured(lambda: r.gather())  # noqa: B023
            rows.append(
                (
                    name,
                    pa,
                    pb,
                    modelled == counted and m2 == c2,
                    np.allclose(np.asarray(whole), expected[name], atol=1e-12),
                )
            )
            moved, m3, c3 = measured(lambda: r.redistribute((1, None)).resolve())  # noqa: B023
            rows.append((name + " moved", pa, pb, m3 == c3, moved.device.axes == (1, None)))
        return rows

    for rank, rows in enumerate(spmd(world, body, timeout=300)):
        bad = [row for row in rows if not (row[3] and row[4])]
        assert not bad, f"rank {rank}: {bad[:5]}"


def test_nd_shardings_construct_gather_and_report_their_device():
    def body(rank: int) -> list:
        mesh = td.mesh((2, 2), ("rows", "cols"))
        x = td.shard(xp.asarray(A), (0, 1), mesh)
        block = td.local_slice(7, mesh, mesh_dim=0)
        cols = td.local_slice(6, mesh, mesh_dim=1)
        made = td.from_local(xp.asarray(A[block, cols]), (0, 1), mesh)
        pending = td.from_local(xp.asarray(A / 2), (None, "sum"), mesh)
        half = td.shard(xp.asarray(A), (None, 0), mesh)
        return [
            x.device.axes,
            x.device == td.Sharding(mesh, (0, 1)),
            np.asarray(made),
            np.asarray(pending),
            pending.device.pending,
            np.asarray(half.resolve()),
            repr(x.device),
            tuple(x.local().shape),
            np.asarray(xp.sum(x, axis=None)),
            np.asarray(xp.max(x, axis=1)),
        ]

    for rank, (axes, same, made, pending, is_pending, half, text, local, total, maxima) in enumerate(spmd(4, body)):
        assert axes == (0, 1) and same and is_pending
        np.testing.assert_allclose(made, A)
        np.testing.assert_allclose(pending, A)
        np.testing.assert_allclose(half, A)
        np.testing.assert_allclose(total, A.sum())
        np.testing.assert_allclose(maxima, A.max(axis=1))
        assert "axis=0 | axis=1, mesh=2x2" in text
        assert local == ((4, 3) if rank < 2 else (3, 3))


def test_the_planner_keeps_large_blocks_in_place():
    """Large operands already partitioned along a label the output keeps: moving any of them costs more than the
    compute it saves, so the step runs output-parallel with no collective (and ``explain`` says so, with the
    alternatives it rejected, each modelled slower)."""
    big = RNG.normal(size=(64, 32))
    w = RNG.normal(size=(32, 48))

    def body(rank: int) -> list:
        mesh = td.mesh((2, 2))
        x = td.shard(xp.asarray(big), (0, None), mesh)
        y = td.shard(xp.asarray(w), (None, 1), mesh)
        r, modelled, counted = measured(lambda: x @ y)
        e = xp.explain("ij,jk->ik", x, y)
        return [r.device.axes, modelled, counted, np.asarray(r), e.sharding, str(e)]

    axes, modelled, counted, r, decisions, text = spmd(4, body)[0]
    assert axes == (0, 1) and modelled == counted == []
    np.testing.assert_allclose(r, big @ w)
    (d,) = decisions
    assert d.communication_seconds == 0 and all(s > d.seconds for _, s in d.alternatives)
    assert "placements on the mesh" in text and "[S(i), R], [R, S(k)] -> [S(i), S(k)]" in text


def test_the_planner_gathers_what_is_cheap_to_move():
    """A small operand partitioned along the contracted label: a pending result of 64x48 would cost a
    reduce-scatter of 24 KiB later; gathering 48 columns of the small operand costs less, and the model says
    so: the step gathers it and runs output-parallel."""
    big = RNG.normal(size=(64, 4))
    w = RNG.normal(size=(4, 48))

    def body(rank: int) -> list:
        mesh = td.mesh((2, 2))
        x = td.shard(xp.asarray(big), (1, 0), mesh)
        r, modelled, counted = measured(lambda: x @ xp.asarray(w))
        return [r.device.pending, modelled, counted, np.asarray(r)]

    pending, modelled, counted, r = spmd(4, body)[0]
    assert not pending and modelled == counted and modelled
    np.testing.assert_allclose(r, big @ w)


def test_the_alpha_beta_formulas():
    """The four collectives' times against the formulas written out (p = 4 ranks, 1000 bytes, alpha 10 us,
    beta 1 ns/B)."""
    link = _comm.Link("x", dict.fromkeys(_comm.KINDS, 1e-5), dict.fromkeys(_comm.KINDS, 1e-9), True, {}, "")
    assert _comm.seconds("all_gather", 4, 1000, link) == pytest.approx(3e-5 + 3e-6)
    assert _comm.seconds("reduce_scatter", 4, 1000, link) == pytest.approx(3e-5 + 0.75e-6)
    assert _comm.seconds("all_reduce", 4, 1000, link) == pytest.approx(6e-5 + 1.5e-6)
    assert _comm.seconds("all_to_all", 4, 1000, link) == pytest.approx(3e-5 + 0.75e-6)
    assert _comm.seconds("all_reduce", 1, 1000, link) == 0


@pytest.mark.parametrize("mode", ["native", "dd", "ozaki", "fp64"])
def test_sums_over_ranks_stay_within_the_bound_on_a_2d_mesh(mode):
    """K partitioned over one mesh dimension and the rows over the other, the step forced reduce-parallel: the
    result is within error_bound(mode, float32, K, ranks=4) of the exact product (float64 holds every product of
    two float32 values and these sums of 32 of them to 1e-16), and fp64 and ozaki add the ranks' float64
    summands before their one rounding to float32."""
    g = np.random.default_rng(5)
    a, b = g.random((16, 32)).astype(np.float32), g.random((32, 8)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)

    def body(rank: int) -> list:
        mesh = td.mesh((2, 2))
        x = td.shard(xp.asarray(a), (1, 0), mesh)
        r = td.einsum("ik,kj->ij", x, xp.asarray(b), precision=mode, sharding=td.Sharding(mesh, ("sum", 0)))
        return [np.asarray(r), r.device.pending, r.dtype]

    got, pending, dtype = spmd(4, body)[0]
    assert dtype == xp.float32 and pending == (mode not in ("ozaki", "fp64"))
    bound = xp.error_bound(mode, xp.float32, 32, ranks=4)
    assert np.all(np.abs(got - exact) <= bound * exact)


def test_forced_placements_and_their_errors():
    def body(rank: int) -> list:
        mesh = td.mesh((2, 2))
        x = td.shard(xp.asarray(A), (0, None), mesh)
        forced = td.einsum("ij,jk->ik", x, xp.asarray(B), sharding=td.Sharding(mesh, (1, 0)))
        out = [forced.device.axes, np.asarray(forced)]
        for bad in (
            lambda: td.einsum("ij,jk->ik", x, xp.asarray(B), sharding=td.Sharding(mesh, (5, None))),
            lambda: td.einsum("ij,jk", x, xp.asarray(B), sharding=td.Sharding(mesh, (0, None))),
            lambda: td.einsum("ij,jk->ik", x, xp.asarray(B), sharding=td.Sharding(mesh, ("sum", "sum"))),
        ):
            try:
                bad()
                out.append("no error")
            except ValueError as e:
                out.append(str(e))
        return out

    axes, values, *errors = spmd(4, body)[0]
    assert axes == (1, 0)
    np.testing.assert_allclose(values, A @ B)
    assert "sharding axis 5 is out of range for a result of 2 dimensions" in errors[0]
    assert "give the output explicitly" in errors[1]
    assert "no placement of the step gives the result placed as ('sum', 'sum')" in errors[2]


def test_bad_meshes_and_shardings_raise_clear_errors():
    def body(rank: int) -> list:
        mesh = td.mesh((2, 2))
        return raised(
            [
                lambda: td.mesh((2, 3)),
                lambda: td.mesh((2, 0)),
                lambda: td.Sharding(mesh, 0),
                lambda: td.Sharding(mesh, (0,)),
                lambda: td.Sharding(mesh, (0, 0)),
                lambda: td.Sharding(mesh, (0.5, None)),
                lambda: td.shard(xp.asarray(A), (2, None), mesh),
                lambda: td.shard(xp.asarray(A), ("sum", None), mesh),
                lambda: td.from_local(xp.asarray(A[: 3 + rank]), (0, None), mesh),
                lambda: td.local_slice(7, mesh, mesh_dim=2),
                lambda: xp.matmul(td.shard(xp.asarray(A), (0, None), mesh), td.shard(xp.asarray(B), 0, td.mesh(4))),
            ]
        )

    messages = spmd(4, body)[0]
    expected = [
        "ValueError: mesh(): a mesh of shape 2x3 needs 6 ranks; the world has 4",
        "ValueError: mesh(): shape must be positive integers",
        "ValueError: Sharding: on a 2-dimensional mesh of shape 2x2 give one entry per mesh dimension",
        "ValueError: Sharding: one entry per mesh dimension: a mesh of shape 2x2 has 2, got 1",
        "ValueError: Sharding: axis 0 is partitioned over two mesh dimensions",
        "TypeError: Sharding: each mesh dimension takes an array axis (int), None",
        "IndexError: shard(): axis 2 is out of bounds",
        "ValueError: shard(): axis ('sum', None) asks for a pending sum",
        "ValueError: from_local(): blocks of sizes [3, 5] along axis 0 over mesh dimension 0",
        "IndexError: local_slice(): mesh_dim 2 is out of range for a 2-dimensional mesh",
        "ValueError: matmul(): sharded arguments live on different device meshes",
    ]
    for message, start in zip(messages, expected, strict=True):
        assert message.startswith(start), message


def test_the_network_is_data():
    """The default interconnect is this machine's measured gloo; the Trainium ones are published figures with
    their sources; use_network switches per mesh dimension and refuses unknown names."""
    gloo = _comm.link("gloo-cpu")
    assert gloo.basis.startswith("measured") and not gloo.all_to_all_native and gloo.flops["float64"] > 0
    for name in ("trn2-neuronlink", "trn2-efa"):
        link = _comm.link(name)
        assert link.basis.startswith("published") and all(link.alpha[k] > 0 and link.beta[k] > 0 for k in _comm.KINDS)
    with td.use_network("trn2-efa", "trn2-neuronlink"):
        from trn_backend.distributed import _record

        assert [lk.name for lk in _record.links(3)] == ["trn2-efa", "trn2-neuronlink", "trn2-neuronlink"]
    assert _record.links(1) == (TEST_LINK,)
    with pytest.raises(ValueError, match="unknown interconnect 'nvlink'"):
        with td.use_network("nvlink"):
            pass


def test_writes_into_arrays_on_a_grid():
    """x[key] = v and in-place operators on a 2x2 mesh: into partitioned arrays (through the whole array, each
    rank's block copied back) and pending sums (resolved first), as NumPy writes."""

    def body(rank: int) -> list:
        mesh = td.mesh((2, 2))
        x = td.shard(xp.asarray(A), (0, 1), mesh)
        x[1:5, 2] = -1.0
        pending = td.from_local(xp.asarray(A / 2), (None, "sum"), mesh)
        pending += 1.0
        y = td.shard(xp.asarray(A), (1, 0), mesh)
        y *= 2
        return [np.asarray(x), x.device.axes, np.asarray(pending), pending.device.axes, np.asarray(y), y.device.axes]

    x, x_axes, pending, p_axes, y, y_axes = spmd(4, body)[0]
    expected = A.copy()
    expected[1:5, 2] = -1.0
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_allclose(pending, A + 1.0)
    np.testing.assert_allclose(y, 2 * A)
    assert x_axes == (0, 1) and p_axes == (None, None) and y_axes == (1, 0)


def test_sliced_contractions_on_a_grid():
    """contract(..., memory_limit=) on a 2x2 mesh: with a partitioned operand each rank contracts the slices of
    its blocks; with whole operands the four ranks share the slices out (a pending sum of their parts), and where
    the limit needs no slicing every rank computes the whole (replicated, not a sum of four copies); NumPy's
    values in every case."""
    x4, y30, z4 = RNG.normal(size=(4, 30)), RNG.normal(size=(30, 30)), RNG.normal(size=(30, 4))
    expected = x4 @ y30 @ z4

    def body(rank: int) -> list:
        mesh = td.mesh((2, 2))
        out = []
        for limit in (20, 1000):  # slices j or k / no slicing
            x = td.shard(xp.asarray(x4), (0, None), mesh)
            blocks = xp.contract("ij,jk,kl->il", x, xp.asarray(y30), xp.asarray(z4), memory_limit=limit)
            whole = xp.contract("ij,jk,kl->il", xp.asarray(x4), xp.asarray(y30), xp.asarray(z4), memory_limit=limit)
            out.append((np.asarray(blocks), np.asarray(whole), whole.device.axes))
        return out

    for (sliced_blocks, sliced_whole, sliced_axes), (blocks, whole, axes) in spmd(4, body):
        for got in (sliced_blocks, sliced_whole, blocks, whole):
            np.testing.assert_allclose(got, expected, atol=1e-12)
        assert sliced_axes == ("sum",) and axes == (None,)  # plain operands: the world's 1-D mesh


@pytest.mark.parametrize("mode", ["native", "fast", "dd", "bf16x6", "ozaki", "fp64"])
def test_pending_operands_whose_summands_cancel_keep_the_bound(mode):
    """A pending float32 operand whose two summands are 1e6 times larger than their sum: a contraction with it
    stays within its reported bound of the exact product of the array (the sum, rounded to float32) and y, in
    units of |x||y| (exact rational arithmetic as the oracle). Multiplying the summands instead (each rank its
    own, then adding the products) was off by 1.6e-2 of that under native, against a bound of 3.9e-6."""
    from fractions import Fraction

    g = np.random.default_rng(1)
    small, big, y = (
        g.random(64).astype(np.float32),
        (g.random(64) * 1e6).astype(np.float32),
        g.random(64).astype(np.float32),
    )
    summands = (big, (small - big).astype(np.float32))
    x = (summands[0].astype(np.float64) + summands[1]).astype(np.float32)  # the array: the sum, as float32
    exact = sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x, y, strict=True))
    scale = float(np.sum(np.abs(x.astype(np.float64)) * y))

    def body(rank: int) -> list:
        pending = td.from_local(xp.asarray(summands[rank]), None, td.default_mesh(), pending=True)
        r = xp.einsum("i,i->", pending, xp.asarray(y), precision=mode)
        return [float(r), xp.explain("i,i->", pending, xp.asarray(y), precision=mode).bound]

    for got, bound in spmd(2, body):
        assert abs(Fraction(got) - exact) <= Fraction(bound) * Fraction(scale), (got, float(exact), bound)
