"""The NKI matmul and bmm kernels on the CPU model of the NeuronCore: within their modes' bounds against float64
on a sampled grid of edge sizes, in agreement with the torch reference modes, bit-for-bit on exact integer data,
each operand tile loaded once per unit, programs that do not grow with M, N or the batch, and (modelled) near the
Tensor Engine's peak."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from trn_backend import _precision, config, kernels
from trn_backend.kernels import nki, reference
from trn_backend.kernels.nki import cost, matmul, model, toolchain

# every size in every position: 1, 2, the 128 and 512 tile edges on both sides, and larger
TRIPLES = [
    (1, 1, 1),
    (2, 127, 513),
    (127, 2, 512),
    (128, 129, 1),
    (129, 128, 2),
    (511, 512, 129),
    (512, 513, 127),
    (513, 1000, 128),
    (1000, 2048, 2),
    (2048, 511, 1000),
    (2, 2048, 2048),
    (1, 1000, 511),
    (2048, 1, 513),
    (1000, 129, 2048),
]
BATCHED = [(3, 129, 513, 127), (2, 1, 1000, 513), (4, 128, 128, 128)]
TRN2_SBUF = 224 * 1024 - 16384 - 8 - 256  # usable SBUF bytes per partition (nki-library's budget)


@pytest.fixture(params=toolchain.available())
def chain(request, monkeypatch):
    """Each toolchain present: the CPU model always; the real NKI simulator (as trn2) where installed."""
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    return request.param


def componentwise_error(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    """max |C - AB| / (|A||B|) in float64; entries with |A||B| = 0 must be exact."""
    a64, b64 = a.double(), b.double()
    err = (c.double() - a64 @ b64).abs()
    scale = a64.abs() @ b64.abs()
    assert bool((err[scale == 0] == 0).all())
    return float((err[scale > 0] / scale[scale > 0]).max()) if bool((scale > 0).any()) else 0.0


def operands(shape_a, shape_b, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape_a, generator=g), torch.randn(shape_b, generator=g)


def small_integers(shape_a, shape_b, seed):
    """A, B of small integers (exact in bf16; every product and partial sum of K <= 2**18 terms below 2**24, exact
    in fp32) as float32, and their exact product from int64 matmul: the oracle of the bit-exact tests."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-8, 9, shape_a, generator=g).float()
    b = torch.randint(-8, 9, shape_b, generator=g).float()
    return a, b, torch.matmul(a.long(), b.long()).float()


def at_each_lnc(check) -> None:
    """``check()`` on a runtime at LNC=1, then at LNC=2 (one physical core, then two); the environment is restored
    however ``check`` ends."""
    with pytest.MonkeyPatch.context() as patch:
        for lnc in ("1", "2"):
            patch.setenv(nki.LNC_VARIABLE, lnc)
            check()


def layout(a: torch.Tensor, transposed: bool) -> torch.Tensor:
    """A as the planner may hand it over: contiguous, or a transposed view of a contiguous A^T (the kernel then
    skips the on-chip transpose)."""
    return a.mT.contiguous().mT if transposed else a


@pytest.mark.heavy
@pytest.mark.parametrize("mode", ["fast", "native"])
@pytest.mark.parametrize("i", range(len(TRIPLES)))
def test_matmul_within_bound_and_agrees_with_the_reference_mode(mode, i, chain):
    m, k, n = TRIPLES[i]
    a, b = operands((m, k), (k, n), i)
    c = nki.run("matmul", layout(a, i % 2 == 0), b, mode, chain)
    assert c.dtype == torch.float32 and c.shape == (m, n)
    bound = xp.error_bound(mode, xp.float32, k)
    assert componentwise_error(c, a, b) <= bound
    ref = reference.MODES[mode](a, b)
    scale = a.double().abs() @ b.double().abs()
    assert float(((c.double() - ref.double()).abs() - 2 * bound * scale).max()) <= 0  # both within the bound


@pytest.mark.parametrize("mode", ["fast", "native"])
@pytest.mark.parametrize("shape", BATCHED)
def test_bmm_within_bound(mode, shape, chain):
    batch, m, k, n = shape
    a, b = operands((batch, m, k), (batch, k, n), sum(shape))
    c = nki.run("bmm", layout(a, m % 2 == 1), b, mode, chain)
    assert c.shape == (batch, m, n)
    assert componentwise_error(c, a, b) <= xp.error_bound(mode, xp.float32, k)


@pytest.mark.parametrize("mode", ["fast", "native"])
@pytest.mark.parametrize(
    "kernel, shape_a, shape_b",
    [("matmul", (513, 2048), (2048, 129)), ("matmul", (1, 1), (1, 1)), ("bmm", (2, 130, 700), (2, 700, 514))],
)
def test_bit_for_bit_on_exact_integer_data(mode, kernel, shape_a, shape_b, chain):
    """Small integers: bf16 holds them, products and every partial sum (below 2**24) are exact in any order."""
    a, b, exact = small_integers(shape_a, shape_b, 7)
    assert torch.equal(nki.run(kernel, a, b, mode, chain), exact)
    assert torch.equal(nki.run(kernel, layout(a, True), b, mode, chain), exact)


