"""Dynamic loops in the CPU model of the NeuronCore (kernels/nki/model/loops.py): ``nl.fori_loop`` runs every
iteration but its body is one piece of program, virtual registers are run-time values a traced kernel cannot
compute with, and ``NkiTensor.ap`` addresses storage as documented (SDK nki/api/nki/language/__init__.py
fori_loop and NkiTensor.ap; nki/deep-dives/nki-aps.rst, nki-dynamic-loops.rst, nki-dge.rst). Oracles: NumPy on the
same data, Python index arithmetic.

The allowed form the kernels here follow: loops do not nest; a dynamic offset is taken on the tensor as
allocated, along its last dimension (so the register counts elements: a loop over row blocks steps rows * columns);
a dynamic-offset dma_copy passes dge_mode=hwdge; an output written with dynamic offsets is fenced with
``nisa.dma_copy(dst=out, src=out)`` before the kernel returns."""

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

HW = nisa.dge_mode.hwdge  # dynamic-offset DMAs generate their descriptors on the hardware DGE


@pytest.fixture(autouse=True)
def _one_core(monkeypatch):
    """Loop semantics on one physical core: a runtime of LNC=1, which a plain launch matches."""
    monkeypatch.setenv(core.LNC_VARIABLE, "1")


def run(kernel, *args):
    k = model.jit(kernel)
    return k(*args), k.last_run


def int_data(shape, seed):
    """fp32 integers: x + x is exact, so NumPy's result is the oracle bit for bit."""
    return np.random.default_rng(seed).integers(-(2**20), 2**20, shape).astype(np.float32)


def doubling_copy(block):
    """out = x + x, ``block`` rows at a time: one fori_loop whose register is the element offset of the block's
    first row (it steps block * cols elements)."""

    def kernel(x):
        rows, cols = x.shape
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        tile = nl.ndarray((block, cols), nl.float32, buffer=nl.sbuf)

        def body(i):
            nisa.dma_copy(dst=tile, src=x.ap([[cols, block], [1, cols]], scalar_offset=i, indirect_dim=1), dge_mode=HW)
            nisa.tensor_tensor(dst=tile, data1=tile, data2=tile, op=nl.add)
            nisa.dma_copy(
                dst=out.ap([[cols, block], [1, cols]], scalar_offset=i, indirect_dim=1), src=tile, dge_mode=HW
            )

        nl.fori_loop(0, rows * cols, body, step=block * cols)
        nisa.dma_copy(dst=out, src=out)  # the HBM fence after the dynamic writes
        return out

    return kernel


