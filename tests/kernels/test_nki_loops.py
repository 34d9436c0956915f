"""Dynamic loops in the CPU model of the NeuronCore (kernels/nki/model/loops.py): ``nl.fori_loop`` runs every
iteration but its body is one piece of program, virtual registers are run-time values a traced kernel cannot
compute with, and ``NkiTensor.ap`` addresses storage as documented (SDK nki/api/nki/language/__init__.py
fori_loop and NkiTensor.ap; nki/deep-dives/nki-aps.rst). Oracles: NumPy on the same data, Python index
arithmetic."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from trn_backend.kernels.nki import model
from trn_backend.kernels.nki.model import ModelError, core
from trn_backend.kernels.nki.model import isa as nisa
from trn_backend.kernels.nki.model import language as nl
from trn_backend.kernels.nki.model.loops import RegisterUseError


@pytest.fixture(autouse=True)
def _one_core(monkeypatch):
    """Loop semantics on one physical core: a runtime of LNC=1, which a plain launch matches."""
    monkeypatch.setenv(core.LNC_VARIABLE, "1")


def run(kernel, *args):
    k = model.jit(kernel)
    return k(*args), k.last_run


def int_data(shape, seed):
    """fp32 integers: x + x is exact, so NumPy's result is the oracle bit for bit."""
    return np.random.default_rng(seed).integers(-2**20, 2**20, shape).astype(np.float32)


def doubling_copy(block):
    """out = x + x, ``block`` rows at a time: one fori_loop whose register is the block's first row."""

    def kernel(x):
        rows, cols = x.shape
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        tile = nl.ndarray((block, cols), nl.float32, buffer=nl.sbuf)

        def body(i):
            nisa.dma_copy(dst=tile, src=x.ap([[cols, block], [1, cols]], scalar_offset=i, indirect_dim=0))
            nisa.tensor_tensor(dst=tile, data1=tile, data2=tile, op=nl.add)
            nisa.dma_copy(dst=out.ap([[cols, block], [1, cols]], scalar_offset=i, indirect_dim=0), src=tile)

        nl.fori_loop(0, rows, body, step=block)
        return out

    return kernel


@given(blocks=st.integers(1, 6), block=st.sampled_from([1, 2, 32, 64, 128]), cols=st.integers(1, 40),
       seed=st.integers(0, 2**16))
def test_block_copy_matches_numpy_and_program_size_does_not_grow_with_trips(blocks, block, cols, seed):
    x = int_data((blocks * block, cols), seed)
    out, ran = run(doubling_copy(block), x)
    np.testing.assert_array_equal(out, x + x)
    assert ran.instructions() == 3 * blocks  # every iteration executes
    assert ran.instructions("dma") == 2 * blocks and ran.instructions("gpsimd", "tensor_tensor") == 0
    assert ran.program_instructions == 3  # the body is one piece of program


def test_counting_only_counts_the_same_and_a_loop_free_kernel_has_equal_counts():
    with model.counting_only():
        _, ran = run(doubling_copy(32), model.shape_only((32 * 5, 8), np.float32))
    assert (ran.instructions(), ran.program_instructions) == (15, 3)

    def plain(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
        return out

    _, ran = run(plain, np.ones((4, 4), np.float32))
    assert ran.instructions() == ran.program_instructions == 2


def test_the_body_is_traced_once_and_its_tiles_are_reused():
    """Python in the body runs once (the compiler traces it once): a Python counter there cannot make later
    iterations differ, as it cannot on the device."""
    calls = []

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)

        def body(i):
            calls.append(len(calls))
            tile = nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)  # allocated once, reused by every iteration
            nisa.dma_copy(dst=tile, src=x.ap([[4, 1], [1, 4]], scalar_offset=i, indirect_dim=0))
            nisa.dma_copy(dst=out.ap([[4, 1], [1, 4]], scalar_offset=i, indirect_dim=0), src=tile)

        nl.fori_loop(0, x.shape[0], body)
        return out

    x = int_data((7, 4), 1)
    out, ran = run(kernel, x)
    np.testing.assert_array_equal(out, x)
    assert calls == [0] and ran.sbuf_peak == 16