def test_fast_rounds_fp32_inputs_on_chip_exactly_like_bf16_inputs(chain):
    a, b = operands((300, 700), (700, 200), 3)
    on_chip = nki.run("matmul", a, b, "fast", chain)
    host = nki.run("matmul", a.to(torch.bfloat16), b.to(torch.bfloat16), "fast", chain)
    assert torch.equal(on_chip, host)


@pytest.mark.heavy
def test_cross_block_sums_are_fp32(monkeypatch):
    """K spread over several K blocks (native: 16 K tiles per block here): block partials add in fp32 SBUF, on the
    Vector Engine, once per output tile and later K block."""
    monkeypatch.setenv(nki.LNC_VARIABLE, "1")
    a, b = operands((512, 4000), (4000, 1024), 11)
    blocks = matmul._k_blocks(4000, matmul.k_tiles(512, 4000, 1024, 1, 4, 1, False, TRN2_SBUF, 1), 1)
    assert len(blocks) >= 2
    c = nki.run("matmul", a, b, "native", "model")
    assert componentwise_error(c, a, b) <= xp.error_bound("native", xp.float32, 4000)
    run = nki.jitted("matmul", "model").last_run
    assert run.instructions("vector", "tensor_tensor") == 4 * 2 * (len(blocks) - 1)  # output tiles x later blocks


@pytest.mark.heavy
@pytest.mark.parametrize("transposed", [True, False])
def test_each_operand_tile_is_loaded_once_per_unit(transposed, monkeypatch):
    """Units of 500 x 750 (M = 1000 and N = 1500 cut evenly): each loads its rows of A and columns of B once, over
    its two K blocks, and stores its result once; one table row per unit and one fenced output tile; the last
    unit, having no next unit to fetch ahead for, fetches its own first K block again.
    Oracle: the sizes, counted by hand."""
    monkeypatch.setenv(nki.LNC_VARIABLE, "1")
    m, k, n = 1000, 700, 1500
    a, b = operands((m, k), (k, n), 5)
    a, b = a.to(torch.bfloat16), b.to(torch.bfloat16)
    nki.run("matmul", layout(a, transposed), b, "fast", "model")
    run = nki.jitted("matmul", "model").last_run
    units, tiles_per_unit, k_tiles = 4, 4 * 2, 6  # M tiles 128, 128, 128, 116; N tiles 512, 238
    assert run.instructions("tensor", "nc_matmul") == units * tiles_per_unit * k_tiles
    moved = sum(n_ * key[2] for key, n_ in run.events.items() if key[0] == "dma")
    fence = 128 * 750 * 4  # one DMA of the first output tile of the last unit onto itself
    again = 500 * 384 * 2 + 384 * 750 * 2  # the last unit fetches its own first K block (3 K tiles) again
    assert moved == units * (500 * k * 2 + k * 750 * 2 + 500 * 750 * 4 + matmul.ROW * 4) + fence + again
    # the transposes: A's 4 M tiles by its K tiles in each unit, and the repeated first block (3 K tiles) again
    assert run.instructions("tensor", "nc_transpose") == (0 if transposed else units * 4 * k_tiles + 4 * 3)
    assert run.instructions("gpsimd", "tensor_copy") == 0  # bf16 inputs need no rounding on chip
    assert run.banks_peak <= 8 and run.sbuf_peak <= TRN2_SBUF


@pytest.mark.heavy
def test_smaller_sbuf_of_trn1_is_respected():
    a, b = operands((700, 3000), (3000, 600), 13)
    with model.targeting("trn1"):
        c = nki.run("matmul", a, b, "native", "model")
    assert componentwise_error(c, a, b) <= xp.error_bound("native", xp.float32, 3000)
    assert nki.jitted("matmul", "model").last_run.sbuf_peak <= 192 * 1024 - 16384 - 8 - 256


def test_empty_operands_and_dtype_errors():
    assert nki.run("matmul", torch.ones(3, 0), torch.ones(0, 4), "native").equal(torch.zeros(3, 4))
    assert nki.run("bmm", torch.ones(2, 0, 3), torch.ones(2, 3, 4), "fast").shape == (2, 0, 4)
    with pytest.raises(
        TypeError,
        match=r"nki.matmul\[native\] takes torch.float32 operands, got A in "
        "torch.float64",
    ):
        nki.run("matmul", torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2), "native")
    with pytest.raises(
        ValueError,
        match=r"nki.bmm\[fast\] needs \[B, M, K\] x \[B, K, N\], got \(2, 3, 4\) x "
        r"\(3, 4, 5\)",
    ):
        nki.run("bmm", torch.ones(2, 3, 4), torch.ones(3, 4, 5), "fast")
    with pytest.raises(ValueError, match="no NKI kernel for mode 'fp64'"):
        nki.run("matmul", torch.ones(2, 2), torch.ones(2, 2), "fp64")


