"""Sharded arrays: construction, placements, contractions (collectives counted), pending sums, indexing,
conversions, sliced contractions, and one real 2-process gloo run.

Most tests run several ranks as threads of one process (torch's threaded process group, see
tests/distributed_support.py); CommDebugMode counts the collectives each rank issues.
"""

from __future__ import annotations

import cotengra as ctg
import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor.debug import CommDebugMode

import trn_backend as xp
import trn_backend.distributed as td
from tests.distributed_support import gloo, raised, spmd
from tests.support import assert_same_array
from trn_backend import kernels
from trn_backend.contraction import slicing
from trn_backend.distributed import _mesh, _slicing

# plain arrays count as replicated by design; DTensor warns about each 1-element one (pytest shows it)
pytestmark = pytest.mark.filterwarnings("ignore:Found a non-scalar tensor with numel=1")

RNG = np.random.default_rng(7)
A = RNG.normal(size=(7, 5))
B = RNG.normal(size=(5, 6))
Q = RNG.normal(size=(7, 4, 4))  # (Q|mn), 7 auxiliary functions: uneven over 2 and 3 ranks
C = RNG.normal(size=(4, 3))
V = RNG.normal(size=(4, 5))


def comms(mode: CommDebugMode) -> dict[str, int]:
    """Collectives issued in a CommDebugMode block, by name (all_reduce, reduce_scatter_tensor, ...)."""
    return {str(op).split(".")[-1]: n for op, n in mode.get_comm_counts().items() if n}


# --- world of one process, no launcher ---


def test_default_mesh_starts_a_world_of_one_process():
    assert not dist.is_initialized()
    try:
        mesh = td.default_mesh()
        assert (mesh.size(), dist.get_world_size(), dist.get_backend()) == (1, 1, "gloo")
        x = td.shard(xp.asarray(A), 0)
        assert x.device == td.Sharding(mesh, 0) and x.sharding.axis == 0
        for got, want in ((x @ xp.asarray(B), A @ B), (x.gather(), A), (x.local(), A)):
            assert_same_array(np.asarray(got), want, rtol=1e-12, atol=1e-12)
        assert td.default_mesh() is mesh
    finally:
        dist.destroy_process_group()
        _mesh._MESHES.clear()


# --- construction and the device ---


@pytest.mark.parametrize("world", [2, 3])
def test_shard_replicate_from_local_without_communication(world):
    def body(rank: int) -> list:
        mesh = td.default_mesh()
        with CommDebugMode() as mode:
            rows, cols, whole = td.shard(xp.asarray(A), 0), td.shard(xp.asarray(A), -1), td.replicate(xp.asarray(A))
        block = td.local_slice(7, mesh)
        with CommDebugMode() as built:
            pending = td.from_local(xp.asarray(A / world), None, pending=True)
        made = td.from_local(xp.asarray(A[block]), 0)
        return [
            comms(mode),
            comms(built),
            rows.device,
            cols.device.axis,
            whole.device.axis,
            pending.device.pending,
            tuple(rows.local().shape),
            block,
            np.asarray(made),
            np.asarray(pending),
            isinstance(rows.local(), td.ShardedNeuronArray),
        ]

    sizes = _mesh.chunk_sizes(7, world)
    for rank, (c1, c2, dev, cax, wax, pend, local_shape, block, made, pending, local_sharded) in enumerate(
        spmd(world, body)
    ):
        assert c1 == {} and c2 == {}
        assert dev.axis == 0 and cax == 1 and wax is None and pend is True and not local_sharded
        assert local_shape == (sizes[rank], 5) and block == slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))
        np.testing.assert_allclose(made, A)
        np.testing.assert_allclose(pending, A, rtol=1e-12)