@given(
    blocks=st.integers(1, 6),
    block=st.sampled_from([1, 2, 32, 64, 128]),
    cols=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_block_copy_matches_numpy_and_program_size_does_not_grow_with_trips(blocks, block, cols, seed):
    x = int_data((blocks * block, cols), seed)
    out, ran = run(doubling_copy(block), x)
    np.testing.assert_array_equal(out, x + x)
    assert ran.instructions() == 3 * blocks + 1  # every iteration executes, and the fence
    assert ran.instructions("dma") == 2 * blocks + 1 and ran.instructions("gpsimd", "tensor_tensor") == 0
    assert ran.program_instructions == 4  # the body is one piece of program
    assert ran.cores[0].control_flow == [("fori_loop", 0, blocks * block * cols, block * cols)]


def test_counting_only_counts_the_same_and_a_loop_free_kernel_has_equal_counts():
    with model.counting_only():
        _, ran = run(doubling_copy(32), model.shape_only((32 * 5, 8), np.float32))
    assert (ran.instructions(), ran.program_instructions) == (16, 4)

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
            nisa.dma_copy(dst=tile, src=x.ap([[4, 1], [1, 4]], scalar_offset=i, indirect_dim=1), dge_mode=HW)
            nisa.dma_copy(dst=out.ap([[4, 1], [1, 4]], scalar_offset=i, indirect_dim=1), src=tile, dge_mode=HW)

        nl.fori_loop(0, x.shape[0] * 4, body, step=4)
        nisa.dma_copy(dst=out, src=out)
        return out

    x = int_data((7, 4), 1)
    out, ran = run(kernel, x)
    np.testing.assert_array_equal(out, x)
    assert calls == [0] and ran.sbuf_peak == 16


def test_runtime_trip_count_from_a_register_and_register_round_trips():
    """The loop's upper bound is a register loaded from an input (an element count: the loop steps a row of
    elements at a time)."""

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
            nisa.dma_copy(
                dst=row, src=x.ap([[x.shape[1], 1], [1, x.shape[1]]], scalar_offset=i, indirect_dim=1), dge_mode=HW
            )
            nisa.dma_copy(
                dst=out.ap([[x.shape[1], 1], [1, x.shape[1]]], scalar_offset=i, indirect_dim=1),
                src=row,
                dge_mode=nisa.dge_mode.swdge,
            )

        nl.fori_loop(0, n, body, step=x.shape[1])
        other = nisa.register_alloc(9)
        nisa.register_move(other, n)  # a register's value, copied
        nisa.register_store(n_sb, other)
        nisa.register_move(other, 9)
        nisa.register_store(n_sb[0:1, 0:1], other)
        nisa.dma_copy(dst=count, src=n_sb)  # inputs are updated in place, as in the simulator
        nisa.dma_copy(dst=out, src=out)
        return out

    x = int_data((6, 3), 2)
    count = np.array([[4 * 3]], np.int32)  # four rows
    out, ran = run(kernel, x, count)
    np.testing.assert_array_equal(out[:4], x[:4])
    np.testing.assert_array_equal(out[4:], 0)
    assert count[0, 0] == 9 and ran.instructions("dma") == 3 + 2 * 4 + 1
    assert ran.events["dma", "dma_copy", 12, 12, "hwdge"] == ran.events["dma", "dma_copy", 12, 12, "swdge"] == 4
    with model.counting_only(), pytest.raises(ModelError, match="upper-bound register has no value"):
        run(kernel, model.shape_only((6, 3), np.float32), np.array([[4]], np.int32))


def blocked_copy(block, width):
    """Blocks [block, width] of x [R, C]: a dynamic loop over row blocks (register r: the element offset of the row
    block) whose body copies the row block's column blocks one after the other, unrolled by a Python loop (dynamic
    loops do not nest).

    The HBM read of block (r, c) starts at element r + c * width. The kernel keeps that element offset in a [1, 1]
    int32 SBUF tile instead, as the matmul kernels keep theirs: it starts at 0, each column block advances it by
    ``width`` and each row block by (block - 1) * C more, with int32 adds on GpSimd (exact, unlike the Vector
    Engine's fp32), and ``register_load`` puts it in a register before the read. The SBUF write is static and the
    HBM write of a whole row block uses r alone."""

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
            for c in range(cols // width):
                nisa.register_load(at, position)
                nisa.dma_copy(
                    dst=stage[:, c * width : (c + 1) * width],
                    src=x.ap([[cols, block], [1, width]], scalar_offset=at, indirect_dim=1),
                    dge_mode=HW,
                )
                nisa.tensor_tensor(dst=position, data1=position, data2=next_block, op=nl.add)
            nisa.tensor_tensor(dst=position, data1=position, data2=next_row, op=nl.add)
            nisa.dma_copy(
                dst=out.ap([[cols, block], [1, cols]], scalar_offset=r, indirect_dim=1), src=stage, dge_mode=HW
            )

        nl.fori_loop(0, rows * cols, row_block, step=block * cols)
        nisa.dma_copy(dst=out, src=out)
        return out

    return kernel


@given(
    row_blocks=st.integers(1, 4),
    col_blocks=st.integers(1, 4),
    block=st.sampled_from([1, 32, 128]),
    width=st.integers(1, 9),
    seed=st.integers(0, 2**16),
)
def test_a_dynamic_loop_over_row_blocks_with_a_counter_tile_and_unrolled_columns(
    row_blocks, col_blocks, block, width, seed
):
    x = int_data((row_blocks * block, col_blocks * width), seed)
    out, ran = run(blocked_copy(block, width), x)
    np.testing.assert_array_equal(out, x)
    assert ran.instructions() == 3 + row_blocks * (2 * col_blocks + 2) + 1
    assert ran.program_instructions == 3 + 2 * col_blocks + 2 + 1
    assert ran.instructions("gpsimd", "tensor_tensor") == row_blocks * (1 + col_blocks)


def test_a_fori_loop_inside_a_fori_loop_body_is_refused_loops_one_after_another_are_fine():
    """Nested dynamic loops with loop-carried values fail to compile (release notes, known issue) and no example
    nests them: refused; loops one after the other each count their body once."""

    def nested(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        nl.fori_loop(0, 2, lambda i: nl.fori_loop(0, 2, lambda j: None))
        return out

    with pytest.raises(
        ModelError,
        match=r"nl.fori_loop inside the body of another nl.fori_loop.*release notes.*"
        r"flatten the two into one fori_loop.*or unroll the inner loop",
    ):
        run(nested, np.ones((1, 1), np.float32))

    def sequential(x):
        out = nl.ndarray((1, 3), nl.float32, buffer=nl.shared_hbm)
        acc, one = nl.ndarray((1, 3), nl.float32, buffer=nl.sbuf), nl.ndarray((1, 3), nl.float32, buffer=nl.sbuf)
        nisa.memset(acc, 0.0)
        nisa.memset(one, 1.0)
        for trips in (2, 5):
            nl.fori_loop(0, trips, lambda _: nisa.tensor_tensor(dst=acc, data1=acc, data2=one, op=nl.add))
        nisa.dma_copy(dst=out, src=acc)
        return out

    out, ran = run(sequential, np.zeros(1, np.float32))
    np.testing.assert_array_equal(out, [[7.0] * 3])
    assert ran.instructions() == 2 + 7 + 1 and ran.program_instructions == 2 + 2 + 1
    assert ran.cores[0].control_flow == [("fori_loop", 0, 2, 1), ("fori_loop", 0, 5, 1)]


@given(iterations=st.integers(2, 5), tiles=st.integers(2, 6))
def test_tiles_of_a_body_live_for_the_whole_loop(iterations, tiles):
    """A body that uses its tiles one after the other still needs them all at once: the compiler allocates body
    tiles once and keeps them for the whole loop (nki-dynamic-loops.rst). Oracle: out[r, j-th 256] == j; tiles
    before and after the loop do not overlap it."""

    def kernel(x):
        width = tiles * 256
        out = nl.ndarray((iterations, width), nl.float32, buffer=nl.shared_hbm)
        before = nl.ndarray((1, 256), nl.float32, buffer=nl.sbuf)
        nisa.memset(before, 0.0)

        def body(i):
            for j in range(tiles):
                tile = nl.ndarray((1, 256), nl.float32, buffer=nl.sbuf)
                nisa.memset(tile, float(j))
                nisa.dma_copy(
                    dst=out.ap([[width, 1], [1, 256]], offset=j * 256, scalar_offset=i, indirect_dim=1),
                    src=tile,
                    dge_mode=HW,
                )

        nl.fori_loop(0, iterations * width, body, step=width)
        after = nl.ndarray((1, 256), nl.float32, buffer=nl.sbuf)
        nisa.memset(after, 0.0)
        nisa.dma_copy(dst=out, src=out)
        return out

    out, ran = run(kernel, np.zeros(1, np.float32))
    np.testing.assert_array_equal(out, np.repeat(np.arange(tiles, dtype=np.float32), 256)[None].repeat(iterations, 0))
    assert ran.sbuf_peak == tiles * 256 * 4


def test_body_tiles_that_fit_one_at_a_time_but_not_together_are_refused():
    """Two 120 KiB body tiles used one after the other: 120 KiB at a time within an iteration, but 240 KiB for
    the whole loop, over trn2's 212728 usable bytes."""

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)

        def body(i):
            for j in range(2):
                tile = nl.ndarray((1, 120 * 256), nl.float32, buffer=nl.sbuf, name=f"body tile {j}")
                nisa.memset(tile, 0.0)

        nl.fori_loop(0, 2, body)
        return out

    with pytest.raises(ModelError, match=r"SBUF budget exceeded: 245760 bytes per partition are live .*body tile"):
        run(kernel, np.ones((1, 1), np.float32))


def test_a_body_tile_carries_no_value_into_the_next_iteration():
    """A body tile [1, 8] whose iteration i writes columns i..i+3 and reads columns 0..3: iteration 0 reads what
    it wrote, iteration 1 (i = 4) what iteration 0 left, which the model refuses (a body tile starts each
    iteration unwritten)."""

    def kernel(x):
        out = nl.ndarray((2, 4), nl.float32, buffer=nl.shared_hbm)

        def body(i):
            carried = nl.ndarray((1, 8), nl.float32, buffer=nl.sbuf)
            nisa.memset(carried.ap([[8, 1], [1, 4]], scalar_offset=i, indirect_dim=1), 1.0)
            nisa.dma_copy(
                dst=out.ap([[4, 1], [1, 4]], scalar_offset=i, indirect_dim=1), src=carried[:, 0:4], dge_mode=HW
            )

        nl.fori_loop(0, 8, body, step=4)
        nisa.dma_copy(dst=out, src=out)
        return out

    k = model.jit(kernel)
    with pytest.raises(ModelError, match="never written"):
        k(np.zeros(1, np.float32))
    assert k.last_run.instructions("dma") == 1  # iteration 0 ran; iteration 1 failed at its read


def test_a_body_tile_used_after_the_loop_is_refused():
    """Tensors declared in a dynamic loop's body cannot be used after the loop (0.5 -> 0.6 migration guide); a
    tile allocated before the loop can."""

    def kernel(x, allocate_in_body):
        out = nl.ndarray((1, 4), nl.float32, buffer=nl.shared_hbm)
        tiles = [] if allocate_in_body else [nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)]

        def body(i):
            if not tiles:
                tiles.append(nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf, name="body tile"))
            nisa.memset(tiles[0], 2.0)

        nl.fori_loop(0, 3, body)
        nisa.dma_copy(dst=out, src=tiles[0])
        return out

    with pytest.raises(
        ModelError,
        match=r"'body tile' \(1, 4\) was allocated in the body of an nl.fori_loop and is "
        r"used after the loop ended.*migration.*allocate it before the loop",
    ):
        run(kernel, np.zeros(1, np.float32), True)
    out, _ = run(kernel, np.zeros(1, np.float32), False)
    np.testing.assert_array_equal(out, [[2.0] * 4])