@pytest.mark.parametrize("transposed", [True, False])
@pytest.mark.parametrize("mode", ["fast", "native", "dd"])
def test_operand_loads_stream_runs_of_at_least_1_kib(mode, transposed):
    """DMA efficiency falls with the contiguous run per partition (SDK nki-dma-bandwidth-guide: below 2 KiB under
    peak; the cost model halves the rate at 256 bytes): every transfer of a large call moves runs of 1 KiB or
    more, whichever way A is laid out (A's rows are loaded a whole K block at a time before the on-chip transposes,
    not 128 x 128, which would be 256-byte runs of bf16). The exceptions: each loop iteration's table row (int32
    [1, ROW]), and the words of A that dd's split stores transposed when A is not given transposed (runs of 128
    bf16: 256 bytes), each piece's words once (and the spare slots', into the scratch's spare entry)."""
    size = 2048
    run = cost._counted("matmul", mode, (1, size, size, size), "trn2", transposed, False, None, 2)
    moved: dict[int, int] = {}
    for core in run.cores:
        for (engine, _, *details), n in core.events.items():
            if engine == "dma":
                nbytes, contiguous = details[:2]
                moved[contiguous] = moved.get(contiguous, 0) + n * nbytes
    table = moved.pop(matmul.ROW * 4)
    assert table % (matmul.ROW * 4) == 0 and table // (matmul.ROW * 4) <= 2 * (size // 128) ** 2
    short = {contiguous: nbytes for contiguous, nbytes in moved.items() if contiguous < 1024}
    if mode == "dd" and not transposed:  # A's two bf16 words, each piece of A once (and the spare slots' pieces)
        _, _, (rows, columns), before, during = matmul._split_plan(1, size, size, size, False, 2)[0]
        pieces = sum(len(before[p]) + len(sum(during[p], ())) for p in range(2))
        assert short == {256: pieces * rows * columns * 2 * 2}, moved
    else:
        assert not short, moved


@pytest.mark.heavy
@pytest.mark.parametrize("transposed", [True, False])
@pytest.mark.parametrize("mode", ["fast", "native"])
def test_modelled_utilization_at_4096_on_trn2(mode, transposed):
    """Tensor-Engine-bound near its achieved rate; where A is transposed on chip the transposes take Tensor Engine
    time (and wait for the Vector Engine's copies out of PSUM), about a fifth of fast's products."""
    e = cost.modelled("matmul", mode, (1, 4096, 4096, 4096), "trn2", transposed)
    share = 0.85 if transposed else 0.7
    assert e.bound_by == "tensor" and e.utilization >= share * cost.calibration().tensor_efficiency
    assert e.psum_banks_peak <= 8 and e.sbuf_peak_bytes <= TRN2_SBUF


def test_counting_only_skips_arithmetic_but_not_the_rules():
    fn = nki.jitted("matmul", "model")
    lnc = model.runtime_lnc()
    table = nki.table("matmul", (300, 256), (300, 513), True, lnc).numpy()
    with model.counting_only():
        out = fn[lnc](
            model.shape_only((300, 256), np.float32), model.shape_only((300, 513), np.float32), True, False, table
        )
    assert out.shape == (256, 513)
    assert fn.last_run.instructions("tensor", "nc_matmul") == 3 * 2 * 2


KERNELS = {"fast": "matmul", "native": "matmul", "dd": "matmul_split", "bf16x6": "matmul_split"}


@settings(max_examples=12)
@given(
    mode=st.sampled_from(tuple(KERNELS)),
    batch=st.integers(1, 3),
    m=st.integers(1, 140),
    k=st.integers(1, 300),
    n=st.integers(1, 140),
    seed=st.integers(0, 2**16),
)
def test_lnc_1_and_2_give_the_same_exact_products(mode, batch, m, k, n, seed):
    """Small integers (exact in bf16, every partial sum below 2**24): each program's blocks, at LNC=1 or 2, are
    the exact product; oracle: integer matmul in int64."""
    a, b, exact = small_integers((batch, m, k), (batch, k, n), seed)

    def check():
        assert torch.equal(nki.run("bmm", a, b, mode, "model"), exact)

    at_each_lnc(check)


@pytest.mark.parametrize("mode", ["fast", "native", "dd", "bf16x6", "sr"])
def test_lnc_2_splits_the_blocks_over_both_cores(mode, monkeypatch):
    """Two output blocks (M = 600 > 512 rows): at LNC=2 each physical core runs Tensor Engine work and the
    results equal LNC=1's bit for bit (sr: the same seed gives each program other states, so only the bound)."""
    a, b = operands((600, 200), (200, 300), 2)
    kernel = "matmul_sr" if mode == "sr" else KERNELS[mode]
    results = {}
    for lnc in ("1", "2"):
        monkeypatch.setenv(nki.LNC_VARIABLE, lnc)
        results[lnc] = nki.run("matmul", a, b, mode, "model", seed=3)
    launch = nki.jitted(kernel, "model").last_run
    assert launch.lnc == 2 and all(c.instructions("tensor", "nc_matmul") > 0 for c in launch.cores)
    if mode != "sr":
        assert torch.equal(results["1"], results["2"])
        assert componentwise_error(results["2"], a, b) <= xp.error_bound(mode, xp.float32, 200)


def test_lnc_2_deals_batch_entries_to_both_cores(monkeypatch):
    monkeypatch.setenv(nki.LNC_VARIABLE, "2")
    a, b = operands((2, 100, 64), (2, 64, 80), 4)
    c = nki.run("bmm", a, b, "native", "model")
    launch = nki.jitted("bmm", "model").last_run
    assert [core.instructions("tensor", "nc_matmul") for core in launch.cores] == [1, 1]
    assert componentwise_error(c, a, b) <= xp.error_bound("native", xp.float32, 64)