def test_sharding_compares_and_moves():
    def body(rank: int) -> list:
        mesh = td.default_mesh()
        x = td.shard(xp.asarray(A), 0)
        y = td.shard(xp.asarray(B), 0)
        moved = x.to_device(td.Sharding(mesh, 1))
        whole = x.to_device("cpu")
        return [
            x.device == y.device,
            x.device == moved.device,
            hash(x.device) == hash(y.device),
            moved.device.axis,
            type(whole).__name__,
            repr(x.device),
            x.to_device(x.device) is x,
            np.asarray(moved),
            np.asarray(whole),
            x.device.device,
        ]

    same, differ, hashed, axis, kind, text, itself, moved, whole, device = spmd(2, body)[0]
    assert same and not differ and hashed and axis == 1 and kind == "NeuronArray" and itself
    assert text == "Sharding(axis=0, ranks=[0, 1], device='cpu')" and device == torch.device("cpu")
    np.testing.assert_array_equal(moved, A)
    np.testing.assert_array_equal(whole, A)


def test_bad_arguments_raise_clear_errors():
    def body(rank: int) -> list[str]:
        mesh = td.default_mesh()
        x = xp.asarray(A)
        cases = [
            lambda: td.shard(x, 2),
            lambda: td.shard(A, 0),
            lambda: td.shard(x, 0, mesh="cpu"),
            lambda: td.from_local(xp.asarray(A[: rank + 2]), 0),  # blocks of 2 and 3 rows: not torch.chunk's
            lambda: td.from_local(xp.asarray(A[:, : rank + 2]), 0),
            lambda: td.from_local(xp.asarray(A > 0), None, pending=True),
            lambda: td.from_local(td.shard(x, 0), 0),
            lambda: td.Sharding(mesh, 0, pending=True),
        ]
        return raised(cases)

    messages = spmd(2, body)[0]
    expected = [
        ("IndexError", "shard(): axis 2 is out of bounds"),
        ("TypeError", "shard() expects x"),
        ("TypeError", "shard(): mesh must be a torch.distributed DeviceMesh"),
        ("ValueError", "from_local(): blocks of sizes [2, 3] along axis 0"),
        ("ValueError", "from_local(): the blocks' shapes must agree except along the partitioned axes [0]"),
        ("TypeError", "from_local(): a pending sum of booleans"),
        ("TypeError", "from_local(): local must be a plain NeuronArray"),
        ("ValueError", "Sharding: a pending sum is not partitioned"),
    ]
    for message, (kind, start) in zip(messages, expected, strict=True):
        assert message.startswith(f"{kind}: {start}"), message


# --- contractions ---


@pytest.mark.parametrize("world", [2, 3])
def test_output_parallel_contraction_communicates_nothing(world):
    def body(rank: int) -> list:
        qmn = td.shard(xp.asarray(Q), 0)
        with CommDebugMode() as mode, kernels.count_calls() as calls:
            qia = xp.contract("Qmn,mi,na->Qia", qmn, xp.asarray(C), xp.asarray(V))
        with CommDebugMode() as mode2:
            step = xp.einsum("Qmn,mi->Qin", qmn, xp.asarray(C))
            prod = xp.matmul(qmn, xp.asarray(V))
        return [
            comms(mode),
            comms(mode2),
            qia.device.axis,
            step.device.axis,
            prod.device.axis,
            np.asarray(qia),
            np.asarray(step),
            np.asarray(prod),
            sum(calls.values()),
        ]

    for c1, c2, a1, a2, a3, qia, step, prod, calls in spmd(world, body):
        assert (c1, c2, a1, a2, a3) == ({}, {}, 0, 0, 0)
        assert calls >= 2  # every step a kernel call (the counter is shared by the threads)
        np.testing.assert_allclose(qia, np.einsum("Qmn,mi,na->Qia", Q, C, V), rtol=1e-12)
        np.testing.assert_allclose(step, np.einsum("Qmn,mi->Qin", Q, C), rtol=1e-12)
        np.testing.assert_allclose(prod, Q @ V, rtol=1e-12)