@pytest.mark.parametrize(
    "write",
    [
        lambda i, t, kept: nisa.register_move(i, 0),
        lambda i, t, kept: nisa.register_load(i, t),
        lambda i, t, kept: nisa.register_store(i, t),
        lambda i, t, kept: kept.append(i),  # written after the loop ended (below)
    ],
    ids=["move", "load", "store", "move-after-the-loop"],
)
def test_the_induction_register_is_read_only(write):
    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        t = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        nisa.memset(t, 0)
        kept = []
        nl.fori_loop(0, 2, lambda i: write(i, t, kept))
        if kept:
            nisa.register_move(kept[0], 1)
        return out

    with pytest.raises(
        ModelError,
        match=r"dst is an nl.fori_loop's induction register, which is read-only.*"
        r"nisa.register_alloc\(\)",
    ):
        run(kernel, np.ones((1, 1), np.float32))


def test_reading_the_induction_register_is_fine():
    def kernel(x):
        out = nl.ndarray((1, 1), nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
        own = nisa.register_alloc(0)

        def body(i):
            nisa.register_move(own, i)
            nisa.register_store(t, own)

        nl.fori_loop(0, 3, body)
        nisa.dma_copy(dst=out, src=t)
        return out

    out, _ = run(kernel, np.zeros(1, np.float32))
    assert out[0, 0] == 2


# --- refusals ------------------------------------------------------------------------------------------------
def loop_with(body_use):
    """A kernel whose loop body does ``body_use(i, x)`` with the induction register i."""

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        nl.fori_loop(0, 2, lambda i: body_use(i, x))
        return out

    return kernel


@pytest.mark.parametrize(
    "use",
    [
        lambda i, x: i + 1,
        lambda i, x: 128 * i,
        lambda i, x: -i,
        lambda i, x: i // 2,
        lambda i, x: i == 0,
        lambda i, x: i < 3,
        lambda i, x: int(i),
        lambda i, x: range(i),
        lambda i, x: [0, 1][i],
        lambda i, x: x[i : i + 1],
        lambda i, x: nl.ds(i, 1),
        lambda i, x: 1 if i else 0,
    ],
    ids=["add", "rmul", "neg", "floordiv", "eq", "lt", "int", "range", "list-index", "slice", "ds", "if"],
)
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
        nl.fori_loop(
            0,
            (x.shape[0] + overrun) * 4,
            lambda i: nisa.dma_copy(
                dst=tile, src=x.ap([[4, 32], [1, 4]], scalar_offset=i, indirect_dim=1), dge_mode=HW
            ),
            step=32 * 4,
        )
        return out

    k = model.jit(kernel)
    with pytest.raises(ModelError, match=r"scalar_offset=256\).*elements 256\.\.383 .* out of bounds"):
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
        reg = nisa.register_alloc(5)  # a dynamic offset counts elements (the last dimension's stride)
        view = t.ap([[5, 2], [1, 5]], scalar_offset=reg, indirect_dim=1)
        np.testing.assert_array_equal(view.data, x[1:3])
        nisa.register_move(reg, 20)  # read when used, as the hardware reads the register
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


@pytest.mark.parametrize(
    "pattern",
    [((2, 2), (1, 2)), [(2, 2), (1, 2)], ([2, 2], [1, 2]), [[2, 2], (1, 2)]],
    ids=["tuple-of-tuples", "list-of-tuples", "tuple-of-lists", "one-tuple"],
)
def test_an_access_pattern_is_a_list_of_lists(pattern):
    def kernel(x, as_documented):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap([[2, 2], [1, 2]] if as_documented else pattern))
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    with pytest.raises(
        ModelError,
        match=r"pattern must be a non-empty list of lists \[\[stride, count\], \.\.\.\] "
        r"\(NkiTensor.ap's pattern: list\[list\[int\]\].*not tuples",
    ):
        run(kernel, x, False)
    np.testing.assert_array_equal(run(kernel, x, True)[0], x)