def test_a_plain_launch_on_an_lnc_2_runtime_is_refused(monkeypatch):
    monkeypatch.delenv(nki.LNC_VARIABLE, raising=False)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    assert nki.lnc("model") == 2
    with pytest.raises(model.ModelError, match=r"matmul launched with LNC=1 on a runtime of LNC=2.*matmul\[2\]"):
        nki.jitted("matmul", "model")(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), False, True)


@pytest.mark.parametrize("generation", ["trn2", "trn1"])
def test_sr_seeds_the_generator_it_draws_from(generation):
    """matmul_sr draws on GpSimd, whose generator rand_set_state sets from the host's states (trn1: on the Vector
    Engine, seeded by set_rng_seed): different seeds give different roundings, the same seed the same."""
    a, b = operands((64, 32), (32, 96), 9)
    with model.targeting(generation):
        first = nki.run("matmul", a, b, "sr", "model", seed=1)
        assert torch.equal(first, nki.run("matmul", a, b, "sr", "model", seed=1))
        assert not torch.equal(first, nki.run("matmul", a, b, "sr", "model", seed=2))
    engine = "gpsimd" if generation == "trn2" else "vector"
    assert nki.jitted("matmul_sr", "model").last_run.instructions(engine, "rng") > 0
    states = nki.rng_states(1, 2)
    assert states.shape == (2, 128, 6) and states.dtype == torch.int32  # torch's uint32 has limited support
    assert bool((states[..., :5].long() != 0).any(-1).all())  # no degenerate XORWOW state


# --- program size: one dynamic loop over units (or rows of units), static code inside ----------------------------
# (mode, float64): float64 data runs dd and bf16x6 as the words kernels (split on the host), ozaki as the levels
PROGRAM_MODES = [
    ("fast", False),
    ("native", False),
    ("dd", False),
    ("bf16x6", False),
    ("dd", True),
    ("bf16x6", True),
    ("ozaki", False),
    ("sr", False),
]
SPLIT = {("dd", False), ("bf16x6", False)}  # a loop over rows of units: the units of a row are static code


def program(kernel: str, mode: str, float64: bool, bmkn: tuple[int, int, int, int], transposed: bool) -> int:
    """The program one physical core runs, counted by the CPU model (trn2: LNC=2)."""
    return cost.modelled(kernel, mode, bmkn, "trn2", transposed, float64).program_instructions


@pytest.mark.heavy
@settings(max_examples=12)
@given(mode=st.sampled_from(PROGRAM_MODES), rows=st.integers(2, 6), columns=st.integers(1, 3), transposed=st.booleans())
def test_the_program_does_not_grow_with_m_or_n(mode, rows, columns, transposed):
    """Units of 512 x 1024 (M and N multiples of them) are iterations of one dynamic loop: the program does not
    grow with their number. The split kernels' loop runs rows of units, whose units are static code, and at LNC=2
    the rows are shared between two cores, so their program depends on the parity of the row count: from four
    rows on it is the program at four or five rows (the same number of unit columns); fewer rows never make a
    larger one. The other modes' program is one for any M and N."""
    base = columns if mode in SPLIT else 1
    got = program("matmul", *mode, (1, rows * 512, 300, columns * 1024), transposed)
    at = {r: program("matmul", *mode, (1, r * 512, 300, base * 1024), transposed) for r in (4, 5)}
    if mode not in SPLIT:
        assert got == at[4] == at[5]
    elif rows >= 4:
        assert got == at[4 + rows % 2]
    else:
        assert got <= max(at.values())


@settings(max_examples=10)
@given(
    mode=st.sampled_from([m for m in PROGRAM_MODES if m[0] != "sr"]),
    entries=st.integers(1, 5),
    transposed=st.booleans(),
)
def test_the_bmm_program_does_not_grow_with_the_batch(mode, entries, transposed):
    """Batch entries are more units (or rows of units) of the same loop: the program at any batch from B = 3 on is
    the one at B = 3; a smaller batch may make a smaller program (at LNC=2, one entry per core needs no loop),
    never a larger one."""
    got = program("bmm", *mode, (entries, 700, 300, 600), transposed)
    oracle = program("bmm", *mode, (3, 700, 300, 600), transposed)
    assert got == oracle if entries >= 3 else got <= oracle


# The largest program of one core (trn2, LNC=2): the loop bodies (a unit's K blocks, static: a few per unit, so it
# grows with K but not with M, N or the batch), the split kernels' split loops, and the static prologues. Measured
# (A transposed on chip; docs/trainium.md's program table): at 4096^3, 4096 x 8192 x 8192 and the batched case,
# fast 677 / 1,215 / 931, native 639 / 1,203 / 915, dd 1,250 / 2,042 / 1,663, bf16x6 2,556 / 4,506 / 3,634,
# float64 data dd 1,496 / 2,848 / 2,179 and bf16x6 2,881 / 5,689 / 4,364, ozaki 5,302 / 10,666 / 8,146, sr 703 /
# 1,299; before the dynamic loops, with every loop unrolled: 11,072 (fast), 24,514 (dd), 47,746 (bf16x6) and
# 90,880 (ozaki) at 4096^3.
PROGRAM_BOUNDS = {
    ("fast", False): 1500,
    ("native", False): 1500,
    ("dd", False): 7500,  # the split kernels: the
    # split before the products and up to three products loops (with both operands' splits, one's, none)
    ("bf16x6", False): 15500,
    ("dd", True): 3500,
    ("bf16x6", True): 7000,
    ("ozaki", False): 12500,
    ("sr", False): 1500,
}