def test_runtime_trip_count_from_a_register_and_register_round_trips():
    def kernel(x, count):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        zeros = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.memset(zeros, 0.0)
        nisa.dma_copy(dst=out, src=zeros)
        n_sb = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=n_sb, src=count)
        n = nisa.register_alloc()
        nisa.register_load(n, n_sb)
        row = nl.ndarray((1, x.shape[1]), nl.float32, buffer=nl.sbuf)

        def body(i):
            nisa.dma_copy(dst=row, src=x.ap([[x.shape[1], 1], [1, x.shape[1]]], scalar_offset=i, indirect_dim=0))
            nisa.dma_copy(dst=out.ap([[x.shape[1], 1], [1, x.shape[1]]], scalar_offset=i, indirect_dim=0), src=row)

        nl.fori_loop(0, n, body)
        other = nisa.register_alloc(9)
        nisa.register_move(other, n)  # a register's value, copied
        nisa.register_store(n_sb, other)
        nisa.register_move(other, 9)
        nisa.register_store(n_sb[0:1, 0:1], other)
        nisa.dma_copy(dst=count, src=n_sb)  # inputs are updated in place, as in the simulator
        return out

    x = int_data((6, 3), 2)
    count = np.array([[4]], np.int32)
    out, ran = run(kernel, x, count)
    np.testing.assert_array_equal(out[:4], x[:4])
    np.testing.assert_array_equal(out[4:], 0)
    assert count[0, 0] == 9 and ran.instructions("dma") == 3 + 2 * 4
    with model.counting_only(), pytest.raises(ModelError, match="upper-bound register has no value"):
        run(kernel, model.shape_only((6, 3), np.float32), np.array([[4]], np.int32))


def nested_copy(block, width):
    """Blocks [block, width] of x [R, C], outer dynamic loop over row blocks (register r), inner over column
    blocks (register c), each access with one dynamic offset.

    The HBM read of block (r, c) starts at element r * C + c, which depends on two registers, and NKI documents no
    register arithmetic. The kernel keeps that element offset in a [1, 1] int32 SBUF tile instead: it starts at 0,
    each inner iteration advances it by ``width`` and each outer iteration by (block - 1) * C more, with int32 adds
    on GpSimd (exact, unlike the Vector Engine's fp32), and ``register_load`` puts it in a register before the read
    (``scalar_offset`` scales by the stride of ``indirect_dim`` = 1: one element). The SBUF write uses c alone
    and the HBM write of a whole row block r alone."""

    def kernel(x):
        rows, cols = x.shape
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        stage = nl.ndarray((block, cols), nl.float32, buffer=nl.sbuf)
        position = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        next_block, next_row = (nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf) for _ in range(2))
        nisa.memset(position, 0)
        nisa.memset(next_block, width)
        nisa.memset(next_row, (block - 1) * cols)
        at = nisa.register_alloc()

        def row_block(r):
            def column_block(c):
                nisa.register_load(at, position)
                nisa.dma_copy(dst=stage.ap([[cols, block], [1, width]], scalar_offset=c, indirect_dim=1),
                              src=x.ap([[cols, block], [1, width]], scalar_offset=at, indirect_dim=1))
                nisa.tensor_tensor(dst=position, data1=position, data2=next_block, op=nl.add)

            nl.fori_loop(0, cols, column_block, step=width)
            nisa.tensor_tensor(dst=position, data1=position, data2=next_row, op=nl.add)
            nisa.dma_copy(dst=out.ap([[cols, block], [1, cols]], scalar_offset=r, indirect_dim=0), src=stage)

        nl.fori_loop(0, rows, row_block, step=block)
        return out

    return kernel