@pytest.mark.parametrize(
    "base",
    [
        lambda x: x[1:3],
        lambda x: x.reshape((8, 2)),
        lambda x: x.view(nl.int32),
        lambda x: x,
    ],
    ids=["slice", "reshape", "view", "indirect-dim-0"],
)
def test_a_dynamic_offset_is_taken_on_the_unreshaped_tensor_along_its_last_dimension(base):
    """The stub and nki-aps.rst disagree on what indirect_dim refers to for a reshaped view: a dynamic .ap is
    refused on a slice, reshape or .view of the tensor, and along any dimension but the last."""

    def kernel(x, documented):
        out = nl.ndarray((2, 4), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((2, 4), nl.float32, buffer=nl.sbuf)

        def body(i):
            if documented:
                src = x.ap([[4, 2], [1, 4]], scalar_offset=i, indirect_dim=1)
            else:
                src = base(x).ap([[4, 2], [1, 4]], scalar_offset=i, indirect_dim=0)
            nisa.dma_copy(dst=t, src=src, dge_mode=HW)

        nl.fori_loop(4, 5, body)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    with pytest.raises(
        ModelError,
        match=r"a dynamic offset \(scalar_offset\) (on a view|along indirect_dim=0 of a "
        r"2-D tensor).*disagree on what indirect_dim refers to.*exactly as allocated.*"
        r"indirect_dim=1",
    ):
        run(kernel, x, False)
    np.testing.assert_array_equal(run(kernel, x, True)[0], x[1:3])


@pytest.mark.parametrize(
    "mode", [None, nisa.dge_mode.unknown, nisa.dge_mode.none, nisa.dge_mode.hwdge, nisa.dge_mode.swdge]
)
def test_a_dynamic_dma_names_its_descriptor_generation(mode):
    """A dynamic address needs dge_mode hwdge or swdge, passed explicitly (nki-dge.rst); the dma event records it
    (static DMAs: False)."""

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(
            dst=t, src=x.ap([[4, 1], [1, 4]], scalar_offset=nisa.register_alloc(4), indirect_dim=1), dge_mode=mode
        )
        nisa.dma_copy(dst=out, src=x)
        return out

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    if mode not in (nisa.dge_mode.hwdge, nisa.dge_mode.swdge):
        with pytest.raises(
            ModelError,
            match=rf"src 'input 0' has a dynamic offset \(scalar_offset\), and dge_mode="
            rf"{mode or 'unknown'}.*nki-dge.rst.*pass dge_mode=nisa.dge_mode.hwdge",
        ):
            run(kernel, x)
        return
    _, ran = run(kernel, x)
    assert ran.events == {("dma", "dma_copy", 16, 16, mode): 1, ("dma", "dma_copy", 32, 32, False): 1}


def dynamic_store(fence):
    """out [2, 4] written row by row with dynamic offsets; ``fence``: what the kernel fences afterwards (a
    function of out, None for nothing), and whether before the loop ("early")."""

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        if fence == "early":
            nisa.dma_copy(dst=out, src=out)
        nl.fori_loop(
            0,
            8,
            lambda i: nisa.dma_copy(
                dst=out.ap([[4, 1], [1, 4]], scalar_offset=i, indirect_dim=1), src=t[0:1, :], dge_mode=HW
            ),
            step=4,
        )
        if fence not in (None, "early"):
            view = fence(out)
            nisa.dma_copy(dst=view, src=view)
        return out

    return kernel


@pytest.mark.parametrize("fence", [None, "early"], ids=["no-fence", "fence-before-the-writes"])
def test_an_output_written_with_dynamic_offsets_must_be_fenced(fence):
    with pytest.raises(
        ModelError,
        match=r"kernel output 'shared_hbm tensor': program 0 writes it with a dynamic-"
        r"offset nisa.dma_copy \(the last at instruction \d+, dma dma_copy\) and "
        r"does not fence it afterwards.*nisa.dma_copy\(dst=view, src=view\).*"
        r"dynamic_elementwise_add.py",
    ):
        run(dynamic_store(fence), np.ones((2, 4), np.float32))


@pytest.mark.parametrize(
    "fence",
    [lambda out: out, lambda out: out[1:2, :], lambda out: out.reshape((8,))],
    ids=["whole", "one-row", "reshaped"],
)
def test_a_fence_of_the_output_or_of_part_of_it_after_the_writes_is_fine(fence):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    out, ran = run(dynamic_store(fence), x)
    np.testing.assert_array_equal(out, [x[0], x[0]])
    assert ran.instructions("dma") == 1 + 2 + 1  # the fence is a dma_copy (moving nothing in the model)


def test_a_fence_reads_no_data_and_marks_nothing_written():
    """The fence over the whole output reads elements not written yet without tripping the strict check, and does
    not count as writing them: the half no instruction wrote is still reported."""

    def kernel(x):
        out = nl.ndarray((2, 4), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(
            dst=out.ap([[4, 1], [1, 4]], scalar_offset=nisa.register_alloc(4), indirect_dim=1), src=t, dge_mode=HW
        )
        nisa.dma_copy(dst=out, src=out)
        return out

    with pytest.raises(ModelError, match=r"\(2, 4\): 4 elements were never written"):
        run(kernel, np.ones((1, 4), np.float32))