@pytest.mark.parametrize("world", [2, 3])
def test_reduce_parallel_contraction_is_pending_until_one_collective(world):
    def body(rank: int) -> list:
        a, b = td.shard(xp.asarray(A.T), 1), td.shard(xp.asarray(A), 0)  # the contracted index partitioned
        with CommDebugMode() as mode:
            gram = xp.matmul(a, b)
            doubled = 2.0 * gram + gram  # linear: stays pending, no communication
        with CommDebugMode() as gathered:
            whole = gram.gather()
        with CommDebugMode() as scattered:
            rows = doubled.resolve(axis=0)
        with CommDebugMode() as reduced:
            replicated = doubled.resolve()
        with CommDebugMode() as nonlinear:
            root = xp.sqrt(xp.abs(gram))  # not linear: resolves first
        return [
            comms(mode),
            gram.device.pending,
            doubled.device.pending,
            comms(gathered),
            comms(scattered),
            rows.device.axis,
            comms(reduced),
            replicated.device.axis,
            comms(nonlinear),
            np.asarray(whole),
            np.asarray(rows),
            np.asarray(root),
        ]

    for c, p1, p2, gathered, scattered, axis, reduced, repl_axis, nonlinear, whole, rows, root in spmd(world, body):
        assert c == {} and p1 and p2
        assert gathered == {"all_reduce": 1} and reduced == {"all_reduce": 1} and nonlinear == {"all_reduce": 1}
        assert scattered == {"reduce_scatter_tensor": 1} and axis == 0 and repl_axis is None
        np.testing.assert_allclose(whole, A.T @ A, rtol=1e-12)
        np.testing.assert_allclose(rows, 3 * A.T @ A, rtol=1e-12)
        np.testing.assert_allclose(root, np.sqrt(np.abs(A.T @ A)), rtol=1e-12)


def modelled_and_counted(call):
    """``call()`` with the planner's moves recorded and torch's collectives counted: (result, modelled, counted),
    each a list of (collective, bytes) on this rank."""
    with td.record() as rec, td.count() as counted:
        result = call()
    modelled = [(m.issued, m.nbytes) for m, _, _ in rec.moves if m.kind is not None]
    return result, modelled, [(c.kind, c.nbytes) for c in counted]