@given(row_blocks=st.integers(1, 4), col_blocks=st.integers(1, 4), block=st.sampled_from([1, 32, 128]),
       width=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_a_dynamic_loop_nested_in_a_dynamic_loop(row_blocks, col_blocks, block, width, seed):
    x = int_data((row_blocks * block, col_blocks * width), seed)
    out, ran = run(nested_copy(block, width), x)
    np.testing.assert_array_equal(out, x)
    assert ran.instructions() == 3 + row_blocks * (2 + 2 * col_blocks)
    assert ran.program_instructions == 3 + 2 + 2
    assert ran.instructions("gpsimd", "tensor_tensor") == row_blocks * (1 + col_blocks)


@given(n=st.integers(1, 8))
def test_an_inner_loop_first_run_inside_a_replay_counts_once(n):
    """A triangular loop: inner trips r, so the inner body first runs (and is traced) during a replay of the
    outer body. out[0, r] = r: the inner body adds one to column r each iteration."""

    def kernel(x):
        out = nl.ndarray((1, n), nl.float32, buffer=nl.shared_hbm)
        acc, one = nl.ndarray((1, n), nl.float32, buffer=nl.sbuf), nl.ndarray((1, 1), nl.float32, buffer=nl.sbuf)
        count, step = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf), nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        for t, value in ((acc, 0.0), (one, 1.0), (count, 0), (step, 1)):
            nisa.memset(t, value)
        trips = nisa.register_alloc()

        def outer(r):
            column = acc.ap([[n, 1], [1, 1]], scalar_offset=r, indirect_dim=1)
            nisa.register_load(trips, count)
            nl.fori_loop(0, trips, lambda _: nisa.tensor_tensor(dst=column, data1=column, data2=one, op=nl.add))
            nisa.tensor_tensor(dst=count, data1=count, data2=step, op=nl.add)

        nl.fori_loop(0, n, outer)
        nisa.dma_copy(dst=out, src=acc)
        return out

    out, ran = run(kernel, np.zeros(1, np.float32))
    np.testing.assert_array_equal(out[0], np.arange(n))
    assert ran.instructions() == 4 + n + n * (n - 1) // 2 + 1
    assert ran.program_instructions == 4 + 1 + (1 if n > 1 else 0) + 1  # the inner body once it has run


@given(iterations=st.integers(2, 5), tiles=st.integers(2, 6))
def test_tiles_of_a_body_live_within_an_iteration(iterations, tiles):
    """A body that uses its tiles one after the other needs one tile's SBUF, however many iterations replay it
    (each iteration's tiles live from their first to their last use in it). Oracle: out[r, j-th 256] == j."""

    def kernel(x):
        width = tiles * 256
        out = nl.ndarray((iterations, width), nl.float32, buffer=nl.shared_hbm)

        def body(i):
            for j in range(tiles):
                tile = nl.ndarray((1, 256), nl.float32, buffer=nl.sbuf)
                nisa.memset(tile, float(j))
                nisa.dma_copy(dst=out.ap(((width, 1), (1, 256)), offset=j * 256, scalar_offset=i, indirect_dim=0),
                              src=tile)

        nl.fori_loop(0, iterations, body)
        return out

    out, ran = run(kernel, np.zeros(1, np.float32))
    np.testing.assert_array_equal(out, np.repeat(np.arange(tiles, dtype=np.float32), 256)[None].repeat(iterations, 0))
    assert ran.sbuf_peak == 256 * 4


def test_a_body_tile_carries_no_value_into_the_next_iteration():
    """A tile the outer body allocates is written (by an inner loop of one trip) in the first iteration only: the
    second reads what the first left, which needs the tile live across iterations; the model refuses it."""

    def kernel(x):
        out = nl.ndarray((2, 4), nl.float32, buffer=nl.shared_hbm)
        count, down = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf), nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.memset(count, 1)
        nisa.memset(down, -1)
        trips = nisa.register_alloc()

        def body(i):
            carried = nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)
            nisa.register_load(trips, count)
            nl.fori_loop(0, trips, lambda _: nisa.memset(carried, 1.0))
            nisa.dma_copy(dst=out.ap(((4, 1), (1, 4)), scalar_offset=i, indirect_dim=0), src=carried)
            nisa.tensor_tensor(dst=count, data1=count, data2=down, op=nl.add)

        nl.fori_loop(0, 2, body)
        return out

    with pytest.raises(ModelError, match="never written"):
        run(kernel, np.zeros(1, np.float32))


# --- refusals ------------------------------------------------------------------------------------------------
def loop_with(body_use):
    """A kernel whose loop body does ``body_use(i, x)`` with the induction register i."""

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        nl.fori_loop(0, 2, lambda i: body_use(i, x))
        return out

    return kernel


@pytest.mark.parametrize("use", [
    lambda i, x: i + 1, lambda i, x: 128 * i, lambda i, x: -i, lambda i, x: i // 2, lambda i, x: i == 0,
    lambda i, x: i < 3, lambda i, x: int(i), lambda i, x: range(i), lambda i, x: [0, 1][i],
    lambda i, x: x[i:i + 1], lambda i, x: nl.ds(i, 1), lambda i, x: 1 if i else 0,
], ids=["add", "rmul", "neg", "floordiv", "eq", "lt", "int", "range", "list-index", "slice", "ds", "if"])
def test_using_a_register_at_trace_time_is_refused(use):
    with pytest.raises(ModelError, match=r"scalar_offset=reg, indirect_dim=d"):
        run(loop_with(use), np.ones((2, 2), np.float32))