BOUND_CASES = [
    (mode, kernel, bmkn)
    for mode in PROGRAM_BOUNDS
    for kernel, bmkn in (
        ("matmul", (1, 4096, 4096, 4096)),
        ("matmul", (1, 4096, 8192, 8192)),
        ("bmm", (3, 1100, 8320, 2600)),
    )
    if kernel == "matmul" or mode[0] != "sr"
]  # sr has no bmm kernel


@pytest.mark.slow
@pytest.mark.parametrize("mode, kernel, bmkn", BOUND_CASES)
def test_the_program_is_bounded(mode, kernel, bmkn):
    assert program(kernel, *mode, bmkn, False) <= PROGRAM_BOUNDS[mode]


def k_block_rows(mode: str) -> int:
    """Rows of K per K block of the mode's kernel on trn2 for a 512 x 1024 unit, A not transposed."""
    words = {"dd": 2, "bf16x6": 3}.get(mode, 1)
    width = 4 if mode == "native" else 2
    chunk = matmul.CHUNK_TILES if mode == "bf16x6" else 1
    fits = matmul.k_tiles(
        512, 2**20, 1024, words, width, 3 if mode == "bf16x6" else 1, mode in ("dd", "bf16x6"), TRN2_SBUF, 2, chunk
    )
    return fits * 128