def test_mixed_partitions_and_plain_operands():
    """Operands partitioned along different labels, plain next to partitioned, pending next to plain and pending:
    the values are NumPy's, and every collective the planner predicts is one torch runs, with its bytes."""

    def body(rank: int) -> list:
        plain_a, plain_b = xp.asarray(A), xp.asarray(B)
        rows, cols = td.shard(plain_a, 0), td.shard(plain_b, 1)
        k_rows = td.shard(plain_b, 0)
        pending = td.einsum("ik,kj->ij", plain_a, k_rows, sharding=td.Sharding(td.default_mesh(), None, True))
        calls = [
            lambda: rows @ cols,
            lambda: plain_a @ k_rows,
            lambda: xp.tensordot(pending, xp.asarray(B.T), axes=1),
            lambda: xp.einsum("ik,jk->ij", pending, pending),
            lambda: xp.vecdot(td.shard(xp.asarray(A + 1j * A), 0), xp.asarray(A)),
            lambda: xp.einsum("ij,ij->", rows, plain_a),
        ]
        runs = [modelled_and_counted(c) for c in calls]
        return [pending.device.pending] + [(m, c) for _, m, c in runs] + [np.asarray(r) for r, _, _ in runs]

    results = spmd(3, body)
    for rank in results:
        assert rank[0]  # forced: a pending sum
        for modelled, counted in rank[1:7]:
            assert modelled == counted
    r1, r2, r3, r4, r5, r6 = results[0][7:]
    np.testing.assert_allclose(r1, A @ B, rtol=1e-12)
    np.testing.assert_allclose(r2, A @ B, rtol=1e-12)
    np.testing.assert_allclose(r3, A @ B @ B.T, rtol=1e-12)
    np.testing.assert_allclose(r4, (A @ B) @ (A @ B).T, rtol=1e-12)
    np.testing.assert_allclose(r5, np.sum((A - 1j * A) * A, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(r6, np.sum(A * A), rtol=1e-12)


def test_integer_and_precision_mode_contractions():
    i8 = RNG.integers(-100, 100, size=(6, 5)).astype(np.int8)

    def body(rank: int) -> list:
        a = td.shard(xp.asarray(i8), 1)
        wrapped = a @ xp.asarray(i8.T)  # int8 products wrap: each summand wraps, so does their sum
        pending = td.from_local(xp.asarray(i8 if rank == 0 else np.zeros_like(i8)), None, pending=True)
        widened = xp.einsum("ij,kj->ik", pending, xp.asarray(i8.T.astype(np.int16).T))  # int8 -> int16: resolved
        x = td.shard(xp.asarray(A), 1)
        dd = xp.matmul(x, xp.asarray(B), precision="dd")
        plain_dd = xp.matmul(xp.asarray(A), xp.asarray(B), precision="dd")
        return [np.asarray(wrapped), np.asarray(widened), np.asarray(dd), np.asarray(plain_dd)]

    wrapped, widened, dd, plain_dd = spmd(2, body)[0]
    assert wrapped.dtype == np.int8 and widened.dtype == np.int16
    np.testing.assert_array_equal(wrapped, (i8.astype(np.int64) @ i8.T.astype(np.int64)).astype(np.int8))
    np.testing.assert_array_equal(widened, (i8.astype(np.int64) @ i8.T.astype(np.int64)).astype(np.int16))
    bound = xp.error_bound("dd", xp.float64, 7) * (np.abs(A) @ np.abs(B))  # a sum of per-rank dd products
    assert np.all(np.abs(dd - A @ B) <= bound) and np.all(np.abs(plain_dd - A @ B) <= bound)


def test_opt_einsum_expressions_on_sharded_operands():
    def body(rank: int) -> list:
        expr = xp.contract_expression("Qmn,mi,na->Qia", Q.shape, C.shape, V.shape)
        with CommDebugMode() as mode:
            r = expr(td.shard(xp.asarray(Q), 0), xp.asarray(C), xp.asarray(V))
        return [comms(mode), r.device.axis, np.asarray(r)]

    mode, axis, r = spmd(2, body)[0]
    assert mode == {} and axis == 0
    np.testing.assert_allclose(r, np.einsum("Qmn,mi,na->Qia", Q, C, V), rtol=1e-12)


# --- indexing, writes, conversions ---


def test_indexing_writes_and_conversions():
    def body(rank: int) -> list:
        x = td.shard(xp.asarray(A), 0)
        reads = [
            x[1],
            x[2:6],
            x[:, 3],
            x[..., None],
            x[xp.asarray([6, 0, 3])],
            x[xp.asarray(A > 0)],
            x[-1, ::-2],
            x.T,
            x.mT,
        ]
        y = td.shard(xp.asarray(A.copy()), 0)  # shard() keeps views of x: write into a copy of A
        y[1:4, 2] = 5.0
        y[xp.asarray([0, 6])] = xp.asarray(np.arange(5.0))
        z = td.replicate(xp.asarray(A.copy()))
        z[0] = -1.0
        summand = xp.asarray(A.copy() if rank == 0 else np.zeros_like(A))
        w = td.from_local(summand, None, pending=True)
        w[0, 0] = 3.0
        v = td.shard(xp.asarray(A.copy()), 0)
        v += 1.0
        v *= td.shard(xp.asarray(A), 1)
        u = td.from_local(xp.asarray(A / 4 if rank else A / 2), None, pending=True)
        u -= xp.asarray(A)  # a pending sum is resolved before it is written
        one = x[3, 2]
        scalars = [float(one), int(one > 0), bool(one > 0), complex(one), len(x), [tuple(r.shape) for r in x][0]]
        return [np.asarray(r) for r in reads] + [
            np.asarray(y),
            np.asarray(z),
            np.asarray(w),
            np.asarray(v),
            np.asarray(u),
            y.device.axis,
            v.device.axis,
            scalars,
            repr(x),
        ]

    out = spmd(3, body)[0]
    reads, (y, z, w, v, u, y_axis, v_axis, scalars, text) = out[:9], out[9:]
    for got, want in zip(
        reads, [A[1], A[2:6], A[:, 3], A[..., None], A[[6, 0, 3]], A[A > 0], A[-1, ::-2], A.T, A.T], strict=True
    ):
        np.testing.assert_array_equal(got, want)
    expected_y = A.copy()
    expected_y[1:4, 2] = 5.0
    expected_y[[0, 6]] = np.arange(5.0)
    expected_z, expected_w = A.copy(), A.copy()
    expected_z[0] = -1.0
    expected_w[0, 0] = 3.0
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(z, expected_z)
    np.testing.assert_allclose(w, expected_w, rtol=1e-15)
    np.testing.assert_allclose(v, (A + 1.0) * A, rtol=1e-15)
    np.testing.assert_allclose(u, np.zeros_like(A), atol=1e-15)
    assert y_axis == 0 and v_axis == 0
    assert scalars == [A[3, 2], int(A[3, 2] > 0), bool(A[3, 2] > 0), complex(A[3, 2]), 7, (5,)]
    assert text.startswith("ShardedNeuronArray([[") and text.endswith(
        "dtype=float64, device=Sharding(axis=0, ranks=[0, 1, 2], device='cpu'))"
    )


def test_creation_on_a_sharding_and_unsigned_collectives():
    u64 = np.array([[0, 1, 2**63, 2**64 - 1]] * 5, dtype=np.uint64)

    def body(rank: int) -> list:
        mesh = td.default_mesh()
        rows = td.Sharding(mesh, 0)
        made = [
            xp.zeros((5, 3), device=rows),
            xp.arange(7, device=rows),
            xp.full((2, 3), 4.0, device=td.Sharding(mesh, None, pending=True)),
            xp.asarray(A, device=rows),
        ]
        x = td.shard(xp.asarray(u64), 0)
        pending = td.from_local(xp.asarray(u64 if rank == 0 else np.full_like(u64, 2**63)), None, pending=True)
        return [
            [(m.device, np.asarray(m)) for m in made],
            np.asarray(x),
            np.asarray(xp.max(x, axis=0)),
            np.asarray(pending),
            np.asarray(xp.sum(x, axis=0)),
        ]

    made, whole, top, pending, total = spmd(2, body)[0]
    assert [d.axis for d, _ in made] == [0, 0, None, 0] and made[2][0].pending
    np.testing.assert_array_equal(made[0][1], np.zeros((5, 3), np.float32))
    np.testing.assert_array_equal(made[1][1], np.arange(7))
    np.testing.assert_array_equal(made[2][1], np.full((2, 3), 4.0, np.float32))
    np.testing.assert_array_equal(made[3][1], A)
    np.testing.assert_array_equal(whole, u64)
    np.testing.assert_array_equal(top, u64.max(axis=0))
    np.testing.assert_array_equal(pending, u64 + np.uint64(2**63))  # modulo 2**64
    np.testing.assert_array_equal(total, u64.sum(axis=0, dtype=np.uint64))


def test_numpy_functions_on_sharded_arrays():
    def body(rank: int) -> list:
        x = td.shard(xp.asarray(A), 0)
        results = [
            np.add(x, np.array(2.0)),
            np.add(x, np.ones(5)),
            np.sum(x),
            np.einsum("ij,kj->ik", x, A),
            np.sin(x),
            np.mean(x, axis=0),
        ]
        return [(type(r).__name__, np.asarray(r)) for r in results]

    expected = [A + 2.0, A + 1.0, np.sum(A), A @ A.T, np.sin(A), np.mean(A, axis=0)]
    for (kind, got), want in zip(spmd(2, body)[0], expected, strict=True):
        assert kind == "ShardedNeuronArray"
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_arrays_on_different_meshes_are_an_error():
    from torch.distributed.device_mesh import DeviceMesh

    def body(rank: int) -> str:
        x = td.shard(xp.asarray(A), 0)
        other = DeviceMesh("cpu", [1, 0])
        y = td.shard(xp.asarray(A), 0, mesh=other)
        try:
            xp.add(x, y)
        except ValueError as e:
            return str(e)
        return "no error"

    assert spmd(2, body)[0].startswith("add(): sharded arguments live on different device meshes")


# --- contractions larger than memory ---

# a chain whose intermediates (12 x 3 and 3 x 12 from either end) outgrow its 3 x 3 output
X, Y, Z = RNG.normal(size=(3, 12)), RNG.normal(size=(12, 12)), RNG.normal(size=(12, 3))
CHAIN = np.einsum("ab,bc,cd->ad", X, Y, Z)


def test_sliced_contraction_without_a_process_group():
    assert not dist.is_initialized()
    operands = (xp.asarray(X), xp.asarray(Y), xp.asarray(Z))
    path, sliced = slicing.slicing(
        slicing.parse("ab,bc,cd->ad", (X.shape, Y.shape, Z.shape)), [X.shape, Y.shape, Z.shape], 12
    )
    assert sliced  # the limit forces slices
    with kernels.count_calls() as calls:
        r = xp.contract("ab,bc,cd->ad", *operands, memory_limit=12)
    # the last step varies along every sliced index (12 values each): it runs once per slice
    assert type(r) is xp.NeuronArray and sum(calls.values()) >= 12
    np.testing.assert_allclose(np.asarray(r), CHAIN, rtol=1e-12)
    r = xp.contract("ab,bc,cd->ad", *operands, memory_limit="max_input")
    np.testing.assert_allclose(np.asarray(r), CHAIN, rtol=1e-12)
    search = ctg.HyperOptimizer(methods=["greedy"], max_repeats=2, slicing_opts={"target_size": 12}, progbar=False)
    r = xp.contract("ab,bc,cd->ad", *operands, memory_limit=12, optimize=search)
    np.testing.assert_allclose(np.asarray(r), CHAIN, rtol=1e-12)
    with pytest.raises(ValueError, match=r"contract\(\): no slicing of contracted indices keeps every inter"):
        xp.contract("ab,bc,cd->ad", *operands, memory_limit=5)
    with pytest.raises(ValueError, match=r"contract\(\): memory_limit must be a positive number"):
        xp.contract("ab,bc,cd->ad", *operands, memory_limit=-1)


@pytest.mark.parametrize("world", [2, 3])
def test_sliced_contraction_spreads_slices_over_ranks(world):
    def body(rank: int) -> list:
        operands = [xp.asarray(X), xp.asarray(Y), xp.asarray(Z)]
        with CommDebugMode() as mode:
            spread = xp.contract("ab,bc,cd->ad", *operands, memory_limit=12)
        rows = xp.contract("ab,bc,cd->ad", td.shard(operands[0], 0), *operands[1:], memory_limit=12)
        inner = xp.contract("ab,bc,cd->ad", operands[0], td.shard(operands[1], 1), operands[2], memory_limit=12)
        # cotengra's choice made to differ per rank: every rank must end up with the first rank's
        decided = _slicing._decided((((0, 1),) * rank, ("m",) * rank), td.default_mesh())
        # a limit that needs no slicing: every rank computes the whole (replicated, not a sum of copies)
        unsliced = xp.contract("ab,bc,cd->ad", *operands, memory_limit=10**6)
        return [
            comms(mode),
            spread.device.pending,
            rows.device.axis,
            inner.device.pending,
            decided,
            unsliced.device,
        ] + [np.asarray(r) for r in (spread, rows, inner, unsliced)]

    for mode, pending, axis, inner_pending, decided, unsliced, *results in spmd(world, body):
        assert mode == {} and pending and axis == 0 and inner_pending and decided == ((), ())
        assert not unsliced.pending and unsliced.axis is None
        for r in results:
            np.testing.assert_allclose(r, CHAIN, rtol=1e-12)


# --- real processes on gloo ---


def _gloo_body(rank: int) -> None:
    """What threads cannot show: gloo's own dtypes and collectives, counted."""
    mesh = td.default_mesh()
    assert mesh.size() == 2 and dist.get_backend() == "gloo"
    for dtype in ("uint16", "uint32", "uint64", "int8", "bool", "complex128", "float32"):
        a = (np.arange(35).reshape(7, 5) * 7919 % 251).astype(dtype)
        x = td.shard(xp.asarray(a), 0)
        np.testing.assert_array_equal(np.asarray(x), a)
        np.testing.assert_array_equal(np.asarray(x.redistribute(1)), a)
    qmn = td.from_local(xp.asarray(Q[td.local_slice(7, mesh)]), 0)
    with CommDebugMode() as mode:
        qia = xp.contract("Qmn,mi,na->Qia", qmn, xp.asarray(C), xp.asarray(V))
    assert comms(mode) == {} and qia.device.axis == 0
    gram = td.einsum("Qia,Qjb->iajb", qia, qia, sharding=td.Sharding(mesh, None, pending=True))
    with CommDebugMode() as mode:
        rows = gram.resolve(axis=0)
    assert comms(mode) == {"reduce_scatter_tensor": 1} and rows.device.axis == 0
    with CommDebugMode() as mode:
        energy = float(xp.sum(gram * gram))
    assert comms(mode) == {"all_reduce": 1}
    ref = np.einsum("Qmn,mi,na->Qia", Q, C, V)
    ref_gram = np.einsum("Qia,Qjb->iajb", ref, ref)
    np.testing.assert_allclose(np.asarray(rows), ref_gram, rtol=1e-12)
    assert abs(energy - np.sum(ref_gram**2)) <= 1e-12 * np.sum(ref_gram**2)
    sliced = xp.contract("ab,bc,cd->ad", xp.asarray(X), xp.asarray(Y), xp.asarray(Z), memory_limit=12)
    assert sliced.device.pending
    np.testing.assert_allclose(np.asarray(sliced), CHAIN, rtol=1e-12)


@pytest.mark.heavy
@pytest.mark.timeout(120)
def test_two_gloo_processes(tmp_path):
    gloo(2, _gloo_body, str(tmp_path / "store"))


@pytest.mark.heavy
@pytest.mark.timeout(150)
@pytest.mark.parametrize(("ranks", "mesh"), [(2, []), (4, ["--mesh", "2x2"])])
def test_the_df_mp2_example_under_torchrun(ranks, mesh):
    """The example on 2 ranks (1-D) and 4 (a 2x2 mesh) as gloo processes: its per-rank "modelled" bytes equal the
    "counted" ones on every line, and it ends with "match"."""
    import pathlib
    import re
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]

    def launch():
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc-per-node",
                str(ranks),
                str(root / "examples" / "sharded_df_mp2.py"),
                *mesh,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=root,
        )

    run = launch()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "\nmatch: " in run.stdout, run.stdout
    pairs = re.findall(r"rank (\d+): modelled (\d+) counted (\d+)", run.stdout)
    assert pairs and all(m == c for _, m, c in pairs), run.stdout
    assert {int(r) for r, _, _ in pairs} == set(range(ranks)), run.stdout