def test_register_refusals_are_type_errors_and_indexing_names_the_remedy():
    with pytest.raises(TypeError):
        run(loop_with(lambda i, x: bool(i)), np.ones((2, 2), np.float32))
    assert issubclass(RegisterUseError, ModelError)
    with pytest.raises(ModelError, match=r"index VirtualRegister .*scalar_offset=reg"):
        run(loop_with(lambda i, x: x[i]), np.ones((2, 2), np.float32))


@pytest.mark.parametrize("step", [1.5, 0, -1, True, "1", np.float32(2)])
def test_fori_loop_step_must_be_a_positive_compile_time_int(step):
    with core.running(core.Core()), pytest.raises(ModelError, match="step must be a compile-time positive int"):
        nl.fori_loop(0, 4, lambda i: None, step=step)


def test_fori_loop_argument_refusals():
    with core.running(core.Core()):
        with pytest.raises(ModelError, match="step must be a compile-time positive int"):
            nl.fori_loop(0, 4, lambda i: None, step=nisa.register_alloc(1))
        with pytest.raises(ModelError, match="upper .* must be a compile-time int, got float"):
            nl.fori_loop(0, 4.0, lambda i: None)
        with pytest.raises(ModelError, match="does not fit a 32-bit register"):
            nl.fori_loop(0, 2**31, lambda i: None)
        with pytest.raises(ModelError, match="returns nothing and carries no values"):
            nl.fori_loop(0, 4, lambda i: 0)
        bound = nisa.register_alloc(3)
        with pytest.raises(ModelError, match="body changed the upper-bound register"):
            nl.fori_loop(0, bound, lambda i: nisa.register_move(bound, 1))
        with pytest.raises(ModelError, match="never written"):
            nisa.register_store(nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf), nisa.register_alloc())
        with pytest.raises(ModelError, match="one-element int32 tensor"):
            nisa.register_load(nisa.register_alloc(), nl.ndarray((1, 2), nl.int32, buffer=nl.sbuf))


@pytest.mark.parametrize("overrun", [1, 32])
def test_a_dynamic_access_out_of_bounds_is_an_error_at_the_iteration_that_makes_it(overrun):
    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        tile = nl.ndarray((32, 4), nl.float32, buffer=nl.sbuf)
        nl.fori_loop(0, x.shape[0] + overrun, lambda i: nisa.dma_copy(
            dst=tile, src=x.ap([[4, 32], [1, 4]], scalar_offset=i, indirect_dim=0)), step=32)
        return out

    k = model.jit(kernel)
    with pytest.raises(ModelError, match=r"scalar_offset=64\).*elements 256\.\.383 .* out of bounds"):
        k(np.ones((64, 4), np.float32))
    assert k.last_run.instructions("dma") == 1 + 2  # the first two blocks ran


# --- NkiTensor.ap ----------------------------------------------------------------------------------------------
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_static_access_patterns_address_the_storage_as_documented(shape, data):
    """ap(pattern, offset) element [j...] = flat storage[start + sum(j_d * stride_d)], computed with Python ints."""
    size = int(np.prod(shape))
    x = np.arange(size, dtype=np.float32).reshape(shape)
    entries = data.draw(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=1, max_size=3))
    offset = data.draw(st.integers(0, size))
    last = offset + sum(stride * (count - 1) for stride, count in entries)
    with core.running(core.Core()):
        t = core.Tensor.allocate(x.shape, x.dtype, core.SHARED_HBM, "x", data=x)
        if last >= size:
            with pytest.raises(ModelError, match="out of bounds"):
                t.ap([list(e) for e in entries], offset=offset)
            return
        view = t.ap([list(e) for e in entries], offset=offset)
    expected = np.empty([c for _, c in entries], np.float32)
    for index in itertools.product(*(range(c) for _, c in entries)):
        expected[index] = offset + sum(j * s for j, (s, _) in zip(index, entries, strict=True))
    np.testing.assert_array_equal(view.data, expected)