@pytest.mark.slow
@settings(max_examples=6)
@given(
    mode=st.sampled_from(tuple(KERNELS)),
    k_blocks=st.integers(2, 3),
    edge=st.integers(0, 300),
    transposed=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_several_k_blocks_and_units_give_the_exact_product_at_lnc_1_and_2(mode, k_blocks, edge, transposed, seed):
    """K over several K blocks (the two operand sets alternating, a partial last block) and N over a whole unit and
    an overlapping last one: small integers give the exact product (every partial sum below 2**24). Oracle:
    integer matmul in int64."""
    m, k, n = 512, k_blocks * k_block_rows(mode) + edge, 1024 + 100
    a, b, exact = small_integers((m, k), (k, n), seed)

    def check():
        assert torch.equal(nki.run("matmul", layout(a, transposed), b, mode, "model"), exact)

    at_each_lnc(check)


@pytest.mark.heavy
@settings(max_examples=10)
@given(
    mode=st.sampled_from(tuple(KERNELS)),
    batch=st.integers(1, 3),
    rows=st.integers(1, 2),
    edge=st.integers(0, 130),
    k=st.integers(1, 150),
    n=st.integers(1, 1200),
    transposed=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_several_rows_of_blocks_give_the_exact_product_at_lnc_1_and_2(mode, batch, rows, edge, k, n, transposed, seed):
    """Rows of blocks in the dynamic loops, static partial rows (N beyond one block column splits rows between the
    cores), M edges and, batched, whole entries in the batch loop: small integers (exact in bf16, every partial
    sum below 2**24) give the exact product. Oracle: integer matmul in int64."""
    m = rows * 512 + edge
    a, b, exact = small_integers((batch, m, k), (batch, k, n), seed)

    def check():
        assert torch.equal(nki.run("bmm", layout(a, transposed), b, mode, "model"), exact)
        assert torch.equal(nki.run("matmul", layout(a[0], transposed), b[0], mode, "model"), exact[0])

    at_each_lnc(check)


@pytest.mark.heavy
@settings(max_examples=6)
@given(batch=st.integers(1, 3), edge=st.integers(1, 130), n=st.integers(1, 1200), seed=st.integers(0, 2**16))
def test_the_words_and_levels_kernels_over_several_rows_of_blocks(batch, edge, n, seed):
    """The words kernels (float64 data split on the host) and the levels kernels (ozaki's digit slices) over two
    rows of blocks and an edge, batched: exact on small integers. Oracles: int64 matmul; each level's sum of digit
    products i + j = level (0-based slices, levels 2..slices + 1) in int64."""
    m, k = 2 * 512 + edge, 140
    g = torch.Generator().manual_seed(seed)
    shape_a, shape_b = (batch, m, k), (batch, k, n)
    a = torch.randint(-8, 9, shape_a, generator=g).double()
    b = torch.randint(-8, 9, shape_b, generator=g).double()
    digits_a = [torch.randint(-8, 9, shape_a, generator=g).double() for _ in range(2)]
    digits_b = [torch.randint(-8, 9, shape_b, generator=g).double() for _ in range(2)]
    products = {(i, j): torch.matmul(digits_a[i].long(), digits_b[j].long()) for i in range(2) for j in range(2)}

    def check():
        assert torch.equal(nki.split_product(a, b, 2).long(), torch.matmul(a.long(), b.long()))
        sums = nki.level_sums(digits_a, digits_b)
        assert sums.keys() == {2, 3}
        assert torch.equal(sums[2].long(), products[0, 0])
        assert torch.equal(sums[3].long(), products[0, 1] + products[1, 0])

    at_each_lnc(check)


# --- what a trn2 would compile and run: symmetric programs, one loop level, budgets under the loop rule ------------
SHAPE_CLASSES = {
    "tiny": (1, 1, 1, 1),
    "edges": (1, 129, 513, 1000),
    "long K": (1, 512, 13000, 1024),
    "wide": (1, 1100, 384, 4100),
    "batched": (5, 300, 700, 200),
}
BUDGET_MODES = [
    ("fast", False),
    ("native", False),
    ("dd", False),
    ("bf16x6", False),
    ("dd", True),
    ("bf16x6", True),
    ("ozaki", False),
    ("sr", False),
]


@pytest.mark.heavy
@pytest.mark.parametrize("shape_class", sorted(SHAPE_CLASSES))
@pytest.mark.parametrize("mode", BUDGET_MODES, ids=[f"{m}{'-float64' if f else ''}" for m, f in BUDGET_MODES])
def test_sbuf_and_psum_budgets_hold_with_loop_tiles_live_for_the_whole_loop(mode, shape_class):
    """Every kernel, mode and shape class on trn2 (LNC=2; A as a view of A^T for the odd classes, as A for the
    others): the launch keeps every documented rule (the CPU model refuses it otherwise), its programs run the same
    control flow, and its SBUF and PSUM peaks, with tiles used in a loop live for the whole loop, fit trn2."""
    bmkn = SHAPE_CLASSES[shape_class]
    if mode[0] == "sr" and bmkn[0] > 1:
        pytest.skip("sr has no bmm kernel")
    kernel = "bmm" if bmkn[0] > 1 else "matmul"
    transposed = sorted(SHAPE_CLASSES).index(shape_class) % 2 == 1
    e = cost.modelled(kernel, mode[0], bmkn, "trn2", transposed, mode[1])
    assert e.sbuf_peak_bytes <= TRN2_SBUF and e.psum_banks_peak <= 8


def control_flow(kernel: str, mode: str, float64: bool, bmkn: tuple[int, int, int, int], transposed: bool):
    """Each physical core's dynamic control flow (loops with their ranges, barriers) of the trn2 launch."""
    run = cost._counted(kernel, mode, bmkn, "trn2", transposed, float64, None, 2)
    return [core.control_flow for core in run.cores]


@settings(max_examples=10)
@given(
    mode=st.sampled_from(BUDGET_MODES),
    batch=st.integers(1, 3),
    m=st.integers(1, 1600),
    k=st.integers(1, 900),
    n=st.integers(1, 2500),
    transposed=st.booleans(),
)
def test_both_programs_run_one_level_of_loops_with_the_same_trip_counts(mode, batch, m, k, n, transposed):
    """At LNC=2 both programs run the same loops with the same ranges (units are dealt in equal shares; a short
    share repeats a unit), none nested: the products' loop, and for the split kernels before it a loop splitting
    A's pieces, one splitting B's and a barrier for each scratch tensor, then the units in up to three loops one
    after another (their first iterations split the other pieces, each ending with a barrier per scratch tensor it
    wrote). Oracle: the trip count from the shape, counted here: units of at most 512 x 1024, at least one per
    program where a unit can be cut (a piece keeps 128 rows or columns)."""
    batch = 1 if mode[0] == "sr" else batch  # sr: matmul only
    kernel = "matmul" if batch == 1 else "bmm"
    flows = control_flow(kernel, *mode, (batch, m, k, n), transposed)
    assert flows[0] == flows[1]
    loops = [step for step in flows[0] if step[0] == "fori_loop"]
    split = mode in SPLIT  # a loop splitting A's pieces and one splitting B's, then a barrier per scratch tensor
    products = loops[2:] if split else loops
    assert 1 <= len(products) <= (3 if split else 1)
    barriers = 0
    if split:  # and one per scratch tensor after each products-loop iteration that splits its pieces
        barriers = 2 + sum(end - start for _, (start, end), *_ in matmul._split_plan(batch, m, k, n, transposed, 2))
    blocks_m, blocks_n = -(-m // 512), -(-n // 1024)
    while batch * blocks_m * blocks_n < 2 and (n // (blocks_n + 1) >= 128 or m // (blocks_m + 1) >= 128):
        if n // (blocks_n + 1) >= 128:
            blocks_n += 1
        else:
            blocks_m += 1
    units = batch * blocks_m * blocks_n
    assert [step[0] for step in flows[0]].count("core_barrier") == barriers
    for before, after in zip(products, products[1:], strict=False):  # one after another, in order
        assert before[2] == after[1]
    lower, upper, step = products[0][1], products[-1][2], products[0][3]
    assert lower == 0 and (upper - lower) // step == -(-units // 2)


def test_steps_too_large_for_32_bit_offsets_are_routed_to_the_reference():
    """ozaki's int32 level sums per K block grow with K (its K blocks are as many as SBUF holds): at 8192^3 with
    4 slices they pass 2**31 - 1 elements, so the routing rule sends the step to the torch reference rather than
    to a kernel that would refuse it. Oracle: the sizes by hand (slices x K blocks x M x N)."""
    from trn_backend import kernels

    assert nki.addressable("fast", False, (1, 8192, 8192, 8192))
    assert not nki.addressable("fast", False, (1, 2**16, 2**15 + 1, 8))  # A alone: 2**31 + 2**16 elements
    budget = TRN2_SBUF
    blocks = len(matmul._k_blocks(8192, matmul.level_k_tiles(8192, 8192, 8192, 4, budget, 2), 1))
    assert 4 * blocks * 8192 * 8192 > 2**31 - 1
    assert not nki.addressable("ozaki", False, (1, 8192, 8192, 8192), slices=4)
    with xp.config.set(nki="model", nki_min_flops=0):
        assert (
            kernels.implementation(
                "matmul", "ozaki", torch.float32, torch.device("cpu"), (1, 8192, 8192, 8192), {"slices": 4}
            )
            == "torch.matmul"
        )
        assert (
            kernels.implementation(
                "matmul", "ozaki", torch.float32, torch.device("cpu"), (1, 512, 512, 512), {"slices": 4}
            )
            == "nki.matmul[ozaki]"
        )


# --- the precision modes as fused kernels ---

KS = (1, 127, 128, 129, 1000, 4096)
SIZES = {1: (3, 5), 127: (129, 2), 128: (1, 513), 129: (64, 130), 1000: (127, 65), 4096: (33, 129)}
KINDS = ("normal", "uniform", "cancel")


def fused_operands(kind: str, m: int, k: int, n: int, seed: int, dtype=torch.float32, batch: int | None = None):
    g = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    if kind == "uniform":
        a, b = g.random((*lead, m, k)), g.random((*lead, k, n))
    else:
        a, b = g.standard_normal((*lead, m, k)), g.standard_normal((*lead, k, n))
        if kind == "cancel" and k >= 2:  # large equal-and-opposite terms: |C| far below |A||B|
            big = 1e4 * g.standard_normal((*lead, m))
            a[..., 0], a[..., 1] = big, -big
            b[..., 1, :] = b[..., 0, :]
    return torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)


def relative(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, reference_c: torch.Tensor | None = None) -> float:
    """max |C - X| / (|A||B|), X the product in long double (64-bit significands: K u of it stays far below the
    float64 bounds tested here), or ``reference_c``."""
    a_ld, b_ld = (x.double().numpy().astype(np.longdouble) for x in (a, b))
    target = a_ld @ b_ld if reference_c is None else reference_c.double().numpy().astype(np.longdouble)
    scale = np.abs(a_ld) @ np.abs(b_ld)
    error = np.abs(c.double().numpy().astype(np.longdouble) - target)
    mask = scale > 0
    return float(np.max(error[mask] / scale[mask])) if mask.any() else 0.0


def on_nki(a: torch.Tensor, b: torch.Tensor, mode: str) -> torch.Tensor:
    """The mode through the kernel layer's NKI route (on the CPU model), checking it took that route."""
    kernel = "bmm" if a.dim() == 3 else "matmul"
    with config.set(nki="model", nki_min_flops=0), kernels.count_calls() as calls:
        c = getattr(kernels, kernel)(a, b, mode)
    assert calls[f"nki.{kernel}", mode] == 1
    return c


@pytest.mark.heavy
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("mode", ["dd", "bf16x6", "ozaki"])
def test_within_bound_and_equal_to_the_reference_up_to_addition_order(mode, k, kind):
    m, n = SIZES[k]
    a, b = fused_operands(kind, m, k, n, k)
    c = on_nki(a, b, mode)
    bound = xp.error_bound(mode, xp.float32, k)
    assert relative(c, a, b) <= bound
    ref = reference.MODES[mode](a, b)
    if mode == "ozaki":  # exact level sums, combined on the host as the reference does: the same bits
        assert torch.equal(c, ref)
    else:
        # the same words (one integer split); each order's fp32 accumulation error is within the bound's
        # accumulation part (the bound less the split's representation error), plus an output rounding each
        words = nki.WORDS[mode]
        accumulation = bound - _precision.split_representation(words, torch.float32)
        assert relative(c, a, b, ref) <= 2 * accumulation


@pytest.mark.heavy
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["dd", "bf16x6", "ozaki", "fast"])
def test_batches_and_float64_data(mode, dtype):
    """Batched steps run the bmm kernels; float64 operands are scaled and split (or cut into digits) on the host
    from the float64 values, and the words multiplied on the chip."""
    a, b = fused_operands("cancel", 70, 300, 40, 3, dtype, batch=3)
    c = on_nki(a, b, mode)
    assert c.dtype == dtype
    assert relative(c, a, b) <= xp.error_bound(mode, dtype, 300)
    ref = reference.MODES[mode](a, b)
    if mode == "ozaki":
        assert torch.equal(c, ref)
    else:
        assert relative(c, a, b, ref) <= 2 * xp.error_bound(mode, dtype, 300)


@pytest.mark.heavy
def test_ozaki_with_more_slices_and_large_k():
    """slices=6 (a setting of the mode) and K beyond one K block: int32 level sums per K block, added exactly."""
    a, b = fused_operands("normal", 40, 5000, 30, 9, torch.float64)
    with config.set(nki="model", nki_min_flops=0), kernels.count_calls() as calls:
        c = kernels.matmul(a, b, "ozaki", slices=6)
    assert calls["nki.matmul", "ozaki"] == 1
    assert torch.equal(c, reference.ozaki(a, b, slices=6))
    assert relative(c, a, b) <= xp.error_bound("ozaki", xp.float64, 5000, slices=6)


@pytest.mark.heavy
@pytest.mark.parametrize("mode, words, products, k, twosums", [("dd", 2, 3, 700, 0), ("bf16x6", 3, 6, 2100, 2)])
def test_instruction_counts_show_the_fusion(mode, words, products, k, twosums):
    """dd issues 3 nc_matmul per (K tile, M tile, N tile), bf16x6 6; every element of A and B is split once per
    call (an exact integer add on GpSimd and a mask on the Vector Engine per word per split sub-tile), not once per
    product, block or reload: the split plan names every piece of A [300, K] and B [K, 600] exactly once (besides
    the spare slots, which split a piece again into the scratch's spare entry), and the GpSimd adds are the words
    of the sub-tiles of the pieces split. bf16x6 TwoSums once per group of 4 chunks of 256: K = 2100 is 9 chunks,
    3 groups, the first copied, then 2 TwoSums (3 GpSimd instructions each) per output tile (two units of 300 x 300:
    3 output tiles each)."""
    m, n = 300, 600
    a, b = fused_operands("normal", m, k, n, 1)
    nki.run("matmul", a, b, mode, "model")
    run = nki.jitted("matmul_split", "model").last_run
    k_tiles = -(-k // 128)
    assert run.instructions("tensor", "nc_matmul") == products * 3 * 2 * k_tiles
    programs = 2
    plans = matmul._split_plan(1, m, k, n, False, programs)
    split_subtiles = 0
    for operand, (rows, columns) in enumerate(((m, k), (k, n))):
        slots, _, (pr, pc), before, during = plans[operand]
        long_rows = operand == 1
        long = matmul.PIECE_LONG_B if operand else matmul.PIECE_LONG
        pieces = matmul._pieces(1, rows, columns, long_rows, long)[1]
        offsets = sorted(matmul._piece_offsets(operand, *piece, 1, m, k, n, False) for piece in pieces)
        spare = matmul._piece_offsets(operand, 1, 0, 0, 1, m, k, n, False)[1]
        split = [pair for p in range(programs) for pair in before[p] + sum(during[p], ())]
        assert sorted(pair for pair in split if pair[1] != spare) == offsets  # each piece once
        subtiles = len(matmul._starts(pr, min(pr, 128))) * len(matmul._starts(pc, min(pc, matmul.PIECE_SHORT)))
        split_subtiles += len(split) * subtiles
    integer_adds = sum(
        count for core in run.cores for key, count in core.events.items() if key[:2] == ("gpsimd", "tensor_tensor")
    )
    assert integer_adds == words * split_subtiles + 3 * twosums * 3 * 2
    assert run.banks_peak <= 8


@pytest.mark.heavy
def test_sr_rounds_to_a_neighbour_unbiased_and_reproducibly():
    """Each entry lands on one of the two bf16 values around the fp32 result, up with probability equal to the
    fraction: the mean over many seeds approaches the fp32 result, unlike round to nearest's fixed bias."""
    a = torch.ones(4, 2)
    b = torch.stack([torch.ones(16), torch.full((16,), 2.0**-10)])  # bf16 words; C = 1 + 2**-10 in fp32,
    lo, hi = 1.0, 1 + 2**-7  # between bf16 1 and 1 + 2**-7, 1/8 of the way up
    draws = torch.stack([nki.run("matmul", a, b, "sr", "model", seed=s).float() for s in range(200)])
    assert set(draws.unique().tolist()) == {lo, hi}
    assert abs(float(draws.mean()) - (1 + 2**-10)) < 4 * (2**-7) * (0.125 * 0.875 / draws.numel()) ** 0.5
    assert torch.tensor(1 + 2**-10).to(torch.bfloat16).item() == lo  # round to nearest: always down, biased
    assert torch.equal(nki.run("matmul", a, b, "sr", "model", seed=5), nki.run("matmul", a, b, "sr", "model", seed=5))


def ratios_at_4096(transposed: bool) -> dict[str, float]:
    shape = (1, 4096, 4096, 4096)
    fast = cost.modelled("matmul", "fast", shape, "trn2", transposed).seconds
    return {
        mode: cost.modelled("matmul", mode, shape, "trn2", transposed).seconds / fast
        for mode in ("native", "dd", "bf16x6")
    }


@pytest.mark.heavy
def test_native_costs_about_four_bf16_passes_at_4096():
    """fp32 operands take 4 bf16 passes on the Tensor Engine (A as the A^T view: no transposes on chip)."""
    ratio = ratios_at_4096(True)
    assert 3.7 <= ratio["native"] <= 4.01, ratio


@pytest.mark.heavy
def test_dd_within_its_target_at_4096():
    """The target: dd within 3.3x of fast at 4096^3 (its 3 bf16 passes, and room for the split and the unit
    boundaries): the split of the pieces the later units read runs during the products."""
    ratio = ratios_at_4096(True)
    assert ratio["dd"] <= 3.3, ratio


@pytest.mark.heavy
def test_bf16x6_within_its_target_at_4096():
    """The target: bf16x6 within 6.5x of fast at 4096^3 (its 6 bf16 passes, and room for the split and the
    TwoSums)."""
    ratio = ratios_at_4096(True)
    assert ratio["bf16x6"] <= 6.5, ratio