def test_sharded_sums_keep_the_published_bound_for_their_ranks():
    """K partitioned over 2 ranks: fp64 and ozaki sum the ranks' float64 summands before their one rounding
    (rounding each summand to float32 first reached 1.06e-7 > u at K = 16); every mode stays within
    error_bound(..., ranks=2), which adds the pending sum's own rounding."""
    g = np.random.default_rng(11)  # positive data: |C| = |A||B|, where rounding twice shows most
    a, b = g.random((64, 16)).astype(np.float32), g.random((16, 64)).astype(np.float32)
    twice = (a[:, :8].astype(np.float64) @ b[:8]).astype(np.float32) + (a[:, 8:].astype(np.float64) @ b[8:]).astype(
        np.float32
    )
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    modes = ("native", "fast", "dd", "bf16x6", "ozaki", "fp64")

    def body(rank: int) -> list:
        x = td.shard(xp.asarray(a), 1)
        results = []
        for mode in modes:
            with CommDebugMode() as mode_comms:  # the step forced reduce-parallel: its result a pending sum
                r = td.einsum(
                    "ik,kj->ij",
                    x,
                    xp.asarray(b),
                    precision=mode,
                    sharding=td.Sharding(td.default_mesh(), None, pending=True),
                )
            results.append((r.device.pending, comms(mode_comms), np.asarray(r)))
        return results

    assert np.max(np.abs(twice - exact) / scale) > xp.error_bound("fp64", xp.float32, 16)  # what it fixes
    for mode, (pending, collectives, got) in zip(modes, spmd(2, body)[0], strict=True):
        assert got.dtype == np.float32
        assert pending == (mode not in ("ozaki", "fp64"))  # float64 summands are resolved at once
        if not pending:
            assert collectives == {"all_reduce": 1}
        bound = xp.error_bound(mode, xp.float32, 16, ranks=2)
        assert np.all(np.abs(got - exact) <= bound * scale), mode
    assert xp.error_bound("fp64", xp.float32, 16, ranks=2) < 1.0000001 * xp.error_bound("fp64", xp.float32, 16)
    assert xp.error_bound("fast", xp.float32, 16, ranks=8) > xp.error_bound("fast", xp.float32, 16)