def test_ap_offsets_compose_with_the_view_and_scale_by_the_indirect_dimension():
    x = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    with core.running(core.Core()):
        t = core.Tensor.allocate(x.shape, x.dtype, core.SHARED_HBM, "x", data=x)
        np.testing.assert_array_equal(t[2:4].ap([[5, 2], [1, 5]]).data, x[2:4])  # inherits the view's offset
        np.testing.assert_array_equal(t[2:4].ap([[5, 2], [1, 5]], offset=5).data, x[3:5])  # added to it
        np.testing.assert_array_equal(t.ap([[5, 2], [1, 2]], scalar_offset=3, indirect_dim=1).data, x[0:2, 3:5])
        np.testing.assert_array_equal(t.ap([[5, 2], [1, 2]], scalar_offset=3, indirect_dim=0).data, x[3:5, 0:2])
        reg = nisa.register_alloc(1)
        view = t.ap([[5, 2], [1, 5]], scalar_offset=reg, indirect_dim=0)
        np.testing.assert_array_equal(view.data, x[1:3])
        nisa.register_move(reg, 4)  # read when used, as the hardware reads the register
        np.testing.assert_array_equal(view.data, x[4:6])
        assert view.shape == (2, 5)
        with pytest.raises(ModelError, match="cannot be indexed, viewed or reshaped further"):
            view[0:1]
        with pytest.raises(ModelError, match="cannot be re-indirected"):
            view.ap([[5, 2], [1, 5]])


def test_ap_on_chip_rules():
    with core.running(core.Core()):
        t = nl.ndarray((16, 32), nl.float32, buffer=nl.sbuf)
        nisa.memset(t, 1.0)
        assert t.ap([[32, 16], [1, 8]], offset=8).shape == (16, 8)
        with pytest.raises(ModelError, match="steps whole partitions"):
            t.ap([[64, 8], [1, 32]])  # every other partition (nki-aps.rst's illegal example)
        with pytest.raises(ModelError, match="runs past the 32 elements of each partition"):
            t.ap([[32, 8], [1, 8]], offset=30)  # in the storage, but wrapping into the next partition
        with pytest.raises(ModelError, match="partition dimension of an on-chip tensor"):
            t.ap([[32, 16], [1, 8]], scalar_offset=nisa.register_alloc(0), indirect_dim=0)
        with pytest.raises(ModelError, match="vector_offset .* is not modelled"):
            t.ap([[32, 16], [1, 8]], vector_offset=t)
        with pytest.raises(ModelError, match=r"\[1, 1\] int32 SBUF tile"):
            t.ap([[32, 16], [1, 8]], scalar_offset=t, indirect_dim=1)
        with pytest.raises(ModelError, match="offset must be a compile-time int, not a VirtualRegister"):
            t.ap([[32, 16], [1, 8]], offset=nisa.register_alloc(0))
        index = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.memset(index, 24)
        assert t.ap([[32, 16], [1, 8]], scalar_offset=index, indirect_dim=1).data.shape == (16, 8)
        nisa.memset(index, 25)
        view = t.ap([[32, 8], [1, 8]], scalar_offset=index, indirect_dim=1)
        with pytest.raises(ModelError, match="runs past"):
            nisa.memset(view, 0.0)


def test_ap_reinterprets_same_width_dtypes_and_refuses_what_the_model_does_not_address():
    x = np.array([[1.5, -2.0], [0.25, 8.0]], np.float32)
    with core.running(core.Core()):
        t = core.Tensor.allocate(x.shape, x.dtype, core.SHARED_HBM, "x", data=x)
        bits = t.ap([[2, 2], [1, 2]], dtype=nl.int32)
        np.testing.assert_array_equal(bits.data, x.view(np.int32))
        with pytest.raises(ModelError, match="between dtypes of one width, not float32 -> bfloat16"):
            t.ap([[2, 2], [1, 4]], dtype=nl.bfloat16)
        transposed = core.Tensor.allocate((2, 2), x.dtype, core.SHARED_HBM, "a", data=x.T)
        with pytest.raises(ModelError, match="non-contiguous input"):
            transposed.ap([[2, 2], [1, 2]])
        with pytest.raises(ModelError, match=r"pattern entry \[1, 0\] needs stride >= 0 and count >= 1"):
            t.ap([[2, 2], [1, 0]])
        with pytest.raises(ModelError, match="indirect_dim 2 is not a dimension of shape"):
            t.ap([[2, 2], [1, 2]], scalar_offset=nisa.register_alloc(0), indirect_dim=2)
